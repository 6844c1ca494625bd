"""mkdocs-annotate: review notes on a rendered documentation site, handed to coding agents.

>>> import annotate
>>> store = annotate.open(".")            # <project>/.annotate/annotations.db
>>> note = store.add_annotation({"pageUrl": "/", "selectedText": "Hello", "note": "Fix"})
>>> store.set_in_progress(note.id).status
'in_progress'
"""

from .anchoring import Match, locate, locate_many
from .context import Context
from .errors import (
    AnnotateError,
    AnnotationNotFound,
    ConfigError,
    EmptyReplacedText,
    EmptyReply,
    Forbidden,
    ImportFormatError,
    InvalidTransition,
    NewerSchemaError,
    NotATextAnnotation,
    NotFoundError,
    PageNoteNotFound,
    ProjectNotFound,
    ReviewNotFound,
    ShowNotFound,
    StoreBusyError,
    StoreCorruptError,
    StoreError,
    StoreFullError,
    StoreGoneError,
    StoreReadOnlyError,
    StoreUnreachableError,
    Unauthorized,
    ValidationError,
)
from .models import (
    Annotation,
    ElementSelector,
    PageNote,
    Reply,
    Review,
    Source,
    Summary,
    TextPosition,
    TextQuote,
)
from .store import Store, open

__version__ = "0.1.0"

__all__ = [
    "AnnotateError",
    "Annotation",
    "AnnotationNotFound",
    "ConfigError",
    "Context",
    "ElementSelector",
    "EmptyReplacedText",
    "EmptyReply",
    "Forbidden",
    "ImportFormatError",
    "InvalidTransition",
    "Match",
    "NewerSchemaError",
    "NotATextAnnotation",
    "NotFoundError",
    "PageNote",
    "PageNoteNotFound",
    "ProjectNotFound",
    "Reply",
    "Review",
    "ReviewNotFound",
    "ShowNotFound",
    "Source",
    "Store",
    "StoreBusyError",
    "StoreCorruptError",
    "StoreError",
    "StoreFullError",
    "StoreGoneError",
    "StoreReadOnlyError",
    "StoreUnreachableError",
    "Summary",
    "TextPosition",
    "TextQuote",
    "Unauthorized",
    "ValidationError",
    "locate",
    "locate_many",
    "open",
]
