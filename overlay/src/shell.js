// -- the shadow UI

const host = h("div", { id: HOST_ID, "data-annotate": cfg.version || "" });
// Zero size, fixed: adding it shifts nothing on the page (annotate.css says the same).
host.style.cssText = "position:fixed;top:0;left:0;width:0;height:0;z-index:2147483000;";
const root = host.attachShadow({ mode: "open" });
root.append(h("style", { text: SHADOW_CSS })); // src/shadow.css, joined in by the server

const toggle = button("", () => setPanel(!S.open), "toggle", {
  "aria-label": "Review panel",
  "aria-expanded": "false",
  "aria-controls": "annotate-panel",
  title: "Review panel (Ctrl+Shift+.)"
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

// The toggle's count of notes not resolved on this page, drawn before the panel ever loads.
on("notes page panel", () => {
  const n = unresolved([...S.notes, ...S.items]);
  toggleCount.textContent = n ? String(n) : "";
  toggle.setAttribute("aria-expanded", String(S.open));
});

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
