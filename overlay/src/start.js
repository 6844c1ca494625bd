// -- events

const fromOverlay = (e) => e.composedPath().includes(host);

function onKey(e) {
  const target = e.composedPath()[0];
  const typing = isEditable(target);
  const inside = fromOverlay(e);
  if (e.key === "Escape") {
    if (typing && !inside) return; // the page's own field (e.g. search) keeps its Escape
    if (inside && popup.contains(target) && !popup.hidden) closePopup(true);
    else if (inside && panel.contains(target) && Object.values(S.forms).some(Boolean)) {
      set("forms", { forms: {} });
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
  if (typing) return; // shortcuts never fire while typing (docs/overlay.md)
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
  place(outline, el.getBoundingClientRect(), 0);
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
  if (READ_ONLY || (sel && !sel.isCollapsed) || e.target.closest("a,button,input,textarea,select,label,summary"))
    return;
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
  // A page restored with its panel open (sessionStorage) draws it once its code is there.
  if (S.open)
    chunk("panel").then(
      () => set("panel", {}),
      () => {}
    );
  applyTheme();
  new MutationObserver(applyTheme).observe(document.body, {
    attributes: true,
    attributeFilter: ["data-md-color-scheme"]
  });
  matchMedia("(prefers-color-scheme: dark)").addEventListener("change", applyTheme);
  addEventListener("keydown", onKey, true);
  // Keys typed in the overlay's fields are not the page's shortcuts (Material's `.`, `n`, `s`…).
  for (const type of ["keydown", "keyup", "keypress"])
    root.addEventListener(type, (e) => {
      if (isEditable(e.composedPath()[0])) e.stopPropagation();
    });
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
  const cursor = api("GET", "changes", undefined, feedAbort.signal).then(
    (r) => r.cursor,
    () => null
  );
  startPage()
    .then(() => cursor)
    .then(follow);
  // Material's instant navigation swaps the content without a reload (its `document$`
  // observable announces each new page): follow it.
  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(() => startPage());
  }
}

if (cfg.token || cfg.person) {
  window.annotateOverlay = {
    version: cfg.version || "",
    refresh: () => startPage(true),
    pageText: () => textMap().text,
    chunk: chunkLoaded
  };
  // After the page's own `load` and its handlers (a task of its own): the overlay's first
  // requests and its page-text walk must not hold back the page (benchmarks/proxy.py compares
  // `loadEventEnd` with and without the overlay).
  if (document.readyState === "complete") start();
  else addEventListener("load", () => setTimeout(start), { once: true });
}
