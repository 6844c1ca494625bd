// -- writing a note: the popup (a text or element note), and the panel's forms below

let popupAt = null; // {target: {kind, ...}, item?} the popup is for
let returnFocus = null;

function hideAdder() {
  adder.hidden = true;
}

let adderTarget = null;
function placeAdder() {
  const sel = document.getSelection();
  if (!sel?.rangeCount) return hideAdder();
  const rects = sel.getRangeAt(0).getClientRects();
  const last = rects[rects.length - 1] || sel.getRangeAt(0).getBoundingClientRect();
  adder.style.top = clamp(last.bottom + 6, 4, innerHeight - 40) + "px";
  adder.style.left = clamp(last.right - 40, 4, innerWidth - 110) + "px";
}

function maybeShowAdder() {
  if (READ_ONLY || !popup.hidden) return;
  adderTarget = selectionTarget();
  if (!adderTarget) return hideAdder();
  adder.hidden = false;
  placeAdder();
}

function openPopupFromSelection() {
  const t = adderTarget || selectionTarget();
  hideAdder();
  if (!t) return;
  if (t.exact.length > MAX_QUOTE) {
    toast(`The selection is too long: at most ${MAX_QUOTE.toLocaleString()} characters`, true);
    return;
  }
  openPopup({ target: { kind: "text", ...t } });
}

// draft: {target, note, intent, suggestion, id (when editing)}
function openPopup(draft) {
  if (READ_ONLY) return;
  if (!popup.hidden) closePopup(false);
  const active = document.activeElement;
  returnFocus = active && active !== document.body && active !== host ? active : null;
  popupAt = draft;
  const t = draft.target;
  const editing = !!draft.id;
  const intent = h(
    "select",
    { id: "annotate-intent", value: draft.intent || "comment" },
    INTENTS.map(([v, label]) => h("option", { value: v, text: label }))
  );
  const suggestion = h("textarea", { id: "annotate-suggestion", rows: 2, value: draft.suggestion || "" });
  const note = h("textarea", {
    id: "annotate-note",
    rows: 3,
    placeholder: "What should change?",
    value: draft.note || ""
  });
  const suggestionRow = field("annotate-suggestion", "Suggestion", suggestion);
  const error = h("p", { class: "error", role: "alert" });
  const shotStatus = h("span", { class: "shot", role: "status" });
  const saveDraft = () => {
    suggestionRow.hidden = !(intent.value === "replace" || intent.value === "insert");
    Object.assign(draft, { note: note.value, intent: intent.value, suggestion: suggestion.value });
    session.set("draft:" + S.page, draft);
  };
  popup.oninput = popup.onchange = saveDraft;
  const row = h(
    "div",
    { class: "row" },
    button("Save", () => save(draft, error), "primary"),
    button("Cancel", () => closePopup(true)),
    canShoot() && button("Attach screenshot", () => takeShot(draft, shotStatus)),
    shotStatus,
    editing &&
      button("Delete", () => {
        row.replaceChildren(...confirmDelete(draft.item, () => closePopup(true)));
        row.querySelector(".danger").focus();
      })
  );
  const preview = t.kind === "element" ? t.element.description : t.exact;
  popup.setAttribute("aria-label", editing ? "Edit note" : "New note");
  popup.replaceChildren(
    ...shown([
      h("blockquote", { class: "preview" + (t.kind === "element" ? " element" : "") }, short(preview, 200)),
      field("annotate-intent", "Intent", intent),
      suggestionRow,
      field("annotate-note", "Note", note),
      error,
      row
    ])
  );
  popup.hidden = false;
  saveDraft();
  placePopup();
  (suggestionRow.hidden || draft.suggestion ? note : suggestion).focus();
}

const intact = (t) => textMap().text.slice(t.start, t.end) === t.exact;

// The popup's passage (a Range) or element, or null.
function popupTarget() {
  const t = popupAt.target;
  // A new note's draft (perhaps restored after a reload) only if the text is still there.
  return t.kind === "element"
    ? findElement(t.element)
    : popupAt.id
      ? textRange(popupAt)
      : intact(t)
        ? rangeOf(textMap(), t.start, t.end)
        : null;
}
const targetRect = () => popupTarget()?.getBoundingClientRect();

// "Attach screenshot": taken now (the capture's code loads on first use), sent with the note.
async function takeShot(draft, status) {
  const target = popupTarget();
  if (!target) return toast("The page no longer shows this passage", true);
  status.textContent = "Taking a screenshot…";
  const shot = await act("Screenshot", async () => (await chunk("capture")).capture(target));
  draft.shot = shot || draft.shot;
  status.textContent = draft.shot ? `Screenshot attached (${Math.ceil(draft.shot.size / 1024)} kB)` : "";
}

// Below the target, above when there is no room, always inside the viewport.
function placePopup() {
  const rect = targetRect();
  const w = popup.offsetWidth;
  const hgt = popup.offsetHeight;
  let top;
  let left;
  if (!rect) {
    top = (innerHeight - hgt) / 3;
    left = (innerWidth - w) / 2;
  } else {
    top = rect.bottom + 8;
    if (top + hgt > innerHeight - 8 && rect.top - hgt - 8 >= 8) top = rect.top - hgt - 8;
    left = rect.left;
  }
  popup.style.top = clamp(top, 8, Math.max(8, innerHeight - hgt - 8)) + "px";
  popup.style.left = clamp(left, 8, Math.max(8, innerWidth - w - 8)) + "px";
}

function closePopup(restoreFocus, keepDraft) {
  if (popup.hidden) return;
  popup.hidden = true;
  popup.replaceChildren();
  popupAt = null;
  if (!keepDraft) session.set("draft:" + S.page, null);
  if (restoreFocus && returnFocus?.isConnected) returnFocus.focus();
  returnFocus = null;
}

async function save(draft, error) {
  const intent = draft.intent || "comment";
  const body = { note: draft.note || "", intent };
  if (intent === "replace" || intent === "insert") body.suggestion = draft.suggestion || "";
  error.textContent = "";
  // The server refuses these too; asking first spares a failed request.
  const missing = intent === "comment" ? !body.note.trim() && "note" : body.suggestion === "" && "suggestion";
  if (missing) {
    error.textContent = missing === "note" ? "Write a note first." : "Write the suggested text first.";
    popup.querySelector(`#annotate-${missing}`).focus();
    return;
  }
  const t = draft.target;
  try {
    let item;
    if (draft.id) {
      item = await api("PATCH", `annotations/${draft.id}`, body);
    } else {
      Object.assign(body, { pageUrl: S.page, pageTitle: document.title, author: cfg.author });
      if (t.kind === "element") {
        Object.assign(body, { type: "element", elementSelector: t.element });
      } else {
        Object.assign(body, {
          type: "text",
          selectedText: t.exact,
          quote: { exact: t.exact, prefix: t.prefix, suffix: t.suffix },
          position: { start: t.start, end: t.end },
          inCode: t.inCode,
          occurrence: t.occurrence
        });
      }
      item = await api("POST", "annotations", body);
    }
    // A draft restored after a reload has lost its picture (sessionStorage keeps text only).
    if (draft.shot instanceof Blob) await (await chunk("capture")).attachShot(item, draft.shot);
    // A new text note is where it was selected, until the server has located it.
    upsert(item, !draft.id && t.kind === "text" && intact(t) && { start: t.start, end: t.end, map: textMap() });
    closePopup(true);
    document.getSelection().removeAllRanges();
    live.textContent = draft.id ? "Note saved" : "Note added";
    sync();
  } catch (e) {
    error.textContent = `Could not save: ${e.message}`;
    toast(`Saving failed: ${e.message}`, true);
  }
}

async function remove(item) {
  await act("Deleting", async () => {
    await api("DELETE", route(item));
    drop(item.id);
    if (popupAt?.id === item.id) closePopup(true);
    setForm(item.id, null);
    live.textContent = "Note deleted";
    sync();
  });
}

function editItem(item) {
  if (!item.type) {
    setForm(item.id, { kind: "edit", text: item.note });
    return;
  }
  const target =
    item.type === "element"
      ? { kind: "element", element: item.elementSelector }
      : { kind: "text", exact: item.selectedText };
  openPopup({ id: item.id, item, target, note: item.note, intent: item.intent, suggestion: item.suggestion || "" });
}

// -- the panel's forms: a reply, a reopen, a page note, a delete

// The question before a note is deleted, in its row or in the popup.
const confirmDelete = (item, cancel) => [
  h("span", { class: "confirm", text: "Delete this note and its replies?" }),
  button("Delete", () => remove(item), "danger", { "data-focus": item.id }),
  button("Cancel", cancel)
];

// A change to one note (POST unless `method` says otherwise), then `then`; the answer is the note.
const change = (what, path, body, then, method) =>
  act(what, async () => {
    upsert(await api(method || "POST", path, body));
    if (then) then();
  });

// A note's open form (and the new page note's, item {id: "__new"}): the reply, the follow-up of a
// reopen, a page note's text; or the confirmation of a delete.
function formView(item, form) {
  const close = () => setForm(item.id, null);
  if (form.kind === "delete") {
    return h("div", { class: "actions confirm" }, confirmDelete(item, close));
  }
  const id = `annotate-form-${item.id}`;
  const area = h("textarea", {
    id,
    rows: 2,
    "data-focus": item.id,
    value: form.text,
    oninput: (e) => {
      form.text = e.target.value;
    }
  });
  const submit = () => {
    const text = area.value;
    const [what, path, body, method] = {
      reply: ["Replying", route(item) + "/replies", { message: text, author: cfg.author }],
      reopen: [
        "Reopening",
        route(item) + "/status",
        text.trim() ? { action: "reopen", note: text } : { action: "reopen" }
      ],
      edit: ["Saving", "page-notes/" + item.id, { note: text }, "PATCH"],
      new: [
        "Saving the page note",
        "page-notes",
        { pageUrl: S.page, pageTitle: document.title, note: text, author: cfg.author }
      ]
    }[form.kind];
    change(what, path, body, close, method);
  };
  area.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) submit();
  });
  const [label, action] = { reply: ["Reply", "Reply"], reopen: ["Follow-up note (optional)", "Reopen"] }[form.kind] || [
    "Note",
    "Save"
  ];
  return h(
    "div",
    { class: "form" },
    h("label", { for: id, text: label }),
    area,
    h("div", { class: "actions" }, button(action, submit, "primary"), button("Cancel", close))
  );
}
