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
