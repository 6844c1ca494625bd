"""The web endpoint: the REST API (docs/http-api.md), review page, overlay files and static sites.

>>> from annotate.web import create_app
>>> app = create_app(annotate.open("."), token=annotate.tokens.read_token("."))
"""

from .app import create_app
from .static import inject, overlay_snippet

__all__ = ["create_app", "inject", "overlay_snippet"]
