"""Team mode of `annotate serve SITE_DIR` (docs/team.md): several people review one preview build.

The names team mode has always been reached by: its settings and sign-in page
(annotate/web/signin.py) and its app, put together in annotate/compose.py. The same app runs under
any ASGI server, with as many workers as wanted, from its factory:

    ANNOTATE_SITE_DIR=site ANNOTATE_IDENTITY_HEADER=X-Forwarded-Email \\
        uvicorn --factory annotate.web.team:app --no-proxy-headers --workers 4

`app()` reads its settings from the environment (`Settings.from_env`).
"""

from __future__ import annotations

from ..compose import FORWARDED_WARNING, app, forwarded_from_anyone
from ..compose import team_app as build
from .signin import ENV, NO_IDENTITY, Settings, has_identity_source, identify, signin, signout

__all__ = [
    "ENV",
    "FORWARDED_WARNING",
    "NO_IDENTITY",
    "Settings",
    "app",
    "build",
    "forwarded_from_anyone",
    "has_identity_source",
    "identify",
    "signin",
    "signout",
]
