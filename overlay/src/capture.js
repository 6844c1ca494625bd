// -- screenshots on notes (issue #30): the chunk `capture`, loaded on first use with snapdom
// (src/vendor/snapdom.js, MIT), which draws a part of the page into a canvas.

const SHOT_MAX = 1024 * 1024; // the server's limit (annotate/screenshots.py)
const SHOT_PAD = 8; // CSS pixels kept around a passage

// The nearest element around a passage that is not inline: what is drawn, then cropped.
function blockOf(range) {
  let el = range.commonAncestorContainer;
  if (el.nodeType !== 1) el = el.parentElement;
  while (el.parentElement && el !== document.body && getComputedStyle(el).display.startsWith("inline"))
    el = el.parentElement;
  return el;
}

// What the page shows behind `el`: its first ancestor's background that is not transparent.
function backdrop(el) {
  for (let at = el; at; at = at.parentElement) {
    const color = getComputedStyle(at).backgroundColor;
    if (color && color !== "transparent" && !/^rgba\(.*,\s*0\)$/.test(color)) return color;
  }
  return "#fff";
}

// A passage (a Range) or an element as the reviewer sees it, at device pixel ratio 1: a WebP
// Blob of at most SHOT_MAX. The overlay (its host and the page's highlights of the notes) is
// hidden meanwhile, so the image shows the page alone.
async function capture(target) {
  const el = target instanceof Range ? blockOf(target) : target;
  const lit = Object.values(HL).map((name) => [name, CSS.highlights.get(name)]);
  const was = host.style.visibility;
  host.style.visibility = "hidden";
  for (const [name] of lit) CSS.highlights.delete(name);
  let canvas;
  let box;
  let rect;
  try {
    box = el.getBoundingClientRect();
    rect = target.getBoundingClientRect();
    canvas = await vendor_snapdom.toCanvas(el, { scale: 1, dpr: 1, backgroundColor: backdrop(el) });
  } finally {
    host.style.visibility = was;
    for (const [name, hl] of lit) if (hl) CSS.highlights.set(name, hl);
  }
  const pad = target instanceof Range ? SHOT_PAD : 0;
  const x = clamp(Math.floor(rect.left - box.left - pad), 0, canvas.width - 1);
  const y = clamp(Math.floor(rect.top - box.top - pad), 0, canvas.height - 1);
  const w = clamp(Math.ceil(rect.width + 2 * pad), 1, canvas.width - x);
  const hgt = clamp(Math.ceil(rect.height + 2 * pad), 1, canvas.height - y);
  const out = h("canvas", { width: w, height: hgt });
  out.getContext("2d").drawImage(canvas, x, y, w, hgt, 0, 0, w, hgt);
  let blob = null;
  for (const quality of [0.85, 0.5]) {
    blob = await new Promise((done) => out.toBlob(done, "image/webp", quality));
    if (blob?.type !== "image/webp") throw new Error("this browser cannot write WebP images");
    if (blob.size <= SHOT_MAX) return blob;
  }
  const mb = (blob.size / SHOT_MAX).toFixed(1);
  throw new Error(`the screenshot is ${mb} MB, over the 1 MB limit: select a smaller part of the page`);
}

// The note's passage or element on this page, or null when the page does not show it.
const shownTarget = (item) =>
  item.pageUrl === S.page ? (item.type === "element" ? findElement(item.elementSelector) : textRange(item)) : null;

// Attach a screenshot to a saved note ("Screenshot" in the panel, or the popup's draft once
// saved): `blob` when already taken, else its passage or element now.
async function attachShot(item, blob) {
  return act("Screenshot", async () => {
    let shot = blob;
    if (!shot) {
      const target = shownTarget(item);
      if (!target) throw new Error("this page does not show the note's passage or element");
      shot = await capture(target);
    }
    await api("PUT", route(item) + "/screenshot", shot);
    live.textContent = "Screenshot attached";
    toast(`Screenshot attached (${Math.ceil(shot.size / 1024)} kB)`);
    return shot;
  });
}
