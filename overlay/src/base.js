// -- the page's settings and the overlay's constants

// fn(), or null when it throws (a cross-origin `top`, a bad selector, sessionStorage disabled:
// drafts are a convenience).
const safely = (fn) => {
  try {
    return fn();
  } catch (e) {
    return null;
  }
};
// The configuration the page carries (annotate.web.static.overlay_snippet), or {} when the overlay
// must not start: inside another site's frame (issue #17: a page that frames ours could trick the
// reviewer into pressing Accept, Delete or Send to agent; reading a cross-origin top throws),
// loaded twice (one overlay per document: the first one loads the notes again), no token.
const cfg =
  safely(() =>
    top !== window && top.location.origin !== location.origin
      ? null
      : window.annotateOverlay
        ? window.annotateOverlay.refresh()
        : document.body && JSON.parse(document.getElementById("annotate-config").textContent)
  ) || {};

const API = cfg.api || "/__annotate/api/";
const TOKEN_HEADER = cfg.tokenHeader || "X-Annotate-Token";
const READ_ONLY = !!cfg.readOnly;
const HOST_ID = "annotate-host";
const CONTEXT = 32; // characters of prefix and suffix kept with a quote (docs/data-model.md)
const MAX_QUOTE = 10000;
// Content roots, first match wins (docs/configuration.md); `contentSelector` from the config comes first.
const ROOTS = [cfg.contentSelector, "article.md-content__inner", "main", "[role=main]", "body"];
// Never part of the page text: the overlay, heading permalinks, code-copy and edit buttons.
const SKIP =
  "#" + HOST_ID + ",script,style,noscript,template,.headerlink,.md-code__nav,.md-clipboard," + ".md-content__button";
const FILTERS = [
  ["active", "Not resolved"],
  ["open", "Open"],
  ["in_progress", "In progress"],
  ["addressed", "Addressed"],
  ["resolved", "Resolved"],
  ["all", "All statuses"]
];
const INTENTS = [
  ["comment", "Comment"],
  ["delete", "Delete this text"],
  ["replace", "Replace with…"],
  ["insert", "Insert…"]
];
const HL = { open: "annotate", done: "annotate-addressed", active: "annotate-active" };
const STORE = "annotate:";
const FEED_RETRY = [1000, 2000, 5000, 10000];
// Notes drawn in the panel at a time: a site's thousands would block the page for seconds on
// every keystroke in the search field and every live update (benchmarks/overlay.py measures it).
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
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k !== "value") el.setAttribute(k, v === true ? "" : v);
  }
  el.append(...shown(kids));
  // After the children: a <select>'s options must be there.
  if (props?.value != null) el.value = props.value;
  return el;
}
const field = (id, label, el) => h("div", { class: "field" }, h("label", { for: id, text: label }), el);
const button = (label, onclick, cls, extra) =>
  h("button", { type: "button", class: cls || "", onclick, ...extra }, label);
const session = {
  get: (k) => safely(() => JSON.parse(sessionStorage.getItem(STORE + k))),
  set: (k, v) =>
    safely(() =>
      v == null ? sessionStorage.removeItem(STORE + k) : sessionStorage.setItem(STORE + k, JSON.stringify(v))
    )
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const clamp = (v, lo, hi) => Math.max(lo, Math.min(v, hi));
const short = (s, n) => (s.length > n ? s.slice(0, n - 1) + "…" : s);
const isEditable = (t) =>
  !!t && t.nodeType === 1 && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
const route = (x) => (x.type ? "annotations/" : "page-notes/") + x.id;
const done = (x) => x.status === "addressed" || x.status === "resolved";

// `parent`'s children become `nodes`, in order, moving only what changed place: a row that stays
// keeps its focus and caret, and a press on one of its buttons its click.
function patch(parent, nodes) {
  for (const c of [...parent.children]) if (!nodes.includes(c)) c.remove();
  nodes.forEach((node, i) => {
    if (parent.children[i] !== node) parent.insertBefore(node, parent.children[i]);
  });
}
