"""JSON responses and the one error shape `{"error": message, "code": code}` (docs/http-api.md,
pinned by tests/test_web_errors.py).

Library errors carry their own `code` and `http_status` (annotate/errors.py); the codes below are the
web layer's own, for failures that happen before a library call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pydantic_core
from starlette.background import BackgroundTask
from starlette.responses import Response

__all__ = ["API_HEADERS", "HttpError", "JsonResponse", "error_response", "json_bytes_response"]

# Every JSON answer: never sniffed as HTML, never cached, never framed, nothing loaded from it.
API_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
}

# The web layer's own error codes (the library's are in annotate/errors.py).
BAD_JSON = "invalid_json"
UNAUTHORIZED = "unauthorized"
FORBIDDEN = "forbidden"  # team mode: the same code as annotate.errors.Forbidden
FORBIDDEN_ORIGIN = "forbidden_origin"
FORBIDDEN_HOST = "forbidden_host"
NOT_FOUND = "not_found"
READ_ONLY = "read_only"
METHOD_NOT_ALLOWED = "method_not_allowed"
TOO_LARGE = "too_large"
UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
INVALID = "invalid"
INTERNAL = "internal"


class JsonResponse(Response):
    """Compact UTF-8 JSON with the API headers; NaN and infinities are refused, not emitted."""

    media_type = "application/json"

    def __init__(
        self,
        content: Any,
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
        media_type: str | None = None,
    ) -> None:
        super().__init__(content, status_code, {**API_HEADERS, **(headers or {})}, media_type)

    def render(self, content: Any) -> bytes:
        # pydantic-core (installed with the MCP SDK) writes the same compact JSON as the standard
        # encoder, in compiled code: it pays on long listings (benchmarks/api.py measures them).
        try:
            body: bytes | None = pydantic_core.to_json(content)
        except pydantic_core.PydanticSerializationError:
            body = None
        if body is None or b"NaN" in body or b"Infinity" in body:
            # A NaN, an infinity or a lone surrogate (or just those letters inside a string):
            # the standard encoder refuses the first ones and tells the last one apart.
            return json.dumps(
                content, ensure_ascii=False, allow_nan=False, separators=(",", ":")
            ).encode("utf-8")
        return body


def json_bytes_response(body: bytes, background: BackgroundTask | None = None) -> Response:
    """A 200 answer whose JSON is already written (by SQLite, or remembered), with the API headers."""
    return Response(body, media_type="application/json", headers=API_HEADERS, background=background)


class HttpError(Exception):
    """A failure of the HTTP layer itself (bad JSON, wrong method, …), answered as `{error, code}`."""

    def __init__(
        self, status: int, code: str, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})


def error_response(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> JsonResponse:
    return JsonResponse({"error": message, "code": code}, status, headers)
