"""What coding agents are told: the order of work, and what a review's mode asks of them.

Shared by the MCP server's descriptions, `annotate wait` and the skill files of `annotate setup`, so
they never disagree. Each text names the MCP tools or, for the shell, the CLI commands.
"""

from __future__ import annotations

__all__ = [
    "CLI",
    "DEFAULT_WAIT_S",
    "MAX_WAIT_S",
    "MCP",
    "mode_instructions",
    "no_review",
    "order_of_work",
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
}
CLI = {
    "start": "`annotate start ID`",
    "target": "`annotate target ID TEXT`",
    "address": "`annotate address ID`",
    "reply": "`annotate reply ID MESSAGE`",
    "context": "`annotate context ID`",
    "wait": "`annotate wait`",
    "list": "`annotate list`",
}

_ORDER = (
    "{start} → edit the Markdown file at `source.path` (lines `source.lineStart`–`source.lineEnd`)"
    " → {target} with the new text (text annotations) → {address} → {reply} saying what you "
    "changed"
)
_MODES = {
    "edit": (
        "Edit mode: the reviewer asks you to apply the changes. For each note, in order: "
        + _ORDER
        + ". A note that asks a question or states a preference, with no change requested, gets "
        "a reply and no edit. Notes whose anchorState is `stale` or `orphaned` may point at text "
        "that moved or was rewritten: check with {context} first, and ask in a reply when unsure."
    ),
    "review": (
        "Review mode: the reviewer asks for answers, not changes. Edit no file. For each note, "
        "reply with {reply} (your answer, or the change you propose), then mark it with "
        "{address} so the reviewer sees it is their turn; they accept it, or reopen it with a "
        "follow-up that comes back in a later review."
    ),
}
_NO_REVIEW = (
    "No review yet: the reviewer has not pressed Send to agent within {timeout:g} s. Run {wait} "
    "again to keep waiting, or look at the open notes with {list}."
)


def order_of_work(names: dict[str, str] = MCP) -> str:
    """set_in_progress → edit → update_annotation_target → address_annotation → add_agent_reply."""
    return _ORDER.format(**names)


def mode_instructions(mode: str, names: dict[str, str] = MCP) -> str:
    """What a review in `mode` (`edit` or `review`) asks of the agent."""
    return _MODES[mode].format(**names)


def no_review(timeout_s: float, names: dict[str, str] = MCP) -> str:
    """The answer of a wait that timed out."""
    return _NO_REVIEW.format(timeout=timeout_s, **names)
