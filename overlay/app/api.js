// -- the API, through the host: the chat view's replacement of overlay/src/api.js. Each call is
// a `tools/call` of the app-only tool `chat_api` (annotate/chatview.py), which runs it through the
// web app's own route; no request leaves the view. A failed call throws an Error whose message
// the toasts show, as the browser's does.
async function api(method, path, body, signal) {
  const aborted = () => new DOMException("The call was aborted", "AbortError");
  if (signal?.aborted) throw aborted();
  let r;
  try {
    r = await bridge.callTool("chat_api", body === undefined ? { method, path } : { method, path, body });
  } catch (e) {
    throw new Error(`Cannot reach the annotate server: ${e.message}`);
  }
  if (signal?.aborted) throw aborted();
  if (r.status >= 400) {
    const why = r.body?.error ? r.body.error : `HTTP ${r.status}`;
    throw new Error(`${why} (${r.status})`);
  }
  if (r.message) bridge.lane(body, r.message);
  return r.body;
}
