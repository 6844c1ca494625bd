// -- highlights

// What is painted (of one type): not resolved, and not text deleted as the reviewer asked (issue #14).
const pageAnnotations = (type) =>
  S.items.filter((a) => a.type === type && a.status !== "resolved" && a.anchorState !== "removed");
function paint() {
  const groups = { open: [], done: [], active: [] };
  for (const a of pageAnnotations("text")) {
    const r = textRange(a);
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

on("notes page active", paint);

function paintBoxes() {
  boxes.replaceChildren();
  for (const a of pageAnnotations("element")) {
    const el = findElement(a.elementSelector);
    if (!el) continue;
    const r = el.getBoundingClientRect();
    const box = h("div", { class: "box" + (done(a) ? " done" : "") + (a.id === S.active ? " active" : "") });
    boxes.append(place(box, r, 2));
  }
}

// A box `d` pixels around the rectangle `r`.
function place(el, r, d) {
  el.style.cssText = `top:${r.top - d}px;left:${r.left - d}px;width:${r.width + 2 * d}px;height:${r.height + 2 * d}px`;
  return el;
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
  for (const a of pageAnnotations("text")) {
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
  set("active", { active: item.id });
  // A text note's range or an element note's element (a page note has neither).
  const rect = (item.type === "element" ? findElement(item.elementSelector) : textRange(item))?.getBoundingClientRect();
  if (rect) window.scrollBy({ top: rect.top - innerHeight / 3, behavior: "instant" });
}

// -- pointing (show_annotation, issue #19): the agent says "look here". The note's passage or
// element is scrolled into view and flashed; where the page shows no passage (a page note, a
// resolved note, text deleted as asked or not found), its row in the panel is.

const FLASH_MS = 1600;
const ring = h("div", { class: "ring", hidden: true });
root.append(ring);
let ringEnd = 0;

function pointAt(item) {
  let at =
    pageAnnotations(item.type).includes(item) &&
    (item.type === "element" ? findElement(item.elementSelector) : textRange(item));
  if (at) {
    show(item);
    flash(at);
  }
  // The panel's code first (it loads on first use): its row is what is shown.
  else
    chunk("panel").then(
      (p) => {
        const opening = !S.open;
        session.set("panel", true);
        session.set("tab", "page");
        if (!visible([item]).length) p.filter.value = S.filter = "all";
        set("panel view active", { open: true, tab: "page", drawn: LIST_STEP, active: item.id });
        if (opening) sync(); // what only an open panel loads (as setPanel, without taking the focus)
        at = p.rows.get(item.id);
        at?.scrollIntoView({ block: "nearest" });
        flash(at);
      },
      () => {}
    );
}

function flash(at) {
  if (!at) return;
  ring.hidden = true;
  place(ring, at.getBoundingClientRect(), 4);
  void ring.offsetWidth; // shown again after a style pass: its animation starts over
  ring.hidden = false;
  clearTimeout(ringEnd);
  ringEnd = setTimeout(() => (ring.hidden = true), FLASH_MS);
}
