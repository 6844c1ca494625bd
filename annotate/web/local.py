"""`annotate serve SITE_DIR` without `--team`: one person's review of a built site, the project
token guarding every change (docs/serve.md). The same app runs under any ASGI server from its
factory, settings from the environment (`annotate.compose.local_factory`):

    ANNOTATE_SITE_DIR=site uvicorn --factory annotate.web.local:app --workers 4

`annotate serve --workers N` runs N of these processes itself (annotate/web/workers.py).
"""

from __future__ import annotations

from ..compose import local_app as build
from ..compose import local_factory as app

__all__ = ["app", "build"]
