// -- the view: connect to the host, show the page the tool result names, run the overlay on it

const SITE = "https://site.invalid"; // resolves the page's relative links; never requested
const bar = document.getElementById("annotate-chat-bar");
const pageBox = document.getElementById("annotate-page");
// The view's `location` for the overlay: the page shown, and navigation within the view.
const here = { pathname: "/", origin: "null", assign: (url) => go(url) };
let started = false;

// What of the page may not come along: anything that runs, loads or navigates.
const DROP = "script,iframe,frame,frameset,object,embed,link,meta,base,style,template";
const LOADS = /^(src|srcset|poster|background|action|formaction|ping|xlink:href)$/;

// The page's content as inert nodes (DOMParser runs nothing), without scripts, event handlers
// or URLs that would load something; its text stays as readers see it.
function pageNodes(html) {
  const doc = new DOMParser().parseFromString(`<body>${html}</body>`, "text/html");
  for (const el of doc.querySelectorAll(DROP)) el.remove();
  for (const el of doc.body.querySelectorAll("*")) {
    for (const { name, value } of [...el.attributes]) {
      const n = name.toLowerCase();
      const v = value.trim();
      if (
        n.startsWith("on") ||
        (LOADS.test(n) && !v.startsWith("data:")) ||
        (n === "href" && (el.localName === "a" ? /^javascript:/i.test(v) : !v.startsWith("#"))) ||
        (n === "style" && /url\s*\(/i.test(v))
      )
        el.removeAttribute(name);
    }
  }
  return [...doc.body.childNodes];
}

function showPage(page) {
  here.pathname = page.pageUrl;
  document.title = page.title || page.pageUrl;
  bar.querySelector(".title").textContent = page.title || page.pageUrl;
  bar.querySelector(".path").textContent = page.path || page.pageUrl;
  pageBox.replaceChildren(...pageNodes(page.html || ""));
  scrollTo(0, 0);
}

async function go(url) {
  try {
    showPage(await callTool("chat_page", { pageUrl: url }));
    if (started) window.annotateOverlay.refresh();
  } catch (e) {
    bar.querySelector(".title").textContent = `Could not show ${url}: ${e.message}`;
  }
}

// Links: a page of the site opens in the view, another site through the host (if it can).
pageBox.addEventListener("click", (e) => {
  const a = e.target.closest("a[href]");
  if (!a || e.defaultPrevented) return;
  e.preventDefault();
  const href = a.getAttribute("href");
  if (href.startsWith("#")) {
    document.getElementById(decodeURIComponent(href.slice(1)))?.scrollIntoView();
    return;
  }
  const url = new URL(href, SITE + here.pathname);
  if (url.origin === SITE) go(url.pathname);
  else if (link.caps.openLinks) link.request("ui/open-link", { url: url.href }).catch(() => null);
});

function theme(context) {
  if (context?.theme)
    document.body.setAttribute("data-md-color-scheme", context.theme === "dark" ? "slate" : "default");
}

function startOverlay(version) {
  const config = document.createElement("script");
  config.type = "application/json";
  config.id = "annotate-config";
  config.textContent = JSON.stringify({ token: "chat-view", api: "", version, contentSelector: "#annotate-page" });
  document.body.append(config);
  overlay(window, here, { callTool, lane });
  started = true;
}

function reportSize() {
  const size = () =>
    link.notify("ui/notifications/size-changed", {
      width: document.documentElement.scrollWidth,
      height: Math.min(document.documentElement.scrollHeight, MAX_HEIGHT)
    });
  new ResizeObserver(size).observe(document.documentElement);
}

async function main(version) {
  let resulted;
  const result = new Promise((done) => {
    resulted = done;
  });
  let input = {};
  link.on("ui/notifications/tool-input", (p) => {
    input = p.arguments || {};
  });
  link.on("ui/notifications/tool-result", (p) => resulted(p));
  link.on("ui/notifications/host-context-changed", theme);
  const init = await link.request("ui/initialize", {
    appInfo: { name: "mkdocs-annotate", version },
    appCapabilities: {},
    protocolVersion: PROTOCOL
  });
  link.caps = init.hostCapabilities || {};
  theme(init.hostContext);
  link.notify("ui/notifications/initialized", {});
  reportSize();
  const r = await result;
  if (r.isError) throw new Error((r.content || []).map((c) => c.text || "").join(" "));
  const opened = r.structuredContent || {};
  const args = opened.pageUrl ? { pageUrl: opened.pageUrl } : input;
  showPage(await callTool("chat_page", args));
  startOverlay(version);
}

// The view's entry: the joined script ends by calling this with {version}.
const view = (info) =>
  main(info.version).catch((e) => {
    bar.querySelector(".title").textContent = `Could not show the page: ${e.message}`;
  });
