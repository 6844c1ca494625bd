// The review view in a plain browser tab (`annotate chat`, docs/chat.md). This page is the host:
// it frames the view's HTML (`resources/read` of the real server) as the strictest hosts do
// (`<iframe sandbox="allow-scripts" srcdoc>`, no network), answers `ui/initialize`, sends the
// tool's input and result, forwards the view's `tools/call` and `resources/read` to the server
// (POST call, same origin), and lists every message in both directions beside the view.

const config = JSON.parse(document.getElementById("annotate-chat-config").textContent);
const VIEW_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:";
const CAPS = { serverTools: {}, message: { text: {} }, updateModelContext: { text: {} }, openLinks: {} };
const LOG_CHARS = 2000;
// Every message, for a reader of the page and for the tests (tests/browser/test_chat.py).
window.hostLog = [];

function show(direction, message) {
  window.hostLog.push({ direction, message });
  const item = document.createElement("li");
  const name = message.method || `answer to #${message.id}`;
  if (message.method === "ui/message") item.className = "message";
  const title = document.createElement("strong");
  title.textContent = `${direction} ${name}`;
  const body = document.createElement("pre");
  const text = JSON.stringify(message.params || message.result || message.error || {}, null, 1);
  body.textContent = text.length > LOG_CHARS ? `${text.slice(0, LOG_CHARS)}…` : text;
  item.append(title, body);
  const log = document.getElementById("log");
  log.append(item);
  item.scrollIntoView({ block: "nearest" });
}

async function server(method, params) {
  const res = await fetch("call", {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Annotate-Chat": config.secret },
    body: JSON.stringify({ method, params })
  });
  const answer = await res.json();
  if (!res.ok) throw new Error(answer.error || `${method} failed (${res.status})`);
  return answer;
}

function frame(html) {
  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.title = "Review view";
  const csp = `<meta http-equiv="Content-Security-Policy" content="${VIEW_CSP}">`;
  iframe.srcdoc = html.replace(/<head>/i, `<head>${csp}`);
  return iframe;
}

function host(iframe, input, result) {
  const post = (message) => {
    const full = { jsonrpc: "2.0", ...message };
    show("host → view", full);
    iframe.contentWindow.postMessage(full, "*");
  };
  const answer = (id, result) => post({ id, result });
  const refuse = (id, code, message) => post({ id, error: { code, message } });
  addEventListener("message", async (e) => {
    if (e.source !== iframe.contentWindow) return;
    const m = e.data;
    if (m?.jsonrpc !== "2.0") return;
    show("view → host", m);
    if (!m.method) return;
    const p = m.params || {};
    switch (m.method) {
      case "ui/initialize":
        return answer(m.id, {
          protocolVersion: p.protocolVersion,
          hostInfo: { name: "annotate chat", version: config.version },
          hostCapabilities: CAPS,
          hostContext: { theme: matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light" }
        });
      case "ui/notifications/initialized":
        post({ method: "ui/notifications/tool-input", params: { arguments: input } });
        post({ method: "ui/notifications/tool-result", params: result });
        return;
      case "tools/call":
      case "resources/read":
        try {
          return answer(m.id, await server(m.method, p));
        } catch (error) {
          return refuse(m.id, -32603, String(error.message || error));
        }
      case "ui/open-link":
        window.open(p.url, "_blank", "noopener");
        return answer(m.id, {});
      case "ui/message":
      case "ui/update-model-context":
        // No model here: the message is shown (highlighted in the list), as a chat would post it.
        return answer(m.id, {});
      case "ui/notifications/size-changed":
        return;
      default:
        if (m.id != null) refuse(m.id, -32601, `${m.method} is not supported by this host`);
    }
  });
}

async function start() {
  const input = {};
  if (config.pageUrl) input.pageUrl = config.pageUrl;
  if (config.path) input.path = config.path;
  const read = await server("resources/read", { uri: config.resource });
  const result = await server("tools/call", { name: "open_review", arguments: input });
  show("host → server", { method: "tools/call", params: { name: "open_review", arguments: input } });
  if (result.isError) {
    document.getElementById("view").textContent = result.content.map((c) => c.text).join("\n");
    return;
  }
  const iframe = frame(read.contents[0].text);
  // The frame's window exists once it is in the document; its script runs once srcdoc loads.
  document.getElementById("view").append(iframe);
  host(iframe, input, result);
}

start().catch((error) => {
  document.getElementById("view").textContent = `The view could not start: ${error.message || error}`;
});
