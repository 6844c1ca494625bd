// -- the panel

function setPanel(open) {
  session.set("panel", open || null);
  set("panel", { open });
  if (open) {
    sync();
    const tab = panel.querySelector('[aria-selected="true"]');
    if (tab) tab.focus();
  } else {
    toggle.focus();
  }
}

function located(item) {
  if (item.pageUrl !== S.page || !S.loaded || item.status === "resolved" || item.anchorState === "removed") return true;
  if (item.type === "element") return !!findElement(item.elementSelector);
  if (item.type === "text") {
    const at = S.anchors.get(item.id);
    return at?.start != null;
  }
  return true;
}

// `docs/x.md:3-5`; a page note's source is the file alone (docs/data-model.md).
function sourceLabel(src) {
  if (!src?.path) return null;
  const lines =
    src.lineStart == null
      ? ""
      : src.lineStart === src.lineEnd
        ? `:${src.lineStart}`
        : `:${src.lineStart}-${src.lineEnd}`;
  return src.path + lines + (src.lastKnown ? " (last known)" : "");
}

function itemView(item, here) {
  const form = S.forms[item.id];
  const src = sourceLabel(item.source);
  const was = item.originalSource;
  const go = (here || !item.pageUrl || item.pageUrl !== S.page) && (() => goTo(item));
  const meta = h(
    "div",
    { class: "meta" },
    h("span", { class: "badge s-" + item.status, text: item.status.replace("_", " ") }),
    h("span", { class: "kind", text: item.type || "page note" }),
    // Who wrote it (team mode records every author, docs/team.md).
    item.author && h("span", { class: "kind", text: "by " + item.author }),
    src && h("code", { class: "source", title: "Markdown source", text: src }),
    // A passage the agent deleted as asked is no warning (issue #14): it is the note's answer.
    item.anchorState === "removed"
      ? h("span", { class: "removed", text: "deleted as asked" })
      : item.anchorState &&
          item.anchorState !== "anchored" &&
          item.type === "text" &&
          h("span", { class: "flag", text: `source ${item.anchorState}` })
  );
  const body = h(
    "div",
    {
      class: "body",
      tabindex: go && "0",
      role: go && "button",
      "aria-label": go && (here ? "Show on page" : "Go to this note"),
      onclick: go,
      onkeydown: go && ((e) => e.key === "Enter" && e.target === body && go())
    },
    !located(item) && h("p", { class: "orphan", text: "could not locate on this page" }),
    item.type === "text" && h("blockquote", { class: "quote", text: short(item.selectedText || "", 300) }),
    item.type === "element" &&
      h("blockquote", {
        class: "quote element",
        text: item.elementSelector.description || item.elementSelector.cssSelector
      }),
    item.intent === "delete" && h("p", { class: "intent", text: "Delete this text" }),
    (item.intent === "replace" || item.intent === "insert") &&
      h(
        "p",
        { class: "intent" },
        item.intent === "replace" ? "Replace with: " : "Insert: ",
        h("ins", { text: item.suggestion || "" })
      ),
    item.note && h("p", { class: "note", text: item.note }),
    item.replacedText && h("p", { class: "intent" }, "Now reads: ", h("ins", { text: item.replacedText })),
    item.status === "addressed" &&
      was &&
      item.source &&
      was.excerpt != null &&
      item.source.excerpt != null &&
      h(
        "div",
        { class: "quote diff" },
        h("span", { class: "who", text: "Markdown change" }),
        was.excerpt === item.source.excerpt ? "none" : wordDiff(was.excerpt, item.source.excerpt)
      ),
    item.replies?.length > 0 &&
      h(
        "ol",
        { class: "thread", "aria-label": "Replies" },
        item.replies.map((r) =>
          h(
            "li",
            { class: "reply " + r.role },
            h("span", {
              class: "who",
              text: r.role === "agent" ? `Agent${r.author ? " (" + r.author + ")" : ""}` : r.author || "Reviewer"
            }),
            h("span", { class: "msg", text: r.message })
          )
        )
      )
  );
  return h(
    "li",
    { class: "item" + (item.id === S.active ? " active" : ""), "data-id": item.id },
    meta,
    body,
    !READ_ONLY && (form ? formView(item, form) : actions(item))
  );
}

function actions(item) {
  const open = (kind) => () => setForm(item.id, { kind, text: "" });
  return h(
    "div",
    { class: "actions" },
    button("Reply", open("reply")),
    // Issue #30: a screenshot of its passage or element, after the fact.
    !READ_ONLY && canShoot() && button("Screenshot", () => chunk("capture").then((c) => c.attachShot(item))),
    item.status !== "resolved" && [
      button("Accept", () => change("Accepting", route(item) + "/status", { action: "accept" })),
      button("Ask agent now", () => sendReview({ mode: "review", ids: [item.id] }))
    ],
    done(item) && button("Reopen", open("reopen")),
    // Team mode: a note's author or a maintainer edits or deletes it (the server refuses others).
    (!cfg.person || cfg.person.role === "maintainer" || item.author === cfg.person.name) && [
      button("Edit", () => editItem(item)),
      button("Delete", open("delete"), "danger")
    ]
  );
}

// Send to agent, and Ask agent now (issue #14: one note, in review mode, outside the batch;
// the answer comes back as a reply through the change feed).
const sendReview = (body, then) =>
  act("Sending to the agent", async () => {
    const review = await api("POST", "reviews", body);
    if (then) then();
    const n = review.annotations.length + review.pageNotes.length;
    toast(`Sent ${n} note${n === 1 ? "" : "s"} to the agent (${review.mode})`);
    set("reviews", { reviews: [...S.reviews, review] });
    verdictSent(review);
  });

function goTo(item) {
  if (item.pageUrl === S.page) {
    show(item);
    return;
  }
  session.set("focus", { page: item.pageUrl, id: item.id });
  location.assign(item.pageUrl);
}

async function copyMarkdown() {
  await act("Copying", async () => {
    const text = await api("GET", "export?format=markdown");
    try {
      await navigator.clipboard.writeText(text);
    } catch (e) {
      // No clipboard permission: the old way.
      const area = h("textarea", { class: "sr" });
      area.value = text;
      root.append(area);
      area.select();
      const ok = document.execCommand("copy");
      area.remove();
      if (!ok) throw new Error("the browser refused access to the clipboard");
    }
    toast("Copied as Markdown");
  });
}

// -- the panel's regions: built once, each redrawn by the events that change it (state.js)

const view = (patch) => set("view", { drawn: LIST_STEP, ...patch });
const tabButton = (id) =>
  h("button", {
    type: "button",
    role: "tab",
    id: "annotate-tab-" + id,
    "aria-controls": "annotate-list",
    onclick: () => {
      session.set("tab", id);
      view({ tab: id });
      if (id === "all" && !S.all) sync();
    }
  });
const tabs = { page: tabButton("page"), all: tabButton("all") };
const offlineBadge = h("span", { class: "badge offline", text: "offline, retrying" });
const filter = h(
  "select",
  { id: "annotate-filter", "aria-label": "Status", onchange: (e) => view({ filter: e.target.value }) },
  FILTERS.map(([v, l]) => h("option", { value: v, text: l }))
);
const newNote = h("div");
const list = h("div", { id: "annotate-list", class: "list", role: "tabpanel" });
const mode = h(
  "select",
  { id: "annotate-mode" },
  h("option", { value: "edit", text: "Edit: apply the changes" }),
  h("option", { value: "review", text: "Review: answer, change nothing yet" })
);
// The verdict sent with the review (issue #30 item 5); none by default.
const decision = h(
  "select",
  { id: "annotate-decision" },
  ...[
    ["", "None"],
    ["approve", "Approve"],
    ["approve_with_notes", "Approve with notes"],
    ["request_changes", "Request changes"]
  ].map(([value, text]) => h("option", { value, text }))
);
const message = h("input", { id: "annotate-message", type: "text", placeholder: "Optional" });
const reviewStatus = h("p", { class: "review-status" });

panel.append(
  ...shown([
    h(
      "header",
      {},
      h("h2", { text: "Review" }),
      READ_ONLY && h("span", { class: "badge", text: "read-only" }),
      offlineBadge,
      button("×", () => setPanel(false), "close", { "aria-label": "Close" })
    ),
    h("div", { role: "tablist", "aria-label": "Which notes" }, tabs.page, tabs.all),
    h(
      "div",
      { class: "tools" },
      h("input", {
        type: "search",
        id: "annotate-search",
        "aria-label": "Search notes",
        placeholder: "Search",
        oninput: (e) => view({ query: e.target.value })
      }),
      filter
    ),
    h(
      "div",
      { class: "actions" },
      !READ_ONLY && button("Add page note", () => setForm("__new", { kind: "new", text: "" })),
      button("Copy as Markdown", copyMarkdown)
    ),
    newNote,
    list,
    !READ_ONLY &&
      h(
        "section",
        { class: "send", "aria-label": "Send to agent" },
        field("annotate-mode", "Mode", mode),
        field("annotate-decision", "Verdict", decision),
        field("annotate-message", "Message", message),
        button(
          "Send to agent",
          () => {
            const body = { mode: mode.value };
            if (decision.value) body.decision = decision.value;
            if (message.value.trim()) body.message = message.value;
            sendReview(body, () => {
              message.value = "";
            });
          },
          "primary"
        ),
        reviewStatus,
        sinceSent
      )
  ])
);

// The tabs' counts and which tab is selected (the toggle's count: shell.js).
function renderCounts() {
  const n = unresolved([...S.notes, ...S.items]);
  panel.hidden = !S.open;
  offlineBadge.hidden = !S.offline;
  const all = S.all ? unresolved([...S.all.pageNotes, ...S.all.annotations]) : (S.allCount ?? n);
  for (const [id, label, count] of [
    ["page", "This page", n],
    ["all", "All pages", all]
  ]) {
    const tab = tabs[id];
    tab.textContent = `${label} (${count})`;
    tab.setAttribute("aria-selected", String(S.tab === id));
    tab.tabIndex = S.tab === id ? 0 : -1;
  }
  list.setAttribute("aria-labelledby", "annotate-tab-" + S.tab);
}

// The new page note's form.
function renderNewNote() {
  const form = S.forms.__new;
  if (!form) newNote.replaceChildren();
  else if (!newNote.firstChild) newNote.append(formView({ id: "__new" }, form));
}

function renderSend() {
  const last = S.reviews[S.reviews.length - 1];
  let status = "No review sent yet.";
  if (last) {
    const time = (iso) => new Date(iso).toLocaleTimeString();
    const head = `Last review (${last.mode}, sent ${time(last.createdAt)})`;
    status =
      last.status === "done"
        ? `${head} is done: every note in it is addressed or resolved.`
        : last.pickedUpAt
          ? `${head} was picked up by the agent at ${time(last.pickedUpAt)}.`
          : `${head} is waiting for the agent.`;
  }
  reviewStatus.textContent = status;
  renderSince(last);
}

// The list: the first S.drawn notes in the order shown, the rest behind "Show more". A note's
// row is drawn again only when what it shows changed (its data, its form, active, located); the
// rows, the groups' headings and "Show more" that stay are left where they are (patch).
let rows = new Map(); // id -> its <li>, with .sig: what it shows
const groupEls = new Map(); // a group's heading -> [<h3>, <ul>]
const more = button("", () => view({ drawn: S.drawn + LIST_STEP }), "more", { id: "annotate-more" });
const empty = h("p", { class: "empty" });
function renderList() {
  let room = S.drawn;
  let left = 0;
  const draw = (xs) => {
    const kept = xs.slice(0, Math.max(0, room));
    room -= kept.length;
    left += xs.length - kept.length;
    return kept;
  };
  const groups = []; // [heading, notes, here]
  if (S.tab === "page") {
    groups.push(["Page notes", draw(visible(S.notes)), true], ["On this page", draw(visible(S.items)), true]);
  } else {
    const pages = new Map();
    for (const x of visible(S.all ? [...S.all.pageNotes, ...S.all.annotations] : [...S.notes, ...S.items])) {
      if (!pages.has(x.pageUrl)) pages.set(x.pageUrl, []);
      pages.get(x.pageUrl).push(x);
    }
    for (const [url, notes] of [...pages].sort((p, q) => p[0].localeCompare(q[0]))) {
      groups.push([[url, notes.find((x) => x.pageTitle)?.pageTitle || url], draw(notes), false]);
    }
  }
  const old = rows;
  rows = new Map();
  const kids = [];
  for (const [head, notes, here] of groups) {
    if (!notes.length) continue;
    const key = String(head);
    if (!groupEls.has(key)) {
      const title =
        typeof head === "string" ? head : [h("a", { href: head[0], text: head[1] }), " ", h("code", { text: head[0] })];
      groupEls.set(key, [h("h3", {}, title), h("ul")]);
    }
    const [h3, ul] = groupEls.get(key);
    const lis = notes.map((x) => {
      const sig = JSON.stringify([x, S.page, S.forms[x.id]?.kind, x.id === S.active, located(x), here]);
      let li = old.get(x.id);
      if (li?.sig !== sig) li = Object.assign(itemView(x, here), { sig });
      rows.set(x.id, li);
      return li;
    });
    patch(ul, lis);
    kids.push(h3, ul);
  }
  if (left) {
    more.textContent = `Show ${Math.min(left, LIST_STEP)} more (${left} not shown)`;
    kids.push(more);
  }
  empty.textContent = S.loaded ? "No notes here yet." : "Loading…";
  patch(list, kids.length ? kids : [empty]);
}

// The panel's regions draw only while it is open; opening it draws them all.
on("notes page panel view offline", renderCounts);
on("notes page panel view forms active", () => S.open && renderList());
on("page panel forms", () => S.open && renderNewNote());
on("panel reviews", () => S.open && renderSend());
