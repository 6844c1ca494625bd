// -- elements

const unique = (sel, el) =>
  !!safely(() => {
    const all = document.querySelectorAll(sel);
    return all.length === 1 && all[0] === el;
  });

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
    el.getAttribute("aria-label") ||
    el.getAttribute("alt") ||
    el.getAttribute("title") ||
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
    outerHtmlPreview: short(el.outerHTML, 500)
  };
}

function findElement(sel) {
  if (!sel) return null;
  // Not a valid selector any more: the XPath.
  const el = safely(() => document.querySelector(sel.cssSelector));
  if (el && !host.contains(el)) return el;
  return safely(() => {
    const r = document.evaluate(sel.xpath, document, null, XPathResult.FIRST_ORDERED_NODE_TYPE, null);
    return r.singleNodeValue?.nodeType === 1 ? r.singleNodeValue : null;
  });
}
