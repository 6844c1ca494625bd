// -- state: one owner
//
// Everything the overlay shows comes from S. Other files read S but change it only through
// set(events, patch), which tells the subscribers of each named event (on(events, fn)) once: each
// subscriber redraws its own region (the highlights, the counts, one note's row, the send box).
// What stays outside S is machinery, not state: timers, the loading promise, the feed's abort.
//
// Events: "notes" (a page's notes, anchors, all-pages list, counts), "page" (a new page),
// "panel" (open or closed), "view" (tab, search, status filter, notes shown), "forms" (a note's
// open reply/reopen/delete/edit form), "active" (the note shown on the page), "offline",
// "reviews".

// What each page starts with (startPage in feed.js).
const pageState = () => ({
  map: null, // the page text as measured (measure()); null once the content changed
  items: [], // annotations of this page (every status)
  notes: [], // page notes of this page
  anchors: new Map(), // id -> {start, end, map}: offsets into map.text; start null: could not locate
  active: null, // the item shown on the page
  forms: {}, // item id -> {kind: reply|reopen|delete|edit|new, text}: text is the draft, kept as typed
  drawn: LIST_STEP, // notes the list shows; "Show more" adds LIST_STEP
  loaded: false,
  painted: false
});

const S = {
  page: location.pathname,
  root: null,
  gen: 0, // bumped on every page change: answers for an older page are dropped
  ...pageState(),
  all: null, // {annotations, pageNotes} of every page, while the All pages tab is shown
  allCount: null, // notes not resolved on the whole site, from the summary
  reviews: [],
  open: !!session.get("panel"),
  tab: session.get("tab") || "page",
  query: "",
  filter: "active",
  offline: false,
  failed: null, // the last loading error, said once
  writes: 0 // local changes so far: a load that started before one is stale
};

const subscribers = {};
const on = (events, fn) => {
  for (const e of events.split(" ")) subscribers[e] = [...(subscribers[e] || []), fn];
};

function set(events, patch) {
  Object.assign(S, patch);
  const fns = new Set(events.split(" ").flatMap((e) => subscribers[e] || []));
  keepFocus(() => {
    for (const fn of fns) fn();
  });
}

// Regions redrawn while the reviewer types keep the focus and caret: a field replaced by its new
// version (same id or data-focus) gets them back; a form just opened takes the focus, but never
// from the page or the popup.
function keepFocus(redraw) {
  const focused = root.activeElement;
  if (!panel.contains(focused)) return redraw();
  const { id, selectionStart, selectionEnd } = focused;
  const key = id || focused.getAttribute("data-focus");
  redraw();
  if (focused.isConnected) return;
  const again = key && panel.querySelector(`#${CSS.escape(key)},[data-focus="${CSS.escape(key)}"]`);
  (again || panel.querySelector("textarea[data-focus], .confirm .danger"))?.focus();
  if (again && selectionStart != null) again.setSelectionRange(selectionStart, selectionEnd);
}

// The panel's form for one note (null closes it).
const setForm = (id, form) => set("forms", { forms: { ...S.forms, [id]: form } });

// A note saved or deleted here: in this page's lists and in the all-pages list.
const put = (list, item) => {
  const i = list.findIndex((x) => x.id === item.id);
  if (i < 0) list.push(item);
  else list[i] = item;
};
function upsert(item, anchor) {
  if (anchor) S.anchors.set(item.id, anchor);
  if (item.pageUrl === S.page) put(item.type ? S.items : S.notes, item);
  if (S.all) put(S.all[item.type ? "annotations" : "pageNotes"], item);
  set("notes", { writes: S.writes + 1 });
}

function drop(id) {
  const out = (list) => list.filter((x) => x.id !== id);
  if (S.all) for (const k in S.all) S.all[k] = out(S.all[k]);
  S.anchors.delete(id);
  set("notes", { writes: S.writes + 1, items: out(S.items), notes: out(S.notes) });
}

// -- what the lists show: derived from S

const unresolved = (list) => list.filter((x) => x.status !== "resolved").length;

function visible(list) {
  const q = S.query.trim().toLowerCase();
  return list.filter((x) => {
    if (S.filter === "active" ? x.status === "resolved" : S.filter !== "all" && x.status !== S.filter) return false;
    if (!q) return true;
    const hay = [
      x.note,
      x.selectedText,
      x.suggestion,
      x.pageTitle,
      x.pageUrl,
      x.elementSelector?.description,
      ...(x.replies || []).map((r) => r.message)
    ];
    return hay.join("\n").toLowerCase().includes(q);
  });
}
