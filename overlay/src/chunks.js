// -- what loads on first use (issue #31): the panel, the screenshot capture

// A chunk comes from where this script came from (`annotate serve`, `annotate proxy`, `mkdocs
// serve` alike), pinned to its version (`CHUNKS`, written by the server: cached for good).
const SCRIPT_URL = document.currentScript?.src;
const chunkWaits = {};
const chunkLoads = {};

// The chunk `name`'s names (a promise): its script calls `annotateOverlay.chunk(name, make)`,
// and `make` gets the names it uses from here.
function chunk(name) {
  // The chat view (annotate/chatview.py) makes no request: its chunks are functions already.
  if (typeof CHUNKS[name] === "function") chunkLoads[name] ||= Promise.resolve(CHUNKS[name](chunkScope()));
  chunkLoads[name] ||= new Promise((resolve, reject) => {
    chunkWaits[name] = (make) => resolve(make(chunkScope()));
    const script = h("script", {
      src: new URL(name + ".js?v=" + CHUNKS[name], SCRIPT_URL || new URL("../overlay/", new URL(API, location.href)))
        .href,
      onerror: () => {
        delete chunkLoads[name];
        reject(new Error("could not load the overlay's " + name));
      }
    });
    document.head.append(script);
  });
  return chunkLoads[name];
}

// Whether this overlay can take screenshots (not in the chat view, which has no capture chunk).
const canShoot = () => "capture" in CHUNKS;

// Called by a chunk's script: only a chunk this overlay asked for, once.
function chunkLoaded(name, make) {
  const wait = chunkWaits[name];
  delete chunkWaits[name];
  wait?.(make);
}

// The panel: open → load it, then open it; closed and never loaded → nothing to close.
function setPanel(open) {
  if (open || S.open) act("Opening the panel", () => chunk("panel").then((p) => p.setPanel(open)));
}
