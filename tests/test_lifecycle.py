"""Status transitions (docs/workflow.md, "Statuses") and the reference's error texts."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import annotate
from annotate.store import Store

from .conftest import element_note, text_note

# Each test using the `store` fixture runs on both (tests/conftest.py).
BACKENDS = ("sqlite", "postgresql")


def at(store: Store, status: str, make: Callable[..., dict] = text_note) -> str:
    """An item brought to `status` through legal moves."""
    item = store.add_annotation(make())
    if status == "in_progress":
        store.set_in_progress(item.id)
    elif status == "addressed":
        store.address_annotation(item.id)
    elif status == "resolved":
        store.accept(item.id)
    assert store.get_annotation(item.id).status == status
    return item.id


ACTIONS: dict[str, Callable[[Store, str], object]] = {
    "set_in_progress": lambda s, i: s.set_in_progress(i),
    "address_annotation": lambda s, i: s.address_annotation(i),
    "update_annotation_target": lambda s, i: s.update_annotation_target(i, "new text"),
    "accept": lambda s, i: s.accept(i),
    "reopen": lambda s, i: s.reopen(i),
    "add_agent_reply": lambda s, i: s.add_agent_reply(i, "hello"),
    "add_reply": lambda s, i: s.add_reply(i, "hello", role="reviewer"),
}

# (action, from status) -> resulting status, or None where it must be refused.
TABLE = {
    ("set_in_progress", "open"): "in_progress",
    ("set_in_progress", "in_progress"): "in_progress",
    ("set_in_progress", "addressed"): "in_progress",
    ("set_in_progress", "resolved"): None,
    ("address_annotation", "open"): "addressed",
    ("address_annotation", "in_progress"): "addressed",
    ("address_annotation", "addressed"): "addressed",
    ("address_annotation", "resolved"): None,
    ("update_annotation_target", "open"): "open",
    ("update_annotation_target", "in_progress"): "in_progress",
    ("update_annotation_target", "addressed"): "addressed",
    ("update_annotation_target", "resolved"): None,
    ("accept", "open"): "resolved",
    ("accept", "in_progress"): "resolved",
    ("accept", "addressed"): "resolved",
    ("accept", "resolved"): None,
    ("reopen", "open"): None,
    ("reopen", "in_progress"): None,
    ("reopen", "addressed"): "open",
    ("reopen", "resolved"): "open",
    **{
        (reply, s): s
        for reply in ("add_agent_reply", "add_reply")
        for s in annotate.models.STATUSES
    },
}


@pytest.mark.parametrize(("action", "status"), list(TABLE))
def test_transition_table(store: Store, action: str, status: str) -> None:
    id = at(store, status)
    before = store.get_annotation(id)
    expected = TABLE[(action, status)]
    if expected is None:
        with pytest.raises(annotate.InvalidTransition) as e:
            ACTIONS[action](store, id)
        message = str(e.value)
        assert id in message
        assert status.replace("_", " ") in message
        assert store.get_annotation(id) == before  # nothing changed
    else:
        ACTIONS[action](store, id)
        assert store.get_annotation(id).status == expected


def test_resolved_refusal_names_the_way_out(store: Store) -> None:
    id = at(store, "resolved")
    with pytest.raises(annotate.InvalidTransition) as e:
        store.set_in_progress(id)
    assert str(e.value) == f'Cannot start work: annotation "{id}" is resolved; reopen it first'


def test_timestamps_follow_the_lifecycle(store: Store) -> None:
    id = at(store, "open")
    started = store.set_in_progress(id)
    assert started.in_progress_at and not started.addressed_at
    again = store.set_in_progress(id)
    assert again.in_progress_at == started.in_progress_at  # no-op
    done = store.address_annotation(id, replaced_text="pipx install mkdocs-annotate")
    assert done.addressed_at and done.replaced_text == "pipx install mkdocs-annotate"
    accepted = store.accept(id)
    assert accepted.resolved_at
    reopened = store.reopen(id, "The second example still says pip.")
    assert reopened.status == "open"
    assert (reopened.in_progress_at, reopened.addressed_at, reopened.resolved_at) == (
        None,
        None,
        None,
    )
    assert [(r.role, r.message) for r in reopened.replies] == [
        ("reviewer", "The second example still says pip.")
    ]
    # Rework after addressing clears the addressed mark.
    store.address_annotation(id)
    rework = store.set_in_progress(id)
    assert rework.status == "in_progress" and rework.addressed_at is None


def test_reference_error_texts(store: Store) -> None:
    text_id = at(store, "open")
    element_id = at(store, "open", element_note)
    cases = [
        (lambda: store.set_in_progress("abc123"), 'Annotation with ID "abc123" not found'),
        (lambda: store.address_annotation("abc123"), 'Annotation with ID "abc123" not found'),
        (lambda: store.add_agent_reply("abc123", "x"), 'Annotation with ID "abc123" not found'),
        (
            lambda: store.update_annotation_target("abc123", "x"),
            'Annotation with ID "abc123" not found',
        ),
        (lambda: store.add_agent_reply(text_id, ""), "Reply message must not be empty"),
        (lambda: store.add_agent_reply(text_id, "  \n\t"), "Reply message must not be empty"),
        (
            lambda: store.address_annotation(text_id, replaced_text=" "),
            "replacedText must not be empty",
        ),
        (lambda: store.update_annotation_target(text_id, ""), "replacedText must not be empty"),
        (lambda: store.address_annotation(element_id, replaced_text="x"), "not a text annotation"),
        (lambda: store.update_annotation_target(element_id, "x"), "not a text annotation"),
    ]
    for call, message in cases:
        with pytest.raises(annotate.AnnotateError) as e:
            call()
        assert str(e.value) == message
    assert store.get_annotation(text_id).status == "open"
    assert store.get_annotation(element_id).replies == ()


def test_replacedtext_on_page_note_is_refused(store: Store) -> None:
    n = store.add_page_note({"pageUrl": "/", "note": "x"})
    with pytest.raises(annotate.NotATextAnnotation):
        store.address_annotation(n.id, replaced_text="y")
    assert store.address_annotation(n.id).status == "addressed"


def test_reply_roles_and_authors(store: Store) -> None:
    id = at(store, "open")
    store.add_reply(id, "Why pipx?", author="ana")
    item = store.add_agent_reply(id, "Because it isolates the tool.")
    assert [(r.role, r.author) for r in item.replies] == [("reviewer", "ana"), ("agent", None)]
    assert all(r.id.startswith("r_") for r in item.replies)
    with pytest.raises(annotate.ValidationError, match="role must be"):
        store.add_reply(id, "x", role="robot")
    with pytest.raises(annotate.ValidationError, match="message is 10,001 characters"):
        store.add_reply(id, "x" * 10_001)
