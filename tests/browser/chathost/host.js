// A host of MCP App views for the tests (tests/browser/chathost.py): it puts the view's HTML,
// as `resources/read` gave it, into `<iframe sandbox="allow-scripts" srcdoc>` under the
// strictest CSP hosts use, answers `ui/initialize`, sends the tool's input and result, forwards
// the view's `tools/call` and `resources/read` to the real `annotate mcp` (through POST /call of
// the test's own server), and records `ui/message`, `ui/update-model-context` and the rest.
// With `official: true` the official AppBridge of @modelcontextprotocol/ext-apps does the host's
// part instead (bundled by the test setup as window.ExtApps).

const VIEW_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:";
window.recorded = { messages: [], contexts: [], calls: [], sizes: [], links: [], other: [] };

async function server(method, params) {
  const res = await fetch("/call", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ method, params })
  });
  return res.json();
}

function frame(html) {
  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.style.cssText = "border:0;width:100%;height:100%;display:block";
  const csp = `<meta http-equiv="Content-Security-Policy" content="${VIEW_CSP}">`;
  iframe.srcdoc = html.replace(/<head>/i, "<head>" + csp);
  return iframe;
}

function emulated(iframe, { caps, input, result, context }) {
  const post = (message) => iframe.contentWindow.postMessage({ jsonrpc: "2.0", ...message }, "*");
  const answer = (id, result) => post({ id, result });
  const refuse = (id, message) => post({ id, error: { code: -32601, message } });
  addEventListener("message", async (e) => {
    if (e.source !== iframe.contentWindow) return;
    const m = e.data;
    if (!m || m.jsonrpc !== "2.0" || !m.method) return;
    const p = m.params || {};
    switch (m.method) {
      case "ui/initialize":
        return answer(m.id, {
          protocolVersion: p.protocolVersion,
          hostInfo: { name: "test-host", version: "1" },
          hostCapabilities: caps,
          hostContext: context
        });
      case "ui/notifications/initialized":
        post({ method: "ui/notifications/tool-input", params: { arguments: input } });
        post({ method: "ui/notifications/tool-result", params: result });
        return;
      case "tools/call":
      case "resources/read":
        window.recorded.calls.push(p.name || p.uri);
        return answer(m.id, await server(m.method, p));
      case "ui/message":
        window.recorded.messages.push(p);
        return answer(m.id, {});
      case "ui/update-model-context":
        if (!caps.updateModelContext) return refuse(m.id, "ui/update-model-context is not supported");
        window.recorded.contexts.push(p);
        return answer(m.id, {});
      case "ui/open-link":
        window.recorded.links.push(p.url);
        return answer(m.id, {});
      case "ui/notifications/size-changed":
        window.recorded.sizes.push(p);
        return;
      default:
        window.recorded.other.push(m.method);
        if (m.id != null) refuse(m.id, `${m.method} is not supported`);
    }
  });
}

async function official(iframe, { caps, input, result, context }) {
  const { AppBridge, PostMessageTransport } = window.ExtApps;
  const bridge = new AppBridge(null, { name: "test-host (AppBridge)", version: "1" }, caps, { hostContext: context });
  bridge.oncalltool = async (params) => {
    window.recorded.calls.push(params.name);
    return server("tools/call", params);
  };
  bridge.onmessage = async (params) => {
    window.recorded.messages.push(params);
    return {};
  };
  bridge.onupdatemodelcontext = async (params) => {
    window.recorded.contexts.push(params);
    return {};
  };
  bridge.onsizechange = (params) => window.recorded.sizes.push(params);
  bridge.oninitialized = async () => {
    await bridge.sendToolInput({ arguments: input });
    await bridge.sendToolResult(result);
  };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
}

// Shows the view: {html, caps, input, result, context, official}.
window.hostStart = async (setup) => {
  window.openedAt = performance.now();
  const iframe = frame(setup.html);
  document.body.append(iframe);
  // The frame's window exists once it is in the document; its script runs once srcdoc loads.
  if (setup.official) await official(iframe, setup);
  else emulated(iframe, setup);
};
