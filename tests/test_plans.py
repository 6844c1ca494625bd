"""Plans and their revisions in the store, and a verdict on every review (issues #29, #30 item 5),
on both backends."""

from __future__ import annotations

import threading

import pytest

import annotate
from annotate.errors import ValidationError
from annotate.plans import MAX_PLAN_BYTES, PlanNotFound
from annotate.schema import LATEST
from tests.conftest import text_note

BACKENDS = ("sqlite", "postgresql")


def test_a_plan_gets_numbered_revisions(store: annotate.Store) -> None:
    assert store.schema_version == LATEST
    first = store.plans.submit("session:abc", "# Plan\n\nStep one.\n", title="Plan")
    second = store.plans.submit("session:abc", "# Plan\n\nStep one, then two.\n")
    other = store.plans.submit("file:docs/x.md", "# X\n")
    assert (first.number, second.number, other.number) == (1, 2, 1)
    assert first.plan_id == second.plan_id != other.plan_id
    plan = store.plans.get(first.plan_id)
    assert [r.number for r in plan.revisions] == [1, 2]
    assert plan.revision(1).markdown == "# Plan\n\nStep one.\n"
    assert plan.latest.markdown.endswith("then two.\n")
    assert plan.title == "Plan"
    assert plan.latest.decision is None
    found = store.plans.find("session:abc")
    assert found is not None and found.id == plan.id
    assert store.plans.find("session:nope") is None
    assert {p.id for p in store.plans.list()} == {plan.id, other.plan_id}


def test_a_decision_is_recorded_once(store: annotate.Store) -> None:
    rev = store.plans.submit("session:s", "Do it.")
    decided = store.plans.decide(rev.plan_id, 1, "request_changes", "Not yet")
    assert (decided.decision, decided.message) == ("request_changes", "Not yet")
    assert decided.decided_at is not None
    with pytest.raises(ValidationError, match="already decided"):
        store.plans.decide(rev.plan_id, 1, "approve")
    with pytest.raises(ValidationError, match="decision must be one of"):
        store.plans.decide(rev.plan_id, 1, "maybe")
    with pytest.raises(PlanNotFound, match="Revision 7"):
        store.plans.decide(rev.plan_id, 7, "approve")
    with pytest.raises(PlanNotFound):
        store.plans.get("pl_0000000000")
    again = store.plans.submit("session:s", "Do it better.")
    plan = store.plans.get(rev.plan_id)
    assert plan.last_reviewed(again.number) == plan.revision(1)


def test_plan_input_is_refused_when_bad(store: annotate.Store) -> None:
    with pytest.raises(ValidationError, match="empty"):
        store.plans.submit("session:s", "  \n")
    with pytest.raises(ValidationError, match="limit is"):
        store.plans.submit("session:s", "x" * (MAX_PLAN_BYTES + 1))
    with pytest.raises(ValidationError, match="needs a key"):
        store.plans.submit("", "text")
    assert store.plans.list() == []


def test_waiting_for_a_decision_ends_with_it_or_with_the_timeout(store: annotate.Store) -> None:
    rev = store.plans.submit("session:w", "Plan")
    assert store.plans.wait_for_decision(rev.plan_id, 1, 0.3, poll_s=0.05) is None
    timer = threading.Timer(0.2, lambda: store.plans.decide(rev.plan_id, 1, "approve"))
    timer.start()
    try:
        got = store.plans.wait_for_decision(rev.plan_id, 1, 20, poll_s=0.05)
    finally:
        timer.join()
    assert got is not None and got.decision == "approve"


def test_a_review_carries_a_decision(store: annotate.Store) -> None:
    store.add_annotation(text_note())
    review = store.create_review({"decision": "approve_with_notes", "message": "Fine, but see"})
    assert review.decision == "approve_with_notes"
    assert store.get_review(review.id).to_dict()["decision"] == "approve_with_notes"
    assert store.list_reviews()[0].outline()["decision"] == "approve_with_notes"
    claimed = store.wait_for_review(0)
    assert claimed is not None and claimed.brief()["decision"] == "approve_with_notes"


def test_an_approval_needs_no_notes(store: annotate.Store) -> None:
    with pytest.raises(ValidationError, match="Nothing to send"):
        store.create_review({})
    review = store.create_review({"decision": "approve"})
    assert (review.decision, review.annotations) == ("approve", ())
    with pytest.raises(ValidationError, match="decision must be one of"):
        store.create_review({"decision": "yes"})
    plain = store.create_review({"message": "hello"})
    assert plain.decision is None and "decision" not in plain.outline()


def test_a_review_of_one_page_takes_only_its_notes(store: annotate.Store) -> None:
    mine = store.add_annotation(text_note(pageUrl="/_annotate_plans/pl_1/"))
    other = store.add_annotation(text_note())
    review = store.create_review({"pageUrl": "/_annotate_plans/pl_1/", "decision": "approve"})
    assert [a.id for a in review.annotations] == [mine.id]
    empty = store.create_review({"pageUrl": "/nothing/", "decision": "approve"})
    assert empty.annotations == ()
    assert other.id not in [a.id for r in store.list_reviews() for a in r.annotations]
    batch = store.create_review({})  # the usual batch still takes it
    assert [a.id for a in batch.annotations] == [other.id]
