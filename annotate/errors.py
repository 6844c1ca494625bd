"""Named exceptions of the library.

Each surface translates them at its edge: the CLI prints the message and exits 1, the web app answers
`{error, code}` with `http_status`, the MCP server returns `isError` with the message. Messages that an
agent configured for astro-inline-review already knows keep that tool's exact wording (docs/mcp.md;
tests/test_mcp.py pins each text).
"""

from __future__ import annotations

__all__ = [
    "AnnotateError",
    "AnnotationNotFound",
    "ConfigError",
    "EmptyReplacedText",
    "EmptyReply",
    "Forbidden",
    "ImportFormatError",
    "InlineError",
    "InvalidTransition",
    "MarkerError",
    "NewerSchemaError",
    "NotATextAnnotation",
    "NotFoundError",
    "PageNoteNotFound",
    "ProjectNotFound",
    "ReviewNotFound",
    "ShowNotFound",
    "StoreBusyError",
    "StoreCorruptError",
    "StoreError",
    "StoreFullError",
    "StoreGoneError",
    "StoreReadOnlyError",
    "StoreUnreachableError",
    "Unauthorized",
    "ValidationError",
]


class AnnotateError(Exception):
    """Base class of every error the library raises on purpose."""

    code = "error"
    http_status = 400

    def __init__(self, message: str) -> None:
        # A message may quote what it refuses; a lone surrogate in it could not be written as UTF-8
        # by the CLI, the web app or the MCP stdio transport (issue #17), so it is spelled `\udc80`.
        message = message.encode("utf-8", "backslashreplace").decode("utf-8")
        super().__init__(message)
        self.message = message
        # What a remote client is told (HTTP, MCP over HTTP): the message, except for a database
        # error on PostgreSQL, whose address stays in the log (annotate/pgdb.py `_public`).
        self.public = message

    def __str__(self) -> str:
        return self.message


class NotFoundError(AnnotateError):
    """An id that names nothing in the store."""

    code = "not_found"
    http_status = 404


class AnnotationNotFound(NotFoundError):
    """No annotation (or page note) has this id."""

    def __init__(self, id: str) -> None:
        super().__init__(f'Annotation with ID "{id}" not found')
        self.id = id


class PageNoteNotFound(NotFoundError):
    """No page note has this id."""

    def __init__(self, id: str) -> None:
        super().__init__(f'Page note with ID "{id}" not found')
        self.id = id


class ShowNotFound(NotFoundError):
    """No `show_annotation` call wrote this change number (an acknowledgement's `seq`)."""

    def __init__(self, seq: int) -> None:
        super().__init__(f"No show_annotation call has the change number {seq}")
        self.seq = seq


class ReviewNotFound(NotFoundError):
    """No review has this id."""

    def __init__(self, id: str) -> None:
        super().__init__(f'Review with ID "{id}" not found')
        self.id = id


class ValidationError(AnnotateError):
    """Input that breaks a rule; `field` names the offending field when there is one."""

    code = "invalid"

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class EmptyReply(ValidationError):
    def __init__(self) -> None:
        super().__init__("Reply message must not be empty", field="message")


class EmptyReplacedText(ValidationError):
    def __init__(self) -> None:
        super().__init__("replacedText must not be empty", field="replacedText")


class NotATextAnnotation(ValidationError):
    def __init__(self) -> None:
        super().__init__("not a text annotation", field="replacedText")


class ProjectNotFound(AnnotateError):
    """No folder from the start folder upwards holds a project config file (annotate/project.py)."""

    code = "project_not_found"
    http_status = 404

    def __init__(self, folder: str) -> None:
        super().__init__(
            f"No documentation project in {folder} or any folder above it (looked for "
            "zensical.toml, mkdocs.yml, mkdocs.yaml, properdocs.yml, properdocs.yaml): run this "
            "in the project, or name it with --project PATH"
        )
        self.folder = folder


class ConfigError(AnnotateError):
    """The project's site config (zensical.toml, mkdocs.yml…) cannot be read (annotate/config.py)."""

    code = "bad_config"
    http_status = 409

    def __init__(self, file: object, reason: str) -> None:
        super().__init__(f"Cannot use the site config {file}: {reason}")
        self.file = str(file)


class ImportFormatError(ValidationError):
    """A file given to import that is neither our JSON export nor an inline-review.json."""

    code = "invalid_import"


class Forbidden(AnnotateError):
    """A person may not do this to this item (team mode, docs/team.md "Roles"): a reviewer
    changing another's note, an agent accepting."""

    code = "forbidden"
    http_status = 403


class Unauthorized(AnnotateError):
    """No person could be told from the request (team mode): no identity, an unknown or revoked
    token."""

    code = "unauthorized"
    http_status = 401


class InlineError(AnnotateError):
    """Notes cannot be written into Markdown files or read back from them (annotate/inline.py):
    a page without a Markdown file, a file that cannot be read or written."""

    code = "inline"


class MarkerError(InlineError):
    """A line of a Markdown file that opens an inline marker (`[//]: # (annotate: `, or the older
    `<!-- annotate: `) but cannot be read as one."""

    code = "invalid_marker"

    def __init__(self, path: str, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: not a readable annotate marker: {reason}")
        self.path = path
        self.line = line


class InvalidTransition(AnnotateError):
    """A status change the lifecycle does not allow (docs/workflow.md, "Statuses")."""

    code = "invalid_transition"
    http_status = 409


class StoreError(AnnotateError):
    """The database file itself is the problem."""

    code = "store_error"
    http_status = 500


class StoreCorruptError(StoreError):
    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path} is not a readable annotation database ({detail})")
        self.path = path


class NewerSchemaError(StoreError):
    def __init__(self, path: str, found: int, supported: int) -> None:
        super().__init__(
            f"{path} was written by a newer mkdocs-annotate (schema version {found}, this "
            f"version reads up to {supported}); upgrade mkdocs-annotate to open it"
        )
        self.path = path


class StoreBusyError(StoreError):
    """Another process held the write lock for longer than the busy timeout; safe to retry."""

    code = "store_busy"
    http_status = 503

    def __init__(self, path: str) -> None:
        super().__init__(f"{path} is busy (another process is writing); try again")
        self.path = path


class StoreFullError(StoreError):
    """The disk (or the file system holding the store) has no space left; nothing was written."""

    code = "store_full"
    http_status = 507

    def __init__(self, path: str) -> None:
        super().__init__(f"{path} cannot be written: no space left on the device")
        self.path = path


class StoreReadOnlyError(StoreError):
    """The file or its file system is read-only: reads work, writes are refused."""

    code = "store_read_only"
    http_status = 503

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path} cannot be written: {detail}")
        self.path = path


class StoreGoneError(StoreError):
    """The store file vanished while open and could not be recreated where it was."""

    code = "store_gone"
    http_status = 503

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path} was deleted while in use and cannot be recreated ({detail})")
        self.path = path


class StoreUnreachableError(StoreError):
    """The PostgreSQL server of a `postgresql://` store refused or lost the connection."""

    code = "store_unreachable"
    http_status = 503

    def __init__(self, name: str, detail: str) -> None:
        # `name`: the URL without its password (annotate/pgdb.py `redact`).
        super().__init__(f"{name} cannot be reached ({detail})")
        self.path = name
