// -- the host: JSON-RPC 2.0 over postMessage (MCP Apps, docs/chat.md). The view is the client:
// it asks (`ui/initialize`, `tools/call`, `ui/message`…), the host answers and notifies
// (`ui/notifications/tool-result`…). Nothing else leaves the frame: no fetch, no storage.

const PROTOCOL = "2026-01-26";
const MAX_HEIGHT = 720; // the frame's height at most: the page scrolls inside it

const link = (() => {
  let next = 1;
  const waiting = new Map();
  const listeners = {};
  const post = (message) => window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");
  addEventListener("message", (e) => {
    if (e.source !== window.parent) return;
    const m = e.data;
    if (m?.jsonrpc !== "2.0") return;
    if (m.method) {
      // A request of the host's (`ping`, `ui/resource-teardown`) needs only an answer.
      if (m.id != null) post({ id: m.id, result: {} });
      for (const fn of listeners[m.method] || []) fn(m.params || {});
      return;
    }
    const call = waiting.get(m.id);
    if (!call) return;
    waiting.delete(m.id);
    if (m.error) call.fail(new Error(m.error.message || "the host refused the request"));
    else call.ok(m.result || {});
  });
  return {
    caps: {}, // hostCapabilities from ui/initialize
    request: (method, params) =>
      new Promise((ok, fail) => {
        const id = next++;
        waiting.set(id, { ok, fail });
        post({ id, method, params });
      }),
    notify: (method, params) => post({ method, params }),
    on: (method, fn) => {
      listeners[method] = [...(listeners[method] || []), fn];
    }
  };
})();

// A tool of our server, through the host: its structured answer, or an Error with its text.
async function callTool(name, args) {
  const r = await link.request("tools/call", { name, arguments: args });
  if (r.isError) {
    const text = (r.content || []).map((c) => c.text || "").join(" ");
    throw new Error(text || `${name} failed`);
  }
  return r.structuredContent || {};
}

// Send to agent and Ask agent now (annotate/chat.py writes `message`): the review is in the store
// either way; the message tells the agent. One note goes into the model's context where the host
// takes context updates, else it is a message that starts a turn.
function lane(body, message) {
  const content = [{ type: "text", text: message }];
  const ask = Array.isArray(body?.ids);
  const say = () => link.request("ui/message", { role: "user", content });
  const sent = ask && link.caps.updateModelContext ? link.request("ui/update-model-context", { content }) : say();
  return sent.catch(() => (ask ? say() : null)).catch(() => null);
}
