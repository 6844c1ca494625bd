/* mkdocs-annotate review overlay (issue #5; SPEC §5, §6). Vanilla JS, no build step: see README.md.
 * Every user string is rendered as text, never HTML; re-anchoring is the server's job. */
(() => {
  "use strict";
  // Never inside another site's frame (issue #17): a page that frames ours could trick the
  // reviewer into pressing Accept, Delete or Send to agent. Reading a cross-origin top throws.
  try {
    if (top !== window && top.location.origin !== location.origin) return;
  } catch (e) {
    return;
  }
  if (window.annotateOverlay) {
    // Loaded twice: one overlay per document.
    window.annotateOverlay.refresh();
    return;
  }
  const configEl = document.getElementById("annotate-config");
  let cfg;
  try {
    cfg = JSON.parse(configEl ? configEl.textContent : "null");
  } catch (e) {
    cfg = null;
  }
  if (!cfg || !cfg.token || !document.body) return;

  // -- constants

  const API = cfg.api || "/__annotate/api/";
  const TOKEN_HEADER = cfg.tokenHeader || "X-Annotate-Token";
  const READ_ONLY = !!cfg.readOnly;
  const HOST_ID = "annotate-host";
  const CONTEXT = 32; // characters of prefix and suffix kept with a quote (SPEC §5)
  const MAX_QUOTE = 10000;
  // Content roots, first match wins (SPEC §5); `contentSelector` from the config comes first.
  const ROOTS = [cfg.contentSelector, "article.md-content__inner", "main", "[role=main]", "body"];
  // Never part of the page text: the overlay, heading permalinks, code-copy and edit buttons.
  const SKIP =
    "#" + HOST_ID + ",script,style,noscript,template,.headerlink,.md-code__nav,.md-clipboard," +
    ".md-content__button";
  const STATUS = { open: "open", in_progress: "in progress", addressed: "addressed", resolved: "resolved" };
  const FILTERS = [
    ["active", "Not resolved"],
    ["open", "Open"],
    ["in_progress", "In progress"],
    ["addressed", "Addressed"],
    ["resolved", "Resolved"],
    ["all", "All statuses"],
  ];
  const INTENTS = [
    ["comment", "Comment"],
    ["delete", "Delete this text"],
    ["replace", "Replace with…"],
    ["insert", "Insert…"],
  ];
  const HL = { open: "annotate", done: "annotate-addressed", active: "annotate-active" };
  const STORE = "annotate:";
  const FEED_RETRY = [1000, 2000, 5000, 10000];
  // Notes drawn in the panel at a time: a site's thousands would block the page for seconds on
  // every keystroke in the search field and every live update (~0.6 ms each).
  const LIST_STEP = 100;
  // Quiet time after the page's own scripts change its text before the notes are located again.
  const SETTLE_MS = 150;
  // Words × words beyond which the diff of a note's Markdown shows old and new whole.
  const MAX_DIFF = 250000;

  // -- small helpers

  // Children as written with `cond && node`: the parts not shown (null, false) left out.
  const shown = (kids) => kids.flat(2).filter((kid) => kid != null && kid !== false);
  function h(tag, props, ...kids) {
    const el = document.createElement(tag);
    for (const k in props || {}) {
      const v = props[k];
      if (v == null || v === false) continue;
      if (k === "text") el.textContent = v;
      else if (k === "class") el.className = v;
      else if (k === "value") el.value = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : v);
    }
    el.append(...shown(kids));
    return el;
  }
  const field = (id, label, el) => h("div", { class: "field" }, h("label", { for: id, text: label }), el);
  const button = (label, onclick, cls, extra) =>
    h("button", { type: "button", class: cls || "", onclick, ...extra }, label);
  const session = {
    get: (k) => {
      try {
        return JSON.parse(sessionStorage.getItem(STORE + k));
      } catch (e) {
        return null; // storage disabled: drafts are a convenience
      }
    },
    set: (k, v) => {
      try {
        if (v == null) sessionStorage.removeItem(STORE + k);
        else sessionStorage.setItem(STORE + k, JSON.stringify(v));
      } catch (e) {
        /* as above */
      }
    },
  };
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const clamp = (v, lo, hi) => Math.max(lo, Math.min(v, hi));
  const short = (s, n) => (s.length > n ? s.slice(0, n - 1) + "…" : s);
  const isEditable = (t) =>
    !!t && t.nodeType === 1 && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
  const route = (x) => (x.type ? "annotations/" : "page-notes/") + x.id;
  const done = (x) => x.status === "addressed" || x.status === "resolved";

  // -- the API

  class ApiError extends Error {}

  async function api(method, path, body, signal) {
    const init = { method, headers: { [TOKEN_HEADER]: cfg.token }, cache: "no-store", signal };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(API + path, init);
    } catch (e) {
      if (e.name === "AbortError") throw e;
      throw new ApiError("Cannot reach the annotate server");
    }
    if (res.status === 204) return null;
    const json = (res.headers.get("content-type") || "").includes("json");
    const data = await (json ? res.json() : res.text()).catch(() => null);
    if (!res.ok) {
      const why = data && data.error ? data.error : `HTTP ${res.status}`;
      throw new ApiError(`${why} (${res.status})`);
    }
    return data;
  }

  // -- page text (SPEC §5)

  function contentRoot() {
    for (const sel of ROOTS) {
      if (!sel) continue;
      try {
        const el = document.querySelector(sel);
        if (el) return el;
      } catch (e) {
        /* a bad contentSelector: fall through to the defaults */
      }
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
            : NodeFilter.FILTER_SKIP,
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
    if (m && m.root.isConnected && m.root === contentRoot() && (!m.nodes.length || m.nodes[0].isConnected))
      return m;
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
    return {
      start,
      end,
      exact,
      prefix: t.slice(Math.max(0, start - CONTEXT), start),
      suffix: t.slice(end, end + CONTEXT),
      inCode: code,
      occurrence,
    };
  }

  // -- elements

  const unique = (sel, el) => {
    try {
      const all = document.querySelectorAll(sel);
      return all.length === 1 && all[0] === el;
    } catch (e) {
      return false;
    }
  };

  // 1-based position among same-name siblings, 0 when it has none.
  const nth = (n) => {
    const same = n.parentElement ? [...n.parentElement.children].filter((c) => c.localName === n.localName) : [n];
    return same.length > 1 ? same.indexOf(n) + 1 : 0;
  };

  function cssPath(el) {
    if (el.id && unique("#" + CSS.escape(el.id), el)) return "#" + CSS.escape(el.id);
    const parts = [];
    for (let n = el; n && n !== document.documentElement; n = n.parentElement) {
      if (n !== el && n.id && unique("#" + CSS.escape(n.id), n)) {
        parts.unshift("#" + CSS.escape(n.id));
      } else {
        const i = nth(n);
        parts.unshift(CSS.escape(n.localName) + (i ? `:nth-of-type(${i})` : ""));
      }
      const sel = parts.join(" > ");
      if (unique(sel, el)) return sel;
    }
    return "html > " + parts.join(" > ");
  }

  function xpath(el) {
    const parts = [];
    for (let n = el; n && n.nodeType === 1; n = n.parentElement) {
      const i = nth(n);
      parts.unshift(n.localName + (i ? `[${i}]` : ""));
    }
    return "/" + parts.join("/");
  }

  function describe(el) {
    const tag = el.localName;
    const cls = typeof el.className === "string" && el.className.trim() ? "." + el.className.trim().split(/\s+/)[0] : "";
    const label =
      el.getAttribute("aria-label") || el.getAttribute("alt") || el.getAttribute("title") ||
      (el.textContent || "").replace(/\s+/g, " ").trim();
    return short(tag + (el.id ? "#" + el.id : cls) + (label ? ` "${short(label, 80)}"` : ""), 200);
  }

  function elementSelector(el) {
    const attributes = {};
    for (const a of [...el.attributes].slice(0, 30)) {
      if (a.name !== "style" && a.name.length <= 200) attributes[a.name] = a.value.slice(0, 500);
    }
    return {
      cssSelector: cssPath(el).slice(0, 2000),
      xpath: xpath(el).slice(0, 2000),
      tagName: el.localName.toLowerCase(),
      description: describe(el),
      attributes,
      outerHtmlPreview: short(el.outerHTML, 500),
    };
  }

  function findElement(sel) {
    if (!sel) return null;
    try {
      const el = document.querySelector(sel.cssSelector);
      if (el && !host.contains(el)) return el;
    } catch (e) {
      /* not a valid selector any more: try the XPath */
    }
    try {
      const r = document.evaluate(sel.xpath, document, null, XPathResult.FIRST_ORDERED_NODE_TYPE, null);
      return r.singleNodeValue && r.singleNodeValue.nodeType === 1 ? r.singleNodeValue : null;
    } catch (e) {
      return null;
    }
  }

  // -- state

  const S = {
    page: location.pathname,
    root: null,
    gen: 0, // bumped on every page change: answers for an older page are dropped
    map: null, // the page text as measured (measure()); null once the content changed
    items: [], // annotations of this page (every status)
    notes: [], // page notes of this page
    anchors: new Map(), // id -> {start, end, map}: offsets into map.text; start null: could not locate
    all: null, // {annotations, pageNotes} of every page, while the All pages tab is shown
    allCount: null, // notes not resolved on the whole site, from the summary
    reviews: [],
    loaded: false,
    painted: false,
    open: !!session.get("panel"),
    tab: session.get("tab") || "page",
    query: "",
    filter: "active",
    drawn: LIST_STEP, // notes the list shows; "Show more" adds LIST_STEP
    forms: {}, // item id -> {kind: reply|reopen|delete|edit, text}
    active: null, // the item shown on the page
    offline: false,
    writes: 0, // local changes so far: a load that started before one is stale
  };

  // -- the shadow UI

  const host = h("div", { id: HOST_ID, "data-annotate": cfg.version || "" });
  // Zero size, fixed: adding it shifts nothing on the page (annotate.css says the same).
  host.style.cssText = "position:fixed;top:0;left:0;width:0;height:0;z-index:2147483000;";
  const root = host.attachShadow({ mode: "open" });
  root.append(h("style", { text: STYLE_TEXT() }));

  const toggle = button("", () => setPanel(!S.open), "toggle", {
    "aria-label": "Review panel",
    "aria-expanded": "false",
    "aria-controls": "annotate-panel",
    title: "Review panel (Ctrl+Shift+.)",
  });
  const toggleCount = h("span", { class: "count" });
  toggle.append(h("span", { class: "icon", "aria-hidden": "true", text: "✎" }), toggleCount);

  const adder = button("Annotate", () => openPopupFromSelection(), "adder", { hidden: true });
  const outline = h("div", { class: "outline", hidden: true }, h("span", { class: "label" }));
  const boxes = h("div", { class: "boxes" });
  const popup = h("div", { class: "popup", role: "dialog", hidden: true });
  const toasts = h("div", { class: "toasts" });
  const live = h("div", { class: "sr", role: "status", "aria-live": "polite" });
  const panel = h("aside", { id: "annotate-panel", class: "panel", "aria-label": "Review notes", hidden: true });
  root.append(boxes, outline, adder, popup, panel, toggle, toasts, live);

  function toast(message, error) {
    const t = h("div", { class: "toast" + (error ? " error" : ""), role: error ? "alert" : "status" }, message);
    toasts.append(t);
    setTimeout(() => t.remove(), error ? 8000 : 3500);
  }

  // A user action: an API error becomes a toast naming what failed; the UI stays as it was.
  async function act(what, fn) {
    try {
      return await fn();
    } catch (e) {
      if (e.name === "AbortError") return undefined;
      toast(`${what} failed: ${e.message}`, true);
      return undefined;
    }
  }

  function applyTheme() {
    const scheme = document.body.getAttribute("data-md-color-scheme");
    const dark = scheme ? scheme === "slate" : matchMedia("(prefers-color-scheme: dark)").matches;
    host.setAttribute("data-theme", dark ? "dark" : "light");
  }

  // -- highlights

  // What is painted: not resolved, and not text deleted as the reviewer asked (issue #14).
  const pageAnnotations = () => S.items.filter((a) => a.status !== "resolved" && a.anchorState !== "removed");

  function paint() {
    const groups = { open: [], done: [], active: [] };
    for (const a of pageAnnotations()) {
      if (a.type !== "text") continue;
      const r = anchorRange(S.anchors.get(a.id));
      if (!r) continue;
      groups[done(a) ? "done" : "open"].push(r);
      if (a.id === S.active) groups.active.push(r);
    }
    if (window.CSS && CSS.highlights && window.Highlight) {
      for (const k in HL) {
        const hl = new Highlight(...groups[k]);
        hl.priority = k === "active" ? 2 : k === "done" ? 1 : 0;
        CSS.highlights.set(HL[k], hl);
      }
    }
    paintBoxes();
    if (!S.painted && S.loaded) {
      S.painted = true;
      performance.mark("annotate:painted");
    }
  }

  function paintBoxes() {
    boxes.replaceChildren();
    for (const a of pageAnnotations()) {
      if (a.type !== "element") continue;
      const el = findElement(a.elementSelector);
      if (!el) continue;
      const r = el.getBoundingClientRect();
      const box = h("div", { class: "box" + (done(a) ? " done" : "") + (a.id === S.active ? " active" : "") });
      box.style.cssText = `top:${r.top - 2}px;left:${r.left - 2}px;width:${r.width + 4}px;height:${r.height + 4}px`;
      boxes.append(box);
    }
  }

  let boxFrame = 0;
  const repaintBoxes = () => {
    if (!boxFrame && boxes.childElementCount)
      boxFrame = requestAnimationFrame(() => {
        boxFrame = 0;
        paintBoxes();
      });
    if (!popup.hidden && popupAt) placePopup();
    if (!adder.hidden) placeAdder();
  };

  const textRange = (a) => anchorRange(S.anchors.get(a.id));

  function hitTest(x, y) {
    const hits = [];
    for (const a of pageAnnotations()) {
      if (a.type !== "text") continue;
      const r = textRange(a);
      if (!r) continue;
      for (const rect of r.getClientRects()) {
        if (x >= rect.left && x <= rect.right && y >= rect.top && y <= rect.bottom) {
          hits.push([r.toString().length, a]);
          break;
        }
      }
    }
    return hits.sort((p, q) => p[0] - q[0]).map((p) => p[1]);
  }

  function show(item) {
    S.active = item.id;
    paint();
    let rect = null;
    if (item.type === "text") {
      const r = textRange(item);
      rect = r && r.getBoundingClientRect();
    } else if (item.type === "element") {
      const el = findElement(item.elementSelector);
      rect = el && el.getBoundingClientRect();
    }
    if (rect) window.scrollBy({ top: rect.top - innerHeight / 3, behavior: "instant" });
    render();
  }

  // -- loading

  let syncing = null;
  let again = false;

  function sync() {
    if (syncing) {
      again = true;
      return syncing;
    }
    syncing = (async () => {
      do {
        again = false;
        try {
          await load();
          S.failed = null;
        } catch (e) {
          // Said once, not on every retry of the change feed.
          if (S.failed !== e.message) toast(`Loading notes failed: ${e.message}`, true);
          S.failed = e.message;
        }
      } while (again);
    })().finally(() => {
      syncing = null;
    });
    return syncing;
  }

  async function load() {
    const gen = S.gen;
    const writes = S.writes;
    const page = encodeURIComponent(S.page);
    const map = textMap();
    // Every note of the site only for the All pages tab (a large site has thousands); the tab's
    // count alone comes from the summary.
    const wantAll = S.open && S.tab === "all";
    const [a, n, anchors, all, reviews] = await Promise.all([
      api("GET", `annotations?page=${page}&status=all`),
      api("GET", `page-notes?page=${page}&status=all`),
      api("POST", "anchor", { pageUrl: S.page, text: map.text, includeResolved: true }),
      wantAll
        ? Promise.all([api("GET", "annotations?status=all"), api("GET", "page-notes?status=all")])
        : S.open ? api("GET", "summary") : null,
      S.open && !READ_ONLY ? api("GET", "reviews") : null,
    ]);
    if (gen !== S.gen) return;
    if (writes !== S.writes) {
      // A note was saved or deleted here meanwhile: this answer may predate it. Ask again.
      again = true;
      return;
    }
    S.items = a.annotations;
    S.notes = n.pageNotes;
    S.anchors = new Map(anchors.anchors.map((x) => [x.id, { ...x, map }]));
    if (wantAll) S.all = { annotations: all[0].annotations, pageNotes: all[1].pageNotes };
    else if (all) {
      S.all = null;
      const open = (counts) => Object.keys(counts).reduce((sum, s) => sum + (s === "resolved" ? 0 : counts[s]), 0);
      S.allCount = open(all.annotations) + open(all.pageNotes);
    }
    if (reviews) S.reviews = reviews.reviews;
    S.loaded = true;
    S.offline = false;
    paint();
    render();
    restoreOnce();
  }

  let restored = false;
  function restoreOnce() {
    if (restored) return;
    restored = true;
    const focus = session.get("focus");
    if (focus && focus.page === S.page) {
      session.set("focus", null);
      const item = [...S.items, ...S.notes].find((x) => x.id === focus.id);
      if (item) show(item);
    }
    const draft = session.get("draft:" + S.page);
    if (draft && !READ_ONLY) openPopup(draft);
  }

  // The page text follows the DOM (issue #13): a change to the content's text (not the overlay's,
  // not a skipped node's) forgets the measured text at once, so a selection in new text is
  // measured afresh, and asks the server where the notes are now once the changes settle.
  const changesText = (m) => {
    const el = m.target.nodeType === 1 ? m.target : m.target.parentElement;
    return !!el && !el.closest(SKIP) && (m.type === "characterData" ||
      [...m.addedNodes, ...m.removedNodes].some((n) => n.nodeType !== 1 || !n.matches(SKIP)));
  };
  let settle = 0;
  const observer = new MutationObserver((records) => {
    if (!records.some(changesText)) return;
    S.map = null;
    clearTimeout(settle);
    settle = setTimeout(sync, SETTLE_MS);
  });

  function startPage() {
    const r = contentRoot();
    if (S.root === r && S.page === location.pathname) return; // the same page: already loading
    observer.disconnect();
    observer.observe(r, { childList: true, subtree: true, characterData: true });
    closePopup(false, true); // its draft stays, for when the reviewer comes back
    S.gen++;
    S.root = r;
    S.page = location.pathname;
    S.map = null;
    S.items = [];
    S.notes = [];
    S.anchors = new Map();
    S.active = null;
    S.forms = {};
    S.drawn = LIST_STEP;
    S.loaded = false;
    S.painted = false;
    restored = false;
    hideAdder();
    paint();
    render();
    return sync();
  }

  // -- the change feed

  const feedAbort = new AbortController();
  let pending = 0;

  async function follow(first) {
    let cursor = first;
    let fails = 0;
    while (!feedAbort.signal.aborted) {
      try {
        if (cursor == null) cursor = (await api("GET", "changes", undefined, feedAbort.signal)).cursor;
        const r = await api("GET", `changes?since=${cursor}`, undefined, feedAbort.signal);
        if (S.offline) sync();
        fails = 0;
        cursor = r.cursor;
        if (r.events.some(relevant)) {
          clearTimeout(pending);
          pending = setTimeout(sync, 30);
        }
      } catch (e) {
        if (feedAbort.signal.aborted) return;
        if (!S.offline) {
          S.offline = true;
          render();
        }
        await sleep(FEED_RETRY[Math.min(fails++, FEED_RETRY.length - 1)]);
        cursor = null; // a restarted server may have another store: start afresh
        sync();
      }
    }
  }

  const relevant = (e) =>
    e.pageUrl === S.page || e.kind === "review" || e.kind === "store" || !e.pageUrl || S.open;

  // -- the popup

  let popupAt = null; // {target: {kind, ...}, item?} the popup is for
  let returnFocus = null;

  function hideAdder() {
    adder.hidden = true;
  }

  let adderTarget = null;
  function placeAdder() {
    const sel = document.getSelection();
    if (!sel || !sel.rangeCount) return hideAdder();
    const rects = sel.getRangeAt(0).getClientRects();
    const last = rects[rects.length - 1] || sel.getRangeAt(0).getBoundingClientRect();
    adder.style.top = clamp(last.bottom + 6, 4, innerHeight - 40) + "px";
    adder.style.left = clamp(last.right - 40, 4, innerWidth - 110) + "px";
  }

  function maybeShowAdder() {
    if (READ_ONLY || !popup.hidden) return;
    adderTarget = selectionTarget();
    if (!adderTarget) return hideAdder();
    adder.hidden = false;
    placeAdder();
  }

  function openPopupFromSelection() {
    const t = adderTarget || selectionTarget();
    hideAdder();
    if (!t) return;
    if (t.exact.length > MAX_QUOTE) {
      toast(`The selection is too long: at most ${MAX_QUOTE.toLocaleString()} characters`, true);
      return;
    }
    openPopup({ target: { kind: "text", ...t } });
  }

  // draft: {target, note, intent, suggestion, id (when editing)}
  function openPopup(draft) {
    if (READ_ONLY) return;
    if (!popup.hidden) closePopup(false);
    const active = document.activeElement;
    returnFocus = active && active !== document.body && active !== host ? active : null;
    popupAt = draft;
    const t = draft.target;
    const editing = !!draft.id;
    const intent = h(
      "select",
      { id: "annotate-intent" },
      INTENTS.map(([v, label]) => h("option", { value: v, text: label })),
    );
    intent.value = draft.intent || "comment";
    const suggestion = h("textarea", { id: "annotate-suggestion", rows: 2 });
    suggestion.value = draft.suggestion || "";
    const note = h("textarea", { id: "annotate-note", rows: 3, placeholder: "What should change?" });
    note.value = draft.note || "";
    const suggestionRow = field("annotate-suggestion", "Suggestion", suggestion);
    const error = h("p", { class: "error", role: "alert" });
    const saveDraft = () => {
      suggestionRow.hidden = !(intent.value === "replace" || intent.value === "insert");
      Object.assign(draft, { note: note.value, intent: intent.value, suggestion: suggestion.value });
      session.set("draft:" + S.page, draft);
    };
    intent.addEventListener("change", saveDraft);
    note.addEventListener("input", saveDraft);
    suggestion.addEventListener("input", saveDraft);
    const row = h(
      "div",
      { class: "row" },
      button("Save", () => save(draft, error), "primary"),
      button("Cancel", () => closePopup(true)),
      editing &&
        button("Delete", () => {
          row.replaceChildren(
            h("span", { class: "confirm", text: "Delete this note and its replies?" }),
            button("Delete", () => remove(draft.item), "danger"),
            button("Cancel", () => closePopup(true)),
          );
          row.querySelector(".danger").focus();
        }),
    );
    const preview = t.kind === "element" ? t.element.description : t.exact;
    popup.setAttribute("aria-label", editing ? "Edit note" : "New note");
    popup.replaceChildren(...shown([
      h("blockquote", { class: "preview" + (t.kind === "element" ? " element" : "") }, short(preview, 200)),
      field("annotate-intent", "Intent", intent),
      suggestionRow,
      field("annotate-note", "Note", note),
      error,
      row,
    ]));
    popup.hidden = false;
    saveDraft();
    placePopup();
    (suggestionRow.hidden || draft.suggestion ? note : suggestion).focus();
  }

  const intact = (t) => textMap().text.slice(t.start, t.end) === t.exact;

  function targetRect() {
    const t = popupAt.target;
    if (t.kind === "element") {
      const el = findElement(t.element);
      return el ? el.getBoundingClientRect() : null;
    }
    // A new note's draft (perhaps restored after a reload) only if the text is still there.
    const r = popupAt.id ? textRange(popupAt) : intact(t) && rangeOf(textMap(), t.start, t.end);
    return r ? r.getBoundingClientRect() : null;
  }

  // Below the target, above when there is no room, always inside the viewport.
  function placePopup() {
    const rect = targetRect();
    const w = popup.offsetWidth;
    const hgt = popup.offsetHeight;
    let top;
    let left;
    if (!rect) {
      top = (innerHeight - hgt) / 3;
      left = (innerWidth - w) / 2;
    } else {
      top = rect.bottom + 8;
      if (top + hgt > innerHeight - 8 && rect.top - hgt - 8 >= 8) top = rect.top - hgt - 8;
      left = rect.left;
    }
    popup.style.top = clamp(top, 8, Math.max(8, innerHeight - hgt - 8)) + "px";
    popup.style.left = clamp(left, 8, Math.max(8, innerWidth - w - 8)) + "px";
  }

  function closePopup(restoreFocus, keepDraft) {
    if (popup.hidden) return;
    popup.hidden = true;
    popup.replaceChildren();
    popupAt = null;
    if (!keepDraft) session.set("draft:" + S.page, null);
    if (restoreFocus && returnFocus && returnFocus.isConnected) returnFocus.focus();
    returnFocus = null;
  }

  async function save(draft, error) {
    const intent = draft.intent || "comment";
    const body = { note: draft.note || "", intent };
    if (intent === "replace" || intent === "insert") body.suggestion = draft.suggestion || "";
    error.textContent = "";
    // The server refuses these too; asking first spares a failed request.
    const missing = intent === "comment" ? !body.note.trim() && "note" : body.suggestion === "" && "suggestion";
    if (missing) {
      error.textContent = missing === "note" ? "Write a note first." : "Write the suggested text first.";
      popup.querySelector(`#annotate-${missing}`).focus();
      return;
    }
    try {
      let item;
      if (draft.id) {
        item = await api("PATCH", `annotations/${draft.id}`, body);
      } else {
        const t = draft.target;
        Object.assign(body, { pageUrl: S.page, pageTitle: document.title, author: cfg.author });
        if (t.kind === "element") {
          Object.assign(body, { type: "element", elementSelector: t.element });
        } else {
          Object.assign(body, {
            type: "text",
            selectedText: t.exact,
            quote: { exact: t.exact, prefix: t.prefix, suffix: t.suffix },
            position: { start: t.start, end: t.end },
            inCode: t.inCode,
            occurrence: t.occurrence,
          });
        }
        item = await api("POST", "annotations", body);
        if (t.kind === "text" && intact(t)) S.anchors.set(item.id, { start: t.start, end: t.end, map: textMap() });
      }
      upsert(item);
      closePopup(true);
      document.getSelection().removeAllRanges();
      live.textContent = draft.id ? "Note saved" : "Note added";
      paint();
      render();
      sync();
    } catch (e) {
      error.textContent = `Could not save: ${e.message}`;
      toast(`Saving failed: ${e.message}`, true);
    }
  }

  const put = (list, item) => {
    const i = list.findIndex((x) => x.id === item.id);
    if (i < 0) list.push(item);
    else list[i] = item;
  };
  function upsert(item) {
    S.writes++;
    if (item.pageUrl === S.page) put(item.type ? S.items : S.notes, item);
    if (S.all) put(S.all[item.type ? "annotations" : "pageNotes"], item);
  }

  function drop(id) {
    S.writes++;
    const out = (list) => list.filter((x) => x.id !== id);
    S.items = out(S.items);
    S.notes = out(S.notes);
    if (S.all) for (const k in S.all) S.all[k] = out(S.all[k]);
    S.anchors.delete(id);
  }

  async function remove(item) {
    await act("Deleting", async () => {
      await api("DELETE", route(item));
      drop(item.id);
      if (popupAt && popupAt.id === item.id) closePopup(true);
      delete S.forms[item.id];
      live.textContent = "Note deleted";
      paint();
      render();
      sync();
    });
  }

  function editItem(item) {
    if (!item.type) {
      S.forms[item.id] = { kind: "edit", text: item.note };
      render();
      return;
    }
    const target =
      item.type === "element"
        ? { kind: "element", element: item.elementSelector }
        : { kind: "text", exact: item.selectedText };
    openPopup({ id: item.id, item, target, note: item.note, intent: item.intent, suggestion: item.suggestion || "" });
  }

  // -- the panel

  function setPanel(open) {
    S.open = open;
    session.set("panel", open || null);
    render();
    if (open) {
      sync();
      const tab = panel.querySelector('[aria-selected="true"]');
      if (tab) tab.focus();
    } else {
      toggle.focus();
    }
  }

  const unresolved = (list) => list.filter((x) => x.status !== "resolved").length;

  function visible(list) {
    const q = S.query.trim().toLowerCase();
    return list.filter((x) => {
      if (S.filter === "active" ? x.status === "resolved" : S.filter !== "all" && x.status !== S.filter) return false;
      if (!q) return true;
      const hay = [x.note, x.selectedText, x.suggestion, x.pageTitle, x.pageUrl,
        x.elementSelector && x.elementSelector.description, ...(x.replies || []).map((r) => r.message)];
      return hay.join("\n").toLowerCase().includes(q);
    });
  }

  function located(item) {
    if (item.pageUrl !== S.page || !S.loaded || item.status === "resolved" || item.anchorState === "removed") return true;
    if (item.type === "element") return !!findElement(item.elementSelector);
    if (item.type === "text") {
      const at = S.anchors.get(item.id);
      return !!(at && at.start != null);
    }
    return true;
  }

  // `docs/x.md:3-5`; a page note's source is the file alone (docs/data-model.md).
  function sourceLabel(src) {
    if (!src || !src.path) return null;
    const lines = src.lineStart == null ? "" : src.lineStart === src.lineEnd ? `:${src.lineStart}` : `:${src.lineStart}-${src.lineEnd}`;
    return src.path + lines + (src.lastKnown ? " (last known)" : "");
  }

  function itemView(item, here) {
    const form = S.forms[item.id];
    const kind = item.type || "page";
    const badge = h("span", { class: "badge s-" + item.status, text: STATUS[item.status] || item.status });
    const meta = h("div", { class: "meta" }, badge, h("span", { class: "kind", text: kind === "page" ? "page note" : kind }));
    const src = sourceLabel(item.source);
    if (src) meta.append(h("code", { class: "source", title: "Markdown source", text: src }));
    // A passage the agent deleted as asked is no warning (issue #14): it is the note's answer.
    if (item.anchorState === "removed") meta.append(h("span", { class: "removed", text: "deleted as asked" }));
    else if (item.anchorState && item.anchorState !== "anchored" && item.type === "text")
      meta.append(h("span", { class: "flag", text: `source ${item.anchorState}` }));
    const body = h("div", { class: "body" });
    if (!located(item)) body.append(h("p", { class: "orphan", text: "could not locate on this page" }));
    if (item.type === "text") body.append(h("blockquote", { class: "quote", text: short(item.selectedText || "", 300) }));
    if (item.type === "element") body.append(h("blockquote", { class: "quote element", text: item.elementSelector.description || item.elementSelector.cssSelector }));
    if (item.intent === "delete") body.append(h("p", { class: "intent", text: "Delete this text" }));
    if (item.intent === "replace" || item.intent === "insert")
      body.append(h("p", { class: "intent" }, item.intent === "replace" ? "Replace with: " : "Insert: ", h("ins", { text: item.suggestion || "" })));
    if (item.note) body.append(h("p", { class: "note", text: item.note }));
    if (item.replacedText) body.append(h("p", { class: "intent" }, "Now reads: ", h("ins", { text: item.replacedText })));
    const was = item.originalSource;
    if (item.status === "addressed" && was && item.source && was.excerpt != null && item.source.excerpt != null)
      body.append(h("div", { class: "quote diff" }, h("span", { class: "who", text: "Markdown change" }),
        was.excerpt === item.source.excerpt ? "none" : wordDiff(was.excerpt, item.source.excerpt)));
    if (item.replies && item.replies.length) {
      body.append(
        h("ol", { class: "thread", "aria-label": "Replies" },
          item.replies.map((r) =>
            h("li", { class: "reply " + r.role },
              h("span", { class: "who", text: r.role === "agent" ? `Agent${r.author ? " (" + r.author + ")" : ""}` : r.author || "Reviewer" }),
              h("span", { class: "msg", text: r.message })))),
      );
    }
    if (here || !item.pageUrl || item.pageUrl !== S.page) {
      body.tabIndex = 0;
      body.setAttribute("role", "button");
      body.setAttribute("aria-label", here ? "Show on page" : "Go to this note");
      const go = () => goTo(item);
      body.addEventListener("click", go);
      body.addEventListener("keydown", (e) => {
        if (e.key === "Enter" && e.target === body) go();
      });
    }
    const li = h("li", { class: "item" + (item.id === S.active ? " active" : ""), "data-id": item.id }, meta, body);
    if (!READ_ONLY) li.append(form ? formView(item, form) : actions(item));
    return li;
  }

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
    for (let i = n; i--; ) for (let j = m; j--; ) L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
    const runs = [["", ""]];
    const add = (kind, word) => {
      const last = runs[runs.length - 1];
      if (last[0] === kind) last[1] += word;
      else runs.push([kind, word]);
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
    return runs.map(([kind, text]) => (kind ? h(kind, { text }) : text));
  }

  function actions(item) {
    const open = (kind, text) => () => {
      S.forms[item.id] = { kind, text: text || "" };
      render();
    };
    const row = h("div", { class: "actions" }, button("Reply", open("reply")));
    if (item.status !== "resolved") row.append(button("Accept", () => setStatus(item, { action: "accept" })), button("Ask agent now", () => sendReview({ mode: "review", ids: [item.id] })));
    if (item.status === "addressed" || item.status === "resolved") row.append(button("Reopen", open("reopen")));
    row.append(button("Edit", () => editItem(item)), button("Delete", open("delete"), "danger"));
    return row;
  }

  // Send to agent, and Ask agent now (issue #14: one note, in review mode, outside the batch;
  // the answer comes back as a reply through the change feed).
  const sendReview = (body, then) =>
    act("Sending to the agent", async () => {
      const review = await api("POST", "reviews", body);
      if (then) then();
      const n = review.annotations.length + review.pageNotes.length;
      toast(`Sent ${n} note${n === 1 ? "" : "s"} to the agent (${review.mode})`);
      S.reviews.push(review);
      render();
    });

  function formView(item, form) {
    const close = () => {
      delete S.forms[item.id];
      render();
    };
    if (form.kind === "delete") {
      return h("div", { class: "actions confirm" },
        h("span", { text: "Delete this note and its replies?" }),
        button("Delete", () => remove(item), "danger", { "data-focus": item.id }),
        button("Cancel", close));
    }
    const labels = { reply: ["Reply", "Reply"], reopen: ["Follow-up note (optional)", "Reopen"], edit: ["Note", "Save"] };
    const [label, action] = labels[form.kind];
    const id = `annotate-form-${item.id}`;
    const field = h("textarea", { id, rows: 2, "data-focus": item.id, oninput: (e) => { form.text = e.target.value; } });
    field.value = form.text;
    const submit = async () => {
      const text = field.value;
      if (form.kind === "reply") {
        await act("Replying", async () => {
          upsert(await api("POST", route(item) + "/replies", { message: text, author: cfg.author }));
          close();
        });
      } else if (form.kind === "reopen") {
        await setStatus(item, text.trim() ? { action: "reopen", note: text } : { action: "reopen" }, close);
      } else {
        await act("Saving", async () => {
          upsert(await api("PATCH", `page-notes/${item.id}`, { note: text }));
          close();
        });
      }
    };
    field.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) submit();
    });
    return h("div", { class: "form" }, h("label", { for: id, text: label }), field,
      h("div", { class: "actions" }, button(action, submit, "primary"), button("Cancel", close)));
  }

  async function setStatus(item, body, then) {
    await act(body.action === "accept" ? "Accepting" : "Reopening", async () => {
      upsert(await api("POST", route(item) + "/status", body));
      if (then) then();
      paint();
      render();
    });
  }

  function goTo(item) {
    if (item.pageUrl === S.page) {
      show(item);
      return;
    }
    session.set("focus", { page: item.pageUrl, id: item.id });
    location.assign(item.pageUrl);
  }

  function pageNoteForm() {
    const form = S.forms.__new;
    if (!form) return null;
    const field = h("textarea", { id: "annotate-page-note", rows: 3, "data-focus": "__new", oninput: (e) => { form.text = e.target.value; } });
    field.value = form.text;
    const close = () => {
      delete S.forms.__new;
      render();
    };
    const submit = () => act("Saving the page note", async () => {
      upsert(await api("POST", "page-notes", { pageUrl: S.page, pageTitle: document.title, note: field.value, author: cfg.author }));
      close();
      sync();
    });
    return h("div", { class: "form" }, h("label", { for: "annotate-page-note", text: "Note" }), field,
      h("div", { class: "actions" }, button("Save", submit, "primary"), button("Cancel", close)));
  }

  function sendView() {
    const last = S.reviews[S.reviews.length - 1];
    const mode = h("select", { id: "annotate-mode" },
      h("option", { value: "edit", text: "Edit: apply the changes" }),
      h("option", { value: "review", text: "Review: answer, change nothing yet" }));
    mode.value = S.mode || "edit";
    mode.addEventListener("change", () => { S.mode = mode.value; });
    const message = h("input", { id: "annotate-message", type: "text", value: S.message || "", placeholder: "Optional", oninput: (e) => { S.message = e.target.value; } });
    const send = () => {
      const body = { mode: mode.value };
      if (message.value.trim()) body.message = message.value;
      sendReview(body, () => { S.message = ""; });
    };
    let status = "No review sent yet.";
    if (last) {
      const time = (iso) => new Date(iso).toLocaleTimeString();
      const head = `Last review (${last.mode}, sent ${time(last.createdAt)})`;
      status =
        last.status === "done"
          ? `${head} is done: every note in it is addressed or resolved.`
          : last.pickedUpAt
            ? `${head} was picked up by the agent at ${time(last.pickedUpAt)}.`
            : `${head} is waiting for the agent.`;
    }
    return h("section", { class: "send", "aria-label": "Send to agent" },
      field("annotate-mode", "Mode", mode),
      field("annotate-message", "Message", message),
      button("Send to agent", send, "primary"),
      h("p", { class: "review-status", text: status }));
  }

  async function copyMarkdown() {
    await act("Copying", async () => {
      const text = await api("GET", "export?format=markdown");
      try {
        await navigator.clipboard.writeText(text);
      } catch (e) {
        // No clipboard permission: the old way.
        const area = h("textarea", { class: "sr" });
        area.value = text;
        root.append(area);
        area.select();
        const ok = document.execCommand("copy");
        area.remove();
        if (!ok) throw new ApiError("the browser refused access to the clipboard");
      }
      toast("Copied as Markdown");
    });
  }

  // A mouse or touch press inside the panel holds back its re-rendering until the click is done.
  let pressed = false;
  panel.addEventListener("pointerdown", () => {
    pressed = true;
  });
  const release = () => {
    const held = pressed === "render";
    pressed = false;
    // After the click: mouseup and click come in one task, this timeout in a later one.
    if (held) setTimeout(render, 0);
  };
  addEventListener("pointerup", release, true);
  addEventListener("pointercancel", release, true);
  addEventListener("blur", release);

  function render() {
    const thisPage = [...S.notes, ...S.items];
    const n = unresolved(thisPage);
    toggleCount.textContent = n ? String(n) : "";
    toggle.setAttribute("aria-expanded", String(S.open));
    toggle.classList.toggle("shifted", S.open);
    panel.hidden = !S.open;
    if (!S.open) return;
    if (pressed) {
      // Replacing the pressed button would send its click to no button at all: wait for it.
      pressed = "render";
      return;
    }
    // A live update may re-render while the reviewer types: keep focus and caret.
    const focused = root.activeElement;
    const inPanel = focused && panel.contains(focused);
    const focusKey = focused && (focused.id || focused.getAttribute("data-focus"));
    const caret = focused && "selectionStart" in focused ? [focused.selectionStart, focused.selectionEnd] : null;

    const all = S.all ? [...S.all.pageNotes, ...S.all.annotations] : thisPage;
    const tab = (id, label, count) =>
      h("button", {
        type: "button", role: "tab", id: "annotate-tab-" + id, "aria-selected": String(S.tab === id),
        "aria-controls": "annotate-list", tabindex: S.tab === id ? "0" : "-1",
        onclick: () => { S.tab = id; S.drawn = LIST_STEP; session.set("tab", id); render(); if (id === "all" && !S.all) sync(); },
      }, `${label} (${count})`);
    const search = h("input", { type: "search", id: "annotate-search", "aria-label": "Search notes", placeholder: "Search", value: S.query,
      oninput: (e) => { S.query = e.target.value; S.drawn = LIST_STEP; render(); } });
    const filter = h("select", { id: "annotate-filter", "aria-label": "Status",
      onchange: (e) => { S.filter = e.target.value; S.drawn = LIST_STEP; render(); } },
      FILTERS.map(([v, l]) => h("option", { value: v, text: l })));
    filter.value = S.filter;

    const list = h("div", { id: "annotate-list", class: "list", role: "tabpanel", "aria-labelledby": "annotate-tab-" + S.tab });
    // The first S.drawn notes in the order shown; the rest behind "Show more".
    let room = S.drawn;
    let left = 0;
    const draw = (xs) => {
      const kept = xs.slice(0, Math.max(0, room));
      room -= kept.length;
      left += xs.length - kept.length;
      return kept;
    };
    if (S.tab === "page") {
      const notes = draw(visible(S.notes));
      const items = draw(visible(S.items));
      if (notes.length) list.append(h("h3", { text: "Page notes" }), h("ul", {}, notes.map((x) => itemView(x, true))));
      if (items.length) list.append(h("h3", { text: "On this page" }), h("ul", {}, items.map((x) => itemView(x, true))));
    } else {
      const pages = new Map();
      for (const x of visible(all)) {
        if (!pages.has(x.pageUrl)) pages.set(x.pageUrl, []);
        pages.get(x.pageUrl).push(x);
      }
      for (const [url, notes] of [...pages].sort((p, q) => p[0].localeCompare(q[0]))) {
        const xs = draw(notes);
        if (!xs.length) continue;
        const title = notes.find((x) => x.pageTitle);
        list.append(h("h3", {}, h("a", { href: url, text: title ? title.pageTitle : url }), " ", h("code", { text: url })),
          h("ul", {}, xs.map((x) => itemView(x, false))));
      }
    }
    if (left)
      list.append(button(`Show ${Math.min(left, LIST_STEP)} more (${left} not shown)`, () => {
        S.drawn += LIST_STEP;
        render();
      }, "more", { id: "annotate-more" }));
    if (!list.childElementCount)
      list.append(h("p", { class: "empty", text: S.loaded ? "No notes here yet." : "Loading…" }));

    panel.replaceChildren(...shown([
      h("header", {},
        h("h2", { text: "Review" }),
        READ_ONLY && h("span", { class: "badge", text: "read-only" }),
        S.offline && h("span", { class: "badge offline", text: "offline, retrying" }),
        button("×", () => setPanel(false), "close", { "aria-label": "Close" })),
      h("div", { role: "tablist", "aria-label": "Which notes" }, tab("page", "This page", unresolved(thisPage)), tab("all", "All pages", S.all || S.allCount == null ? unresolved(all) : S.allCount)),
      h("div", { class: "tools" }, search, filter),
      h("div", { class: "actions" },
        !READ_ONLY && button("Add page note", () => { S.forms.__new = { text: "" }; render(); }),
        button("Copy as Markdown", copyMarkdown)),
      pageNoteForm(),
      list,
      !READ_ONLY && sendView(),
    ]));
    const again = focusKey && [...panel.querySelectorAll("[id],[data-focus]")].find(
      (el) => el.id === focusKey || el.getAttribute("data-focus") === focusKey);
    const opened = panel.querySelector("textarea[data-focus], .confirm .danger");
    // A form just opened takes the focus, but never from the page or the popup.
    const target = again || (inPanel && !focused.isConnected ? opened : null);
    if (target) {
      target.focus();
      if (caret && again && "selectionStart" in target) target.setSelectionRange(caret[0], caret[1]);
    }
  }

  // -- events

  const fromOverlay = (e) => e.composedPath().includes(host);

  function onKey(e) {
    const target = e.composedPath()[0];
    const typing = isEditable(target);
    const inside = fromOverlay(e);
    if (e.key === "Escape") {
      if (typing && !inside) return; // the page's own field (e.g. search) keeps its Escape
      if (inside && popup.contains(target) && !popup.hidden) closePopup(true);
      else if (inside && panel.contains(target) && Object.keys(S.forms).length) {
        S.forms = {};
        render();
        panel.querySelector('[aria-selected="true"]').focus();
      } else if (!popup.hidden) closePopup(true);
      else if (!adder.hidden) hideAdder();
      else if (!outline.hidden) outline.hidden = true;
      else if (S.open) setPanel(false);
      else return;
      e.preventDefault();
      e.stopPropagation();
      return;
    }
    if (inside && typing && e.key === "Enter" && (e.ctrlKey || e.metaKey) && popup.contains(target)) {
      e.preventDefault();
      if (popupAt) popup.querySelector(".primary").click();
      return;
    }
    if (typing) return; // shortcuts never fire while typing (SPEC §6)
    if ((e.ctrlKey || e.metaKey) && e.shiftKey && (e.code === "Period" || e.key === ">" || e.key === ".")) {
      e.preventDefault();
      setPanel(!S.open);
    } else if (e.key === "Enter" && !adder.hidden && !inside) {
      e.preventDefault();
      openPopupFromSelection();
    }
  }

  let hovered = null;
  function onMove(e) {
    if (READ_ONLY || !e.altKey) {
      if (!outline.hidden) outline.hidden = true;
      hovered = null;
      return;
    }
    const el = document.elementFromPoint(e.clientX, e.clientY);
    if (!el || el === host || host.contains(el) || el === document.documentElement || el === document.body) {
      outline.hidden = true;
      hovered = null;
      return;
    }
    hovered = el;
    const r = el.getBoundingClientRect();
    outline.style.cssText = `top:${r.top}px;left:${r.left}px;width:${r.width}px;height:${r.height}px`;
    outline.firstChild.textContent = describe(el);
    outline.hidden = false;
  }

  function onClick(e) {
    if (fromOverlay(e)) return;
    if (e.altKey && !READ_ONLY) {
      const el = hovered || document.elementFromPoint(e.clientX, e.clientY);
      if (!el || el === document.documentElement || el === document.body) return;
      // Alt+click on a link would download it: this click is ours.
      e.preventDefault();
      e.stopPropagation();
      outline.hidden = true;
      openPopup({ target: { kind: "element", element: elementSelector(el) } });
      return;
    }
    const sel = document.getSelection();
    if (READ_ONLY || (sel && !sel.isCollapsed) || e.target.closest("a,button,input,textarea,select,label,summary")) return;
    const hit = hitTest(e.clientX, e.clientY)[0];
    if (hit) editItem(hit);
  }

  function onPointerDown(e) {
    if (fromOverlay(e)) return;
    if (!adder.hidden) hideAdder();
    // An empty popup goes away on an outside click; one holding text stays (it is a draft).
    if (!popup.hidden && popupAt && !popupAt.id && !(popupAt.note || "").trim() && !(popupAt.suggestion || "").trim())
      closePopup(false);
  }

  function onPointerUp(e) {
    if (fromOverlay(e) || e.altKey) return;
    setTimeout(maybeShowAdder, 0);
  }

  function start() {
    document.body.append(host);
    applyTheme();
    new MutationObserver(applyTheme).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
    matchMedia("(prefers-color-scheme: dark)").addEventListener("change", applyTheme);
    addEventListener("keydown", onKey, true);
    // Keys typed in the overlay's fields are not the page's shortcuts (Material's `.`, `n`, `s`…).
    for (const type of ["keydown", "keyup", "keypress"])
      root.addEventListener(type, (e) => { if (isEditable(e.composedPath()[0])) e.stopPropagation(); });
    document.addEventListener("mousemove", onMove, { passive: true });
    document.addEventListener("click", onClick, true);
    document.addEventListener("pointerdown", onPointerDown, true);
    document.addEventListener("pointerup", onPointerUp, true);
    document.addEventListener("keyup", (e) => {
      if (e.key === "Alt") outline.hidden = true;
      else if (!fromOverlay(e) && (e.shiftKey || e.key === "Shift")) maybeShowAdder();
    });
    document.addEventListener("selectionchange", () => {
      const sel = document.getSelection();
      if (!adder.hidden && (!sel || sel.isCollapsed)) hideAdder();
    });
    addEventListener("scroll", repaintBoxes, { passive: true });
    addEventListener("resize", repaintBoxes, { passive: true });
    addEventListener("pagehide", () => feedAbort.abort());
    // The feed's cursor is read before the notes (no change slips between them); its long-poll
    // starts after them, so the first paint does not wait behind it.
    const cursor = api("GET", "changes", undefined, feedAbort.signal).then((r) => r.cursor, () => null);
    startPage().then(() => cursor).then(follow);
    // Material's instant navigation swaps the content without a reload (FACTS.md): follow it.
    if (window.document$ && typeof window.document$.subscribe === "function") {
      window.document$.subscribe(() => startPage());
    }
  }

  window.annotateOverlay = {
    version: cfg.version || "",
    refresh: () => {
      S.root = null;
      startPage();
    },
    pageText: () => textMap().text,
  };
  start();

  // -- styles (inside the shadow root)

  function STYLE_TEXT() {
    return `
:host{all:initial;--bg:#fff;--fg:#1f2328;--mute:#5b636e;--line:#d0d7de;--soft:#f3f5f8;--acc:#3f51b5;--on:#fff;--agent:#e8f0fe;--red:#c62828;--sh:0 8px 28px #0003}
:host([data-theme=dark]){--bg:#1f222b;--fg:#e4e6eb;--mute:#a3a9b5;--line:#3b404d;--soft:#2a2e39;--acc:#8c9eff;--on:#111;--agent:#26324d;--red:#ff7b7b;--sh:0 8px 28px #0008}
*{box-sizing:border-box;font:inherit;color:inherit}
[hidden]{display:none!important}
.toggle,.adder,.popup,.panel,.toasts,.outline,.boxes{font:13px/1.45 system-ui,sans-serif;color:var(--fg)}
h2,h3,label,.badge,.who,.orphan,.removed{font-weight:700}
code,.element,.label{font-family:ui-monospace,monospace}
button{cursor:pointer;border:1px solid var(--line);background:var(--soft);border-radius:6px;padding:3px 9px}
button:hover{border-color:var(--acc)}
:focus-visible{outline:2px solid var(--acc);outline-offset:1px}
.primary,.toggle,.adder,.outline .label{background:var(--acc);color:var(--on);border-color:var(--acc)}
.danger,.error,.confirm,.flag,.orphan,.offline{color:var(--red)}
select,input,textarea{width:100%;background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:4px 6px}
label{display:block;font-size:12px;color:var(--mute)}
.field{margin:6px 0}
.row,.actions,.meta,.tools,header{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin-top:6px}
.toggle,.adder,.popup,.panel,.outline,.box,.toasts{position:fixed}
.toggle{right:16px;bottom:16px;height:40px;min-width:40px;border-radius:20px;font-size:18px;box-shadow:var(--sh)}
.toggle.shifted{right:min(396px,calc(100vw - 56px))}
.count{font-size:12px;margin-left:2px}
.adder{font-weight:700;box-shadow:var(--sh)}
.popup,.panel{background:var(--bg);border:1px solid var(--line);box-shadow:var(--sh);padding:10px 12px;overflow:auto}
.popup{width:min(360px,calc(100vw - 16px));max-height:calc(100vh - 16px);border-radius:10px}
.preview,.quote{margin:0 0 6px;padding:4px 8px;border-left:3px solid #f5c400;background:var(--soft);white-space:pre-wrap;word-break:break-word;max-height:9em;overflow:auto}
.element{border-left-color:var(--acc)}
.error:empty{display:none}
.outline{outline:2px dashed var(--acc);pointer-events:none}
.outline .label{position:absolute;bottom:100%;font-size:11px;padding:0 4px;white-space:nowrap}
.box{outline:2px solid #f5c400e6;pointer-events:none;border-radius:3px}
.box.done{outline-color:#2ea043cc}
.active.box{outline:3px solid #ff8c00}
.panel{top:0;right:0;bottom:0;width:min(380px,100vw);display:flex;flex-direction:column;gap:8px}
h2{margin:0;font-size:16px;flex:1}
h3{margin:10px 0 4px;color:var(--mute)}
h3 a{color:var(--acc)}
h3 code,.source{font-size:11px}
.close{border:0;background:none;font-size:18px}
[role=tablist]{display:flex;gap:4px;border-bottom:1px solid var(--line)}
[role=tab]{border:0;border-bottom:2px solid transparent;border-radius:0;background:none}
[aria-selected=true]{border-bottom-color:var(--acc);font-weight:700}
.tools{flex-wrap:nowrap}
.list{flex:1;overflow:auto}
.list .more{display:block;margin:8px auto}
ul,ol{list-style:none;margin:0;padding:0}
.item{border:1px solid var(--line);border-radius:8px;padding:8px;margin:0 0 8px}
.item.active{border-color:#ff8c00}
.meta{color:var(--mute);font-size:12px;margin:0 0 4px}
.badge{font-size:11px;padding:0 6px;border-radius:9px;background:var(--soft);border:1px solid var(--line)}
.s-open{background:#fff4c2;color:#5c4500}
.s-in_progress{background:#dbeafe;color:#1e3a8a}
.s-addressed{background:#dcfce7;color:#14532d}
.s-resolved{background:#eceff3;color:#444}
.orphan{margin:0 0 4px}
.body{cursor:pointer}
.note,.intent,.msg{margin:4px 0;white-space:pre-wrap;word-break:break-word}
ins{text-decoration:none;background:#2ea04333}
del{background:#c6282826}
.diff{font:12px ui-monospace,monospace}
.thread{margin-top:6px;padding-left:8px;border-left:2px solid var(--line)}
.reply{margin:4px 0;padding:4px 6px;border-radius:6px;background:var(--soft)}
.reply.agent{background:var(--agent);border-left:3px solid var(--acc)}
.who{display:block;font-size:11px;color:var(--mute)}
.send{border-top:1px solid var(--line);padding-top:6px}
.review-status,.empty{color:var(--mute);font-size:12px}
.toasts{left:50%;bottom:16px;transform:translateX(-50%);display:flex;flex-direction:column;gap:6px;align-items:center}
.toast{background:var(--fg);color:var(--bg);padding:6px 12px;border-radius:8px;box-shadow:var(--sh);max-width:min(520px,90vw)}
.toast.error{background:var(--red);color:#fff}
.sr{position:fixed;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
`;
  }
})();
