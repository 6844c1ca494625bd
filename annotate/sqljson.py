"""Moved to annotate/backends/sqlite_json.py (issue #28); kept importable under its old name."""

from .backends.sqlite_json import ANNOTATION_JSON, REPLY_JSON, json_sql

__all__ = ["ANNOTATION_JSON", "REPLY_JSON", "json_sql"]
