"""schemathesis against `/__annotate/openapi.json`: for generated requests, valid and invalid, the
app never answers 5xx and every answer matches the schema (issue #4); a request the schema calls
valid is never refused with 400 (issue #17: the schema is as strict as annotate/validation.py)."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error, positive_data_acceptance
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from starlette.applications import Starlette
from starlette.testclient import TestClient

from annotate import __version__
from annotate.store import Store
from annotate.web import create_app
from annotate.web.openapi import openapi

from .conftest import text_note

TOKEN = "test-token-0123456789abcdef"
# Generation makes valid and invalid requests (both modes are on by default); every answer, to
# either kind, must be documented and match its schema. `negative_data_rejection` is left out: it
# reports false positives when a generated extra parameter is null, which the client then drops,
# sending a valid request. Unknown and empty parameters are refused: see test_web_api.py.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    positive_data_acceptance,
]
# Whether a review can be created depends on the store: with no note waiting and no message there
# is nothing to send (400, the library's answer), which no schema can tell from the body.
STATEFUL = {("POST", "/__annotate/api/reviews")}


@pytest.fixture
def app(store: Store) -> Starlette:
    # Some data, so that listings, exports and the anchor route have something to answer with.
    a = store.add_annotation(text_note())
    store.add_agent_reply(a.id, "Done")
    store.address_annotation(a.id)
    store.add_page_note({"pageUrl": "/guide/install/", "note": "Split it"})
    store.create_review({"mode": "edit", "message": "Go"})
    # The ASGI client sends `Host: testserver`; long-polls give up at once.
    return create_app(store, token=TOKEN, allowed_hosts=["testserver"], changes_timeout=0.02)


# The document the app serves (checked below).
schema = schemathesis.openapi.from_dict(openapi(__version__))


@schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_api_matches_its_schema(app: Starlette, case: schemathesis.Case) -> None:
    _position_in_order(case)
    checks = CHECKS
    if (case.method.upper(), case.path) in STATEFUL:
        checks = [c for c in CHECKS if c is not positive_data_acceptance]
    case.call_and_validate(app=app, headers={"X-Annotate-Token": TOKEN}, checks=checks)


def _position_in_order(case: schemathesis.Case) -> None:
    """`position.end >= position.start`: the one rule of a body JSON Schema cannot state (the
    schema's description says it)."""
    position = case.body.get("position") if isinstance(case.body, dict) else None
    if isinstance(position, dict):
        start, end = position.get("start"), position.get("end")
        numbers = all(isinstance(n, (int, float)) and not isinstance(n, bool) for n in (start, end))
        if numbers and end < start:
            position["start"], position["end"] = end, start


def test_served_document_is_the_tested_one(app: Starlette) -> None:
    served = TestClient(app).get("/__annotate/openapi.json").json()
    assert served == openapi(__version__)
