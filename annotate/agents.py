"""What coding agents are told: the order of work, what each intent and a review's mode ask.

Shared by the MCP server's descriptions, instructions and prompts, `annotate wait` and the skill
files of `annotate setup`, so they never disagree. Each text names the MCP tools or, for the shell,
the CLI commands.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from .models import Annotation, PageNote, Review

__all__ = [
    "ASKS",
    "CLI",
    "DEFAULT_WAIT_S",
    "MAX_WAIT_S",
    "MCP",
    "QUESTION",
    "asks",
    "intents",
    "mode_instructions",
    "no_review",
    "note_walkthrough",
    "order_of_work",
    "review_walkthrough",
]

DEFAULT_WAIT_S = 50.0  # under Codex's default 60 s tool timeout
MAX_WAIT_S = 3600.0

# The same steps, as MCP tools and as `annotate` commands.
MCP = {
    "start": "set_in_progress",
    "target": "update_annotation_target",
    "address": "address_annotation",
    "reply": "add_agent_reply",
    "context": "get_context",
    "wait": "wait_for_review",
    "list": "list_annotations",
    "record": (
        "address_annotation with `replacedText` (the text now in the quote's place, as the page "
        "shows it, not Markdown), `message` (your reply) and `deleted: true` if you deleted the "
        "quoted text as asked"
    ),
    "answer": "address_annotation with `message` (your answer, or the change you propose)",
    "deleted": "`deleted: true`",
}
CLI = {
    "start": "`annotate start ID`",
    "target": "`annotate target ID TEXT`",
    "address": "`annotate address ID`",
    "reply": "`annotate reply ID MESSAGE`",
    "context": "`annotate context ID`",
    "wait": "`annotate wait`",
    "list": "`annotate list`",
    "record": (
        "`annotate address ID --replaced-text TEXT --message MESSAGE` (the new text as the page "
        "shows it, and your reply; add `--deleted` when you deleted the quoted text as asked)"
    ),
    "answer": "`annotate address ID --message MESSAGE` (your answer, or the change you propose)",
    "deleted": "`--deleted`",
}

# issue #14, item 7: one call records the new text, the status and the reply together; the
# reference's three calls still work.
_ORDER = (
    "{start} → edit the Markdown at `source.path` (lines `source.lineStart`–`source.lineEnd`) as "
    "the note's intent asks → one call instead of {target}, {address} and {reply}: {record}"
)
# issue #14, item 4: what each intent asks, said once. The prose of `intents()` (tool descriptions,
# instructions, skill files), get_context's `intent:` line (`annotate/context.py`) and the
# address-note prompt are made of these phrases.
ASKS = {
    "comment": "do what the note says",
    "delete": "remove the quoted text, and nothing around it, then {address} with {deleted}",
    "replace": "put the suggestion in place of the quoted text",
    "insert": "add the suggestion right after the quoted text",
}
QUESTION = "a question gets a reply and no edit, then is addressed"
# Said where agents first read it (instructions, descriptions); get_context's line stays short.
_QUESTION_IS = "(a note that asks something and requests no change)"
_INTENTS = (
    "Each note's `intent` says what it asks: "
    + "; ".join(
        f"`{intent}`{' (the default)' if intent == 'comment' else ''}: {phrase}"
        for intent, phrase in ASKS.items()
    )
    + f". A question {_QUESTION_IS}"
    + QUESTION.removeprefix("a question")
    + "."
)
_MODES = {
    "edit": (
        "Edit mode: the reviewer asks you to apply the changes. For each note, in order: "
        + _ORDER
        + ". "
        + _INTENTS
        + " Notes whose anchorState is `stale` or `orphaned` may point at text that moved or "
        "was rewritten: check with {context} first, and ask in a reply when unsure."
    ),
    "review": (
        "Review mode: the reviewer asks for answers, not changes. Edit no file. Answer each note "
        "in one call, {answer}; or {reply}, then {address}. The reviewer then sees it is their "
        "turn: they accept it, or reopen it with a follow-up that comes back in a later review."
    ),
}
_NO_REVIEW = (
    "No review yet: the reviewer has not pressed Send to agent within {timeout:g} s. Run {wait} "
    "again to keep waiting, or look at the open notes with {list}."
)


def order_of_work(names: dict[str, str] = MCP) -> str:
    """set_in_progress → edit → address_annotation with replacedText, message and deleted."""
    return _ORDER.format(**names)


def intents(names: dict[str, str] = MCP) -> str:
    """What `comment`, `delete`, `replace` and `insert` ask, and what a question gets."""
    return _INTENTS.format(**names)


def asks(intent: str, names: dict[str, str] = MCP) -> str:
    """What one intent asks, as a phrase (`ASKS`)."""
    return ASKS[intent].format(**names)


def mode_instructions(mode: str, names: dict[str, str] = MCP) -> str:
    """What a review in `mode` (`edit` or `review`) asks of the agent."""
    return _MODES[mode].format(**names)


def no_review(timeout_s: float, names: dict[str, str] = MCP) -> str:
    """The answer of a wait that timed out."""
    return _NO_REVIEW.format(timeout=timeout_s, **names)


# -- the MCP prompts (issue #14, item 14): a review, or one note, as a walk-through -------------


def _quoted(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return f'"{text if len(text) <= limit else text[: limit - 1] + "…"}"'


def review_walkthrough(
    review: Review | None, left: Sequence[Annotation | PageNote], *, taken: bool
) -> str:
    """The `address-review` prompt: where the current review stands and how to work through it.

    `left` holds the review's notes that are not addressed yet; `taken` says whether an agent
    picked the review up already.
    """
    if review is None:
        return (
            "Work through the review notes the docs author left on the rendered site "
            "(mkdocs-annotate).\n\nNo review is waiting: the author has not pressed Send to agent "
            "since the last one was finished. Call wait_for_review to wait for one (it returns "
            "when they send it), or look at the open notes with summary and list_annotations.\n\n"
            "For each note you take on: " + order_of_work() + ".\n\n" + intents()
        )
    n = len(left)
    notes = f"{n} note{'' if n == 1 else 's'}"
    if taken:
        head = (
            f"Review {review.id} ({review.mode} mode) was taken by an agent and still has {notes} "
            f"not addressed: {', '.join(item.id for item in left)}. get_review {review.id} shows "
            "it again, with every note."
        )
    else:
        head = (
            f"Review {review.id} ({review.mode} mode) is waiting with {notes}. Take it with "
            "wait_for_review: it returns at once with this review."
        )
    message = f"\n\nThe author's message: {_quoted(review.message, 1000)}" if review.message else ""
    return (
        "Work through the review the docs author sent from the rendered site (mkdocs-annotate).\n\n"
        f"{head}{message}\n\n"
        "1. Go through the notes in the review's order; get_context shows the Markdown lines of "
        "each.\n"
        f"2. {mode_instructions(review.mode)}\n"
        "3. When every note is addressed, tell the user in a few lines what you changed, what you "
        "only answered, and what needs their decision."
    )


def _asks(item: Annotation | PageNote) -> str:
    """What to do for one note, by its kind and intent."""
    if isinstance(item, PageNote):
        return (
            "The note is about the whole page: change its Markdown file as it asks, then "
            "address_annotation with `message` (what you changed)."
        )
    if item.type == "element":
        return (
            "The note is about an element of the page (see elementSelector): change the Markdown "
            "that produces it as the note asks, then address_annotation with `message`."
        )
    step = asks(item.intent)
    step = step[0].upper() + step[1:]
    if item.intent == "delete":
        return f"{step} and a short `message`."
    if item.intent == "replace":
        return (
            f"{step}, then address_annotation with `replacedText` (the new text as the page "
            "shows it, not Markdown) and `message`."
        )
    if item.intent == "insert":
        return (
            f"{step}, then address_annotation with `replacedText` (the quote followed by what "
            "you added, as the page shows it) and `message`."
        )
    return (
        f"{step}, then address_annotation with `replacedText` (the text that now stands where "
        "the quote was, as the page shows it) and `message` (what you changed)."
    )


def note_walkthrough(item: Annotation | PageNote) -> str:
    """The `address-note` prompt: one note, what it asks, and the calls that settle it."""
    title = f" ({item.page_title})" if item.page_title else ""
    if isinstance(item, PageNote):
        kind = "a page note"
    else:
        kind = f"a {item.type} note, intent `{item.intent}`"
    lines = [
        f"Work on the review note {item.id}, {kind}, on the page {item.page_url}{title} "
        f"(status `{item.status}`).",
        "",
        f"Note: {_quoted(item.note, 2000)}",
    ]
    if isinstance(item, Annotation):
        if item.selected_text:
            lines.append(f"Quoted text: {_quoted(item.selected_text)}")
        if item.element_selector is not None:
            sel = item.element_selector
            lines.append(f"Element: {sel.css_selector} {sel.description}".rstrip())
        if item.suggestion:
            # Exactly as given: an insertion's leading space or line break matters.
            lines.append(f"Suggestion: {json.dumps(item.suggestion, ensure_ascii=False)}")
    source = getattr(item, "source", None)
    if source is not None and getattr(source, "line_start", None):
        state = getattr(item, "anchor_state", None)
        lines.append(f"Markdown: {source.lines}" + (f" (anchorState `{state}`)" if state else ""))
    elif source is not None:
        lines.append(f"Markdown: {source.path}")
    if item.status == "resolved":
        lines += ["", "The reviewer accepted it (resolved): leave it unless they reopen it."]
        return "\n".join(lines)
    lines += [
        "",
        f"1. get_context {item.id}: the Markdown around it, line-numbered.",
        f"2. set_in_progress {item.id}.",
        f"3. {_asks(item)}",
        "",
        "If the note asks a question and requests no change, answer it in `message` and edit "
        "nothing. If it is `stale` or `orphaned`, check that it still applies first, and say in "
        "your reply what you found.",
    ]
    if item.status == "addressed":
        lines.append("It is addressed already: rework it only if the note or the user asks.")
    return "\n".join(lines)
