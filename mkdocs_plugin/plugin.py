"""The `annotate` plugin: `mkdocs serve` becomes a review session (docs/configuration.md; issue #6).

Under `mkdocs serve` the web app answers on the dev server's own port under `/__annotate/` and the
overlay is injected into every HTML answer at response time; `mkdocs build` output stays untouched
unless `build: true`. Each build records which Markdown file every page URL comes from, so the
server maps notes to source lines without trusting a path sent by a browser (docs/security.md).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from mkdocs.config import config_options as c
from mkdocs.config.base import Config
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, get_plugin_logger

# The library and the web app are imported when first needed: a plain `mkdocs build` (the
# default `build: false`) loads none of them and pays nothing for the plugin (benchmarks/build.py).
if TYPE_CHECKING:
    from annotate.store import Store

    from .serve import Endpoint

__all__ = ["AnnotateConfig", "AnnotatePlugin"]

log = get_plugin_logger("annotate")

DEFAULT_DB = ".annotate/annotations.db"
# Where `annotate.tokens.token_path` puts the token, relative to the project.
TOKEN = ".annotate/token"


class AnnotateConfig(Config):
    """The options under `plugins: - annotate:` (documented in docs/configuration.md)."""

    enabled = c.Type(bool, default=True)
    db_path = c.Type(str, default=DEFAULT_DB)
    content_selector = c.Optional(c.Type(str))
    build = c.Type(bool, default=False)
    author = c.Optional(c.Type(str))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _serve_frame() -> tuple[bool, Any] | None:
    """`(livereload, server)` of the running `mkdocs serve` (or `properdocs serve`), else None.

    MkDocs calls `on_serve` only when livereload is on; with `--no-livereload` this is the only way
    to reach the dev server. The first build runs inside `commands.serve.serve`, whose locals hold
    both (MkDocs and ProperDocs 1.6).
    """
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "serve" and code.co_filename.endswith(
            os.path.join("commands", "serve.py")
        ):
            return bool(frame.f_locals.get("livereload")), frame.f_locals.get("server")
        frame = frame.f_back
    return None


def page_urls(url: str, prefix: str = "/") -> list[str]:
    """The site paths a browser may show for a page whose MkDocs `url` is `url`."""
    # MkDocs writes the home page's URL as "./".
    path = prefix + url.removeprefix("./")
    urls = [path]
    if path.endswith("/index.html"):
        # use_directory_urls: false; the folder URL serves the same page.
        urls.append(path[: -len("index.html")])
    return urls


class AnnotatePlugin(BasePlugin[AnnotateConfig]):
    """Review notes on `mkdocs serve`.

    Defining `on_startup` keeps this object alive across the rebuilds of one `mkdocs serve`, and with
    it the store, the token and the mounted app.
    """

    def __init__(self) -> None:
        self.command: str | None = None
        self.project = Path.cwd()
        self.db_file = self.project / DEFAULT_DB
        # Page URL (relative, as MkDocs writes it) → Markdown path relative to the project.
        self.sources: dict[str, str] = {}
        # Page URL → the Python objects it documents, as rendered (annotate/generated.py).
        self.objects: dict[str, list[Any]] = {}
        self.store: Store | None = None
        self.endpoint: Endpoint | None = None
        self.prefix = "/"
        self.first_build = True

    # -- lifecycle --------------------------------------------------------------------------

    def on_startup(self, *, command: str, dirty: bool) -> None:
        self.command = command

    def on_config(self, config: Any) -> None:
        if not self.config.enabled:
            return None
        config_file = config.config_file_path
        self.project = Path(config_file).resolve().parent if config_file else Path.cwd()
        db = Path(self.config.db_path).expanduser()
        self.db_file = (db if db.is_absolute() else self.project / db).resolve()
        self._refuse_watched(config)
        return None

    def _refuse_watched(self, config: Any) -> None:
        """The database and the token must live outside every path `mkdocs serve` watches: a
        saved note would rebuild the site and reload every browser (and docs_dir is copied into
        the built site)."""
        watched: list[tuple[str, Path]] = [("docs_dir", Path(config.docs_dir).resolve())]
        watched += [("watch", Path(p).resolve()) for p in config.watch]
        if config.theme.custom_dir:
            watched.append(("theme.custom_dir", Path(config.theme.custom_dir).resolve()))
        if config.config_file_path:
            watched.append(("the config file", Path(config.config_file_path).resolve()))
        token = (self.project / TOKEN).resolve()
        for name, folder in watched:
            for what, path in (("db_path", self.db_file), ("the token file", token)):
                if _inside(path, folder):
                    raise PluginError(
                        f"annotate: {what} {str(path)!r} is inside {name} {str(folder)!r}; "
                        "every saved note would rebuild the site. Keep it outside the watched "
                        f"paths, e.g. the default db_path {DEFAULT_DB!r} beside mkdocs.yml."
                    )

    def on_files(self, files: Any, *, config: Any) -> Any:
        if not self.config.enabled:
            return files
        sources: dict[str, str] = {}
        for file in files.documentation_pages():
            if not file.abs_src_path:
                continue  # generated by a plugin: no Markdown file to map to
            path = Path(file.abs_src_path).resolve()
            if not _inside(path, self.project):
                continue  # outside the project (a symlink, a plugin's file): never read
            sources[file.url] = path.relative_to(self.project).as_posix()
        self.sources = sources
        return files

    def on_page_markdown(self, markdown: str, *, page: Any, config: Any, files: Any) -> str:
        """The page without the notes `annotate export --inline` wrote into it (docs/inline.md):
        a published site carries none, enabled or not (issue #27)."""
        if "annotate: " not in markdown:
            return markdown  # the common page: one scan, nothing imported
        from annotate import inline

        doc = inline.Document.parse(markdown)
        if not inline.markers(doc):
            return markdown
        return inline.strip(doc)[0].text()

    def on_page_content(self, html: str, *, page: Any, config: Any, files: Any) -> str:
        reviewing = self.command == "serve" or self.config.build
        if self.config.enabled and reviewing and "doc-heading" in html:
            from annotate.generated import objects_in_html

            self.objects[page.file.url] = objects_in_html(html)
        return html

    def on_post_page(self, output: str, *, page: Any, config: Any) -> str:
        if not (self.config.enabled and self.config.build) or self.command == "serve":
            return output
        from annotate.web.static import inject

        # `build: true`: the overlay's tags and settings, never the token; `annotate serve site/`
        # fills it in at response time.
        return inject(output.encode("utf-8"), self._snippet("")).decode("utf-8")

    def on_post_build(self, *, config: Any) -> None:
        if not self.config.enabled:
            return
        first, self.first_build = self.first_build, False
        if first and self.endpoint is None:
            found = _serve_frame()
            if found is not None and not found[0]:
                self._no_livereload(found[1])
        if self.store is not None:
            self._register()
        elif self.config.build and self.command != "serve" and _serve_frame() is None:
            # A review build: record the page sources for `annotate serve site/`.
            with self._open_store() as store:
                store.register_pages(self._page_map("/"), self._objects_map("/"))

    def on_serve(self, server: Any, *, config: Any, builder: Any) -> Any:
        if self.config.enabled and self.endpoint is None:
            self._mount(server, config)
        return server

    def on_shutdown(self) -> None:
        if self.endpoint is not None:
            self.endpoint.close()
            self.endpoint = None
        if self.store is not None:
            self.store.close()
            self.store = None

    # -- serving ----------------------------------------------------------------------------

    def _no_livereload(self, server: Any) -> None:
        """`mkdocs serve --no-livereload` calls no `on_serve`: mount on the server found."""
        if hasattr(server, "get_app") and hasattr(server, "set_app"):
            self._mount(server, None)
            log.info("--no-livereload: review endpoint mounted; pages do not reload by themselves")
        else:
            log.warning(
                "this dev server offers no way to add the review endpoint, so the overlay is off. "
                "Serve without --no-livereload, or run `mkdocs build` and `annotate serve site/`."
            )

    def _open_store(self) -> Store:
        from annotate.errors import AnnotateError
        from annotate.store import Store

        try:
            return Store(self.db_file, project_dir=self.project)
        except AnnotateError as e:
            raise PluginError(f"annotate: {e}") from None

    def _snippet(self, token: str) -> str:
        from annotate import __version__
        from annotate.web.static import overlay_snippet

        return overlay_snippet(
            token,
            version=__version__,
            content_selector=self.config.content_selector,
            author=self.config.author,
        )

    def _mount(self, server: Any, config: Any) -> None:
        from annotate.errors import ValidationError
        from annotate.tokens import TokenFile
        from annotate.web import create_app
        from annotate.web.server import extra_hosts, url_host

        from .serve import PREFIX, Endpoint, ReviewApp, quiet_access_log, trusted_host

        self.store = self._open_store()
        try:
            token = TokenFile(self.project)
        except (OSError, ValidationError) as e:
            raise PluginError(f"annotate: {e}") from None
        host, port = server.server_address[:2] if hasattr(server, "server_address") else ("", 0)
        self.prefix = getattr(server, "mount_path", "/")
        hosts = extra_hosts(str(host))
        app = create_app(
            self.store,
            token=token,
            allowed_hosts=hosts,
            page_sources=self._page_map(self.prefix),
        )
        self._register()  # with the objects the first build documented (annotate/generated.py)
        self.endpoint = Endpoint(app)
        review = ReviewApp(
            server.get_app(),
            self.endpoint,
            lambda: self._snippet(token()),
            trusted_host(hosts),
        )
        server.set_app(review)
        quiet_access_log(server)
        where = f"http://{url_host(str(host))}:{port}{PREFIX}/" if port else f"{PREFIX}/"
        log.info(f"review endpoint at {where} (notes in {self.db_file})")

    def _page_map(self, prefix: str) -> dict[str, str]:
        from annotate.errors import ValidationError
        from annotate.validation import page_url as valid_page_url

        pages: dict[str, str] = {}
        for url, src in self.sources.items():
            for path in page_urls(url, prefix):
                try:
                    pages[valid_page_url(path)] = src
                except ValidationError:
                    log.debug(f"page URL {path!r} cannot be annotated")
        return pages

    def _register(self) -> None:
        assert self.store is not None
        self.store.register_pages(self._page_map(self.prefix), self._objects_map(self.prefix))

    def _objects_map(self, prefix: str) -> dict[str, list[Any]]:
        return {
            path: found
            for url, found in self.objects.items()
            for path in page_urls(url, prefix)
            if found
        }
