// -- "Changed since sent" (issue #29 item 3), in the panel chunk: once the last review is done,
// what changed in each Markdown file its notes pointed into since it was sent. Asked once per
// review (the server keeps the files as they were sent); the word diff comes as text,
// `[-removed-]{+added+}`, drawn here as <del>/<ins> text nodes, never as markup.

const sinceSent = h("section", { class: "since-sent", "aria-label": "Changed since sent", hidden: true });
let sinceFor = null;

function renderSince(last) {
  const id = last?.status === "done" ? last.id : null;
  if (id === sinceFor) return;
  sinceFor = id;
  sinceSent.hidden = true;
  sinceSent.replaceChildren();
  if (!id) return;
  api("GET", `reviews/${encodeURIComponent(id)}/changes`).then(
    (got) => {
      if (sinceFor !== id || !got.files.length) return;
      sinceSent.replaceChildren(h("h3", { text: "Changed since sent" }), ...got.files.map(fileChange));
      sinceSent.hidden = false;
    },
    () => {
      sinceFor = null; // asked again at the next redraw
    }
  );
}

function fileChange(f) {
  const what = f.missing ? "deleted" : f.changed ? `+${f.added} −${f.removed} words` : "unchanged";
  const name = [h("code", { text: f.path }), ` ${what}`];
  if (!f.diff) return h("div", { class: "file" }, ...name);
  return h(
    "details",
    { class: "file" },
    h("summary", {}, ...name),
    h("pre", { class: "diff msg" }, ...diffPieces(f.diff))
  );
}

function diffPieces(text) {
  return text
    .split(/(\[-[\s\S]*?-\]|\{\+[\s\S]*?\+\})/)
    .filter(Boolean)
    .map((p) =>
      p.startsWith("[-") && p.endsWith("-]")
        ? h("del", { text: p.slice(2, -2) })
        : p.startsWith("{+") && p.endsWith("+}")
          ? h("ins", { text: p.slice(2, -2) })
          : p
    );
}
