// -- page text (what it holds and leaves out: docs/configuration.md)

function contentRoot() {
  // A bad contentSelector falls through to the defaults.
  for (const sel of ROOTS) {
    const el = sel && safely(() => document.querySelector(sel));
    if (el) return el;
  }
  return document.body;
}

// The page text: the content root's text nodes, concatenated, and where each one starts.
function measure() {
  const root = contentRoot();
  const nodes = [];
  const starts = [];
  const parts = [];
  let length = 0;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
    acceptNode: (n) =>
      n.nodeType === 1
        ? n.matches(SKIP)
          ? NodeFilter.FILTER_REJECT
          : NodeFilter.FILTER_SKIP
        : n.data.length
          ? NodeFilter.FILTER_ACCEPT
          : NodeFilter.FILTER_SKIP
  });
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    nodes.push(n);
    starts.push(length);
    parts.push(n.data);
    length += n.data.length;
  }
  const index = new Map(nodes.map((n, i) => [n, i]));
  return { root, nodes, starts, index, text: parts.join("") };
}

// Measured when first needed after a change: the MutationObserver that startPage() sets on the
// content root forgets it whenever the content's text changes (scripts that render code
// annotations, tabs, diagrams; issue #13).
function textMap() {
  const m = S.map;
  if (m?.root.isConnected && m.root === contentRoot() && (!m.nodes.length || m.nodes[0].isConnected)) return m;
  S.map = measure();
  return S.map;
}

function offsetOf(map, node, offset) {
  if (node.nodeType === 3 && map.index.has(node)) {
    return map.starts[map.index.get(node)] + Math.min(offset, node.data.length);
  }
  // An element or a skipped node: count the mapped text before the point.
  const point = document.createRange();
  point.setStart(node, offset);
  let lo = 0;
  let hi = map.nodes.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (point.comparePoint(map.nodes[mid], 0) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo < map.nodes.length ? map.starts[lo] : map.text.length;
}

function boundary(map, pos, isEnd) {
  let lo = 0;
  let hi = map.nodes.length - 1;
  let at = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (isEnd ? map.starts[mid] < pos : map.starts[mid] <= pos) {
      at = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  if (at < 0) return null;
  const node = map.nodes[at];
  return [node, Math.min(pos - map.starts[at], node.data.length)];
}

function rangeOf(map, start, end) {
  if (start == null || end == null || end <= start || end > map.text.length) return null;
  const a = boundary(map, start, false);
  const b = boundary(map, end, true);
  if (!a || !b || !a[0].isConnected || !b[0].isConnected) return null;
  const r = document.createRange();
  r.setStart(a[0], a[1]);
  r.setEnd(b[0], b[1]);
  return r;
}

// An anchor's offsets are into the text it was measured in (`at.map`): its range stays right
// while text elsewhere changes, until the server has located it in the new text.
const anchorRange = (at) => at && rangeOf(at.map, at.start, at.end);

// Whether the text at `pos` is code: a quote selected outside code must not be mapped into a
// fenced example of the same words, nor the reverse (issue #13), so the server is told.
const inCode = (map, pos) => !!boundary(map, pos, false)[0].parentElement.closest("pre,code");

function selectionTarget() {
  const sel = document.getSelection();
  if (!sel || sel.isCollapsed || !sel.rangeCount) return null;
  const r = sel.getRangeAt(0);
  if (host.contains(r.commonAncestorContainer)) return null;
  const map = textMap();
  let start = offsetOf(map, r.startContainer, r.startOffset);
  let end = offsetOf(map, r.endContainer, r.endOffset);
  const t = map.text;
  while (start < end && /\s/.test(t[start])) start++;
  while (end > start && /\s/.test(t[end - 1])) end--;
  if (end <= start) return null;
  const exact = t.slice(start, end);
  const code = inCode(map, start);
  // Which of the page's occurrences of the quote of the same kind (code or not) this is.
  let occurrence = 0;
  for (let i = t.indexOf(exact); i < start; i = t.indexOf(exact, i + 1)) occurrence += inCode(map, i) === code;
  // Context cut between the two halves of a character outside the BMP (an emoji: "📁 docs/")
  // would send a lone surrogate, which the server refuses: the note could not be saved.
  // Context cut between the halves of a character outside the BMP (an emoji: "📁 docs/") holds
  // a lone surrogate, which the server refuses: the note could not be saved. U+FFFD stands in.
  return {
    start,
    end,
    exact,
    prefix: t.slice(Math.max(0, start - CONTEXT), start).toWellFormed(),
    suffix: t.slice(end, end + CONTEXT).toWellFormed(),
    inCode: code,
    occurrence
  };
}

// -- a note's Markdown, then and now

// The Markdown then and now, word by word (issue #14): [kind, text] runs, kind "" (kept),
// "del" or "ins", as text nodes and <del>/<ins> holding text (never HTML from data).
function wordDiff(a, b) {
  const x = a.split(/(\s+)/);
  const y = b.split(/(\s+)/);
  const n = x.length;
  const m = y.length;
  if (n * m > MAX_DIFF) return [h("del", { text: a }), h("ins", { text: b })];
  // L[i][j]: the longest common run of words of x[i:] and y[j:].
  const L = Array.from({ length: n + 1 }, () => new Uint16Array(m + 1));
  for (let i = n; i--; )
    for (let j = m; j--; ) L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  // Runs: [kept] or [0, deleted, inserted]. A replaced phrase reads whole (issue #27, as in
  // annotate/diff.py): changes only whitespace parts are one, the whitespace on both sides; two
  // deletions (or insertions) stay apart.
  const runs = [[""]];
  const add = (kind, w) => {
    const c = runs.at(-1);
    const g = runs.at(-2);
    const d = kind === "del" ? w : "";
    const s = kind === "ins" ? w : "";
    if (!kind) {
      if (c[0] !== 0) c[0] += w;
      else runs.push([w]);
    } else if (c[0] === 0) {
      c[1] += d;
      c[2] += s;
    } else if (g?.[0] === 0 && !c[0].trim() && (g[1] || d) && (g[2] || s)) {
      runs.pop();
      g[1] += c[0] + d;
      g[2] += c[0] + s;
    } else runs.push([0, d, s]);
  };
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] === y[j]) {
      add("", x[i++]);
      j++;
    } else if (j < m && (i === n || L[i][j + 1] >= L[i + 1][j])) add("ins", y[j++]);
    else add("del", x[i++]);
  }
  return runs.map(([t, d, s]) => (t !== 0 ? t : [d && h("del", { text: d }), s && h("ins", { text: s })]));
}
