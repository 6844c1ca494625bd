// -- the API

// A failed call throws an Error whose message the toasts show: the server's `error` and the status.
async function api(method, path, body, signal) {
  // Team mode has no token: the browser's sign-in cookie (or the SSO proxy) names the person.
  const init = { method, headers: cfg.token ? { [TOKEN_HEADER]: cfg.token } : {}, cache: "no-store", signal };
  if (body !== undefined) {
    // A Blob (a screenshot) is sent as itself, with its type.
    const raw = body instanceof Blob;
    init.headers["Content-Type"] = raw ? body.type : "application/json";
    init.body = raw ? body : JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(API + path, init);
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new Error("Cannot reach the annotate server");
  }
  if (res.status === 204) return null;
  const json = (res.headers.get("content-type") || "").includes("json");
  const data = await (json ? res.json() : res.text()).catch(() => null);
  if (!res.ok) {
    const why = data?.error ? data.error : `HTTP ${res.status}`;
    throw new Error(`${why} (${res.status})`);
  }
  return data;
}
