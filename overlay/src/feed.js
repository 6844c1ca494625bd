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
      : S.open
        ? api("GET", "summary")
        : null,
    S.open && !READ_ONLY ? api("GET", "reviews") : null
  ]);
  if (gen !== S.gen) return;
  if (writes !== S.writes) {
    // A note was saved or deleted here meanwhile: this answer may predate it. Ask again.
    again = true;
    return;
  }
  const patch = {
    items: a.annotations,
    notes: n.pageNotes,
    anchors: new Map(anchors.anchors.map((x) => [x.id, { ...x, map }])),
    loaded: true,
    offline: false
  };
  if (wantAll) patch.all = { annotations: all[0].annotations, pageNotes: all[1].pageNotes };
  else if (all) {
    const open = (counts) => Object.keys(counts).reduce((sum, s) => sum + (s === "resolved" ? 0 : counts[s]), 0);
    Object.assign(patch, { all: null, allCount: open(all.annotations) + open(all.pageNotes) });
  }
  if (reviews) patch.reviews = reviews.reviews;
  set("notes reviews", patch);
  restoreOnce();
}

let restored = false;
function restoreOnce() {
  if (restored) return;
  restored = true;
  const focus = session.get("focus");
  if (focus?.page === S.page) {
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
  return (
    !!el &&
    !el.closest(SKIP) &&
    (m.type === "characterData" ||
      [...m.addedNodes, ...m.removedNodes].some((n) => n.nodeType !== 1 || !n.matches(SKIP)))
  );
};
let settle = 0;
const observer = new MutationObserver((records) => {
  if (!records.some(changesText)) return;
  S.map = null;
  clearTimeout(settle);
  settle = setTimeout(sync, SETTLE_MS);
});

function startPage(anew) {
  const r = contentRoot();
  if (!anew && S.root === r && S.page === location.pathname) return; // the same page: already loading
  observer.disconnect();
  observer.observe(r, { childList: true, subtree: true, characterData: true });
  closePopup(false, true); // its draft stays, for when the reviewer comes back
  restored = false;
  hideAdder();
  set("page", {
    gen: S.gen + 1,
    root: r,
    page: location.pathname,
    ...pageState()
  });
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
      for (const e of r.events) if (e.action === "show") pointed(e);
      if (r.events.some((e) => e.action !== "show" && relevant(e))) {
        clearTimeout(pending);
        pending = setTimeout(sync, 30);
      }
    } catch (e) {
      if (feedAbort.signal.aborted) return;
      if (!S.offline) set("offline", { offline: true });
      await sleep(FEED_RETRY[Math.min(fails++, FEED_RETRY.length - 1)]);
      cursor = null; // a restarted server may have another store: start afresh
      sync();
    }
  }
}

const relevant = (e) => e.pageUrl === S.page || e.kind === "review" || e.kind === "store" || !e.pageUrl || S.open;

// The agent points at a note (show_annotation, issue #19). A view of its page shows it, once its
// notes are loaded (a note just made may need one more load), and says so once: the agent's
// answer counts the views that did. A view of another page stays still and silent.
const VIEWER = "v" + Math.random().toString(36).slice(2, 12);
async function pointed(e) {
  if (e.pageUrl !== S.page) return;
  const gen = S.gen;
  const find = () => [...S.items, ...S.notes].find((x) => x.id === e.id);
  if (!S.loaded || !find()) await sync();
  const item = find();
  if (!item || gen !== S.gen) return;
  pointAt(item);
  api("POST", "shown", { seq: e.seq, viewer: VIEWER, pageUrl: S.page }).catch(() => {});
}
