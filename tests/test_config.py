"""The site config a project is built from (issue #15): found in Zensical's order, read for the
settings that map a page URL to its Markdown file, and refused with a named error when broken."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

import annotate
from annotate import pages
from annotate.cli import cli
from annotate.config import SiteConfig, site_config
from annotate.errors import ConfigError
from annotate.project import find_project
from annotate.tokens import TokenFile
from annotate.web.app import create_app

from .test_agent_loop import mcp_call


def page(project: Path, relative: str, text: str = "# Page\n\nSome words on the page.\n") -> None:
    path = project / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_no_config_means_the_defaults(tmp_path: Path) -> None:
    assert site_config(tmp_path) == SiteConfig(file=None, generator=None)
    assert site_config(tmp_path).site_path == "/"


def test_zensical_toml_settings_under_project(tmp_path: Path) -> None:
    (tmp_path / "zensical.toml").write_text(
        '[project]\nsite_name = "X"\ndocs_dir = "content"\nsite_dir = "public"\n'
        'use_directory_urls = false\nsite_url = "https://example.com/handbook/"\n'
        "[project.theme]\nfeatures = []\n"
    )
    config = site_config(tmp_path)
    assert config == SiteConfig(
        file=tmp_path / "zensical.toml",
        generator="zensical",
        docs_dir="content",
        site_dir="public",
        use_directory_urls=False,
        site_url="https://example.com/handbook/",
    )
    assert config.site_path == "/handbook/"
    page(tmp_path, "content/guide/install.md")
    page(tmp_path, "content/guide/index.md")
    assert pages.resolve_page(tmp_path, "/guide/install.html") == "content/guide/install.md"
    assert pages.resolve_page(tmp_path, "/handbook/guide/install.html") == (
        "content/guide/install.md"
    )
    # Without directory URLs, a folder is its index.html.
    assert pages.resolve_page(tmp_path, "/guide/") == "content/guide/index.md"
    assert pages.resolve_page(tmp_path, "/guide/install/") is None


def test_a_toml_without_project_table_is_read_at_its_top_level(tmp_path: Path) -> None:
    (tmp_path / "zensical.toml").write_text('site_name = "X"\ndocs_dir = "src"\n')
    assert site_config(tmp_path).docs_dir == "src"


@pytest.mark.parametrize(
    ("config", "offline"),
    [
        ("zensical.toml", '[project]\nsite_name = "X"\n[project.plugins.offline]\n'),
        ("zensical.toml", '[project]\nsite_name = "X"\nplugins.offline = {}\n'),
        ("mkdocs.yml", "site_name: X\nplugins:\n  - search\n  - offline\n"),
        ("mkdocs.yml", "site_name: X\nplugins:\n  - material/offline:\n      enabled: true\n"),
    ],
)
def test_the_offline_plugin_turns_directory_urls_off(
    tmp_path: Path, config: str, offline: str
) -> None:
    (tmp_path / config).write_text(offline)
    found = site_config(tmp_path)
    assert found.offline and not found.use_directory_urls
    page(tmp_path, "docs/guide.md")
    assert pages.resolve_page(tmp_path, "/guide.html") == "docs/guide.md"
    assert pages.resolve_page(tmp_path, "/guide/") is None


@pytest.mark.parametrize(
    ("config", "text"),
    [
        (
            "zensical.toml",
            '[project]\nsite_name = "X"\n[project.plugins.offline]\nenabled = false\n',
        ),
        ("mkdocs.yml", "site_name: X\nplugins:\n  - offline:\n      enabled: false\n"),
        ("mkdocs.yml", "site_name: X\nplugins:\n  - search\n"),
    ],
)
def test_a_disabled_or_absent_offline_plugin_keeps_directory_urls(
    tmp_path: Path, config: str, text: str
) -> None:
    (tmp_path / config).write_text(text)
    assert site_config(tmp_path).use_directory_urls


def test_zensical_order_then_properdocs(tmp_path: Path) -> None:
    (tmp_path / "properdocs.yml").write_text("site_name: P\ndocs_dir: p\n")
    assert (site_config(tmp_path).generator, site_config(tmp_path).docs_dir) == ("properdocs", "p")
    (tmp_path / "mkdocs.yaml").write_text("site_name: Y\ndocs_dir: yaml\n")
    assert site_config(tmp_path).docs_dir == "yaml"
    (tmp_path / "mkdocs.yml").write_text("site_name: M\ndocs_dir: yml\n")
    assert (site_config(tmp_path).generator, site_config(tmp_path).docs_dir) == ("mkdocs", "yml")
    (tmp_path / "zensical.toml").write_text('[project]\nsite_name = "Z"\ndocs_dir = "z"\n')
    assert (site_config(tmp_path).generator, site_config(tmp_path).docs_dir) == ("zensical", "z")


def test_a_changed_config_is_read_again(tmp_path: Path) -> None:
    config = tmp_path / "zensical.toml"
    config.write_text('[project]\nsite_name = "Z"\ndocs_dir = "one"\n')
    assert site_config(tmp_path).docs_dir == "one"
    config.write_text('[project]\nsite_name = "Z"\ndocs_dir = "second"\n')
    assert site_config(tmp_path).docs_dir == "second"


def test_a_changed_inherited_file_is_read_again(tmp_path: Path) -> None:
    (tmp_path / "base.yml").write_text("site_name: Base\ndocs_dir: one\n")
    (tmp_path / "mkdocs.yml").write_text("INHERIT: base.yml\n")
    assert site_config(tmp_path).docs_dir == "one"
    (tmp_path / "base.yml").write_text("site_name: Base\ndocs_dir: second\n")
    assert site_config(tmp_path).docs_dir == "second"


def test_mkdocs_tags_env_and_inherit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCS_FOLDER", "from-env")
    monkeypatch.delenv("NO_SUCH_VARIABLE", raising=False)
    (tmp_path / "base.yml").write_text(
        "site_name: Base\nuse_directory_urls: false\nsite_url: https://example.com/base/\n"
    )
    (tmp_path / "mkdocs.yml").write_text(
        "INHERIT: base.yml\n"
        "docs_dir: !ENV DOCS_FOLDER\n"
        "site_dir: !ENV [NO_SUCH_VARIABLE, built]\n"
        "markdown_extensions:\n"
        "  - pymdownx.emoji:\n"
        "      emoji_index: !!python/name:material.extensions.emoji.twemoji\n"
        "  - pymdownx.superfences:\n"
        "      custom_fences:\n"
        "        - name: mermaid\n"
        "          format: !!python/name:pymdownx.superfences.fence_code_format\n"
        "extra: !relative $config_dir\n"
    )
    config = site_config(tmp_path)
    assert (config.docs_dir, config.site_dir, config.use_directory_urls, config.site_path) == (
        "from-env",
        "built",
        False,
        "/base/",
    )


def test_an_absolute_docs_dir_inside_the_project_is_made_relative(tmp_path: Path) -> None:
    (tmp_path / "mkdocs.yml").write_text(f"site_name: X\ndocs_dir: {tmp_path / 'src'}\n")
    assert site_config(tmp_path).docs_dir == "src"
    page(tmp_path, "src/index.md")
    assert pages.resolve_page(tmp_path, "/") == "src/index.md"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "zensical.toml",
            '[project]\nsite_name = "X"\ndocs_dir = "docs\n',
            "it is not valid TOML: ",
        ),
        ("zensical.toml", "project = 3\n", "[project] is not a table"),
        (
            "mkdocs.yml",
            "site_name: X\nnav:\n  - Home: index.md\n - Bad: indent.md\n",
            "it is not valid YAML at line 4, column 2: ",
        ),
        ("mkdocs.yml", "- just\n- a list\n", "it is not a mapping of settings"),
        ("mkdocs.yml", "site_name: X\nuse_directory_urls: maybe\n", "use_directory_urls must"),
        ("mkdocs.yml", "site_name: X\ndocs_dir: [a, b]\n", "docs_dir must be a folder name"),
        ("mkdocs.yml", "INHERIT: missing.yml\n", "the file it inherits"),
        ("mkdocs.yml", "INHERIT: mkdocs.yml\n", "INHERIT goes over 8 files deep"),
        ("mkdocs.yml", b"site_name: \xff\n", "it is not UTF-8 text"),
    ],
)
def test_a_broken_config_is_a_named_error(
    tmp_path: Path, name: str, text: str | bytes, message: str
) -> None:
    file = tmp_path / name
    file.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ConfigError) as raised:
        site_config(tmp_path)
    assert str(raised.value).startswith(f"Cannot use the site config {file}: {message}")
    assert "\n" not in str(raised.value)


BROKEN = '[project]\nsite_name = "X"\nuse_directory_urls = nope\n'


def test_a_broken_config_through_the_cli(tmp_path: Path) -> None:
    (tmp_path / "zensical.toml").write_text(BROKEN)
    result = CliRunner().invoke(cli, ["list", "--project", str(tmp_path), "--page", "/guide/"])
    assert result.exit_code == 1
    assert result.output.startswith(
        f"Error: Cannot use the site config {tmp_path / 'zensical.toml'}: it is not valid TOML"
    )
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    # `annotate serve` says so before it starts.
    (tmp_path / "site").mkdir()
    result = CliRunner().invoke(cli, ["serve", str(tmp_path / "site"), "--project", str(tmp_path)])
    assert result.exit_code == 1
    assert result.output.startswith("Error: Cannot use the site config ")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_a_broken_config_through_http(tmp_path: Path) -> None:
    (tmp_path / "zensical.toml").write_text('[project]\nsite_name = "X"\n')
    page(tmp_path, "docs/index.md")
    store = annotate.open(tmp_path)
    store.add_page_note({"pageUrl": "/", "note": "A note made while the config was fine."})
    store.close()
    (tmp_path / "zensical.toml").write_text(BROKEN)
    store = annotate.open(tmp_path)
    token = TokenFile(tmp_path)
    app = create_app(store, token=token)
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        r = client.post(
            "/__annotate/api/page-notes",
            json={"pageUrl": "/other/", "note": "x"},
            headers={"X-Annotate-Token": token(), "Origin": "http://127.0.0.1:8000"},
        )
    assert r.status_code == 409
    assert r.json()["code"] == "bad_config"
    assert r.json()["error"].startswith("Cannot use the site config ")
    store.close()


@pytest.mark.anyio
async def test_a_broken_config_through_mcp(tmp_path: Path) -> None:
    (tmp_path / "zensical.toml").write_text(BROKEN)
    is_error, texts = await mcp_call(tmp_path, "list_page_notes", pageUrl="/")
    assert is_error
    assert texts[0].startswith("Cannot use the site config ") and "not valid TOML" in texts[0]


def test_a_project_with_only_zensical_toml_is_found_upwards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "zensical.toml").write_text('[project]\nsite_name = "X"\n')
    page(tmp_path, "docs/guide/install.md", "# Install\n\nUse pipx when you want it isolated.\n")
    monkeypatch.chdir(tmp_path / "docs" / "guide")
    assert find_project() == tmp_path
    with annotate.open() as store:
        note = store.add_annotation(
            {
                "pageUrl": "/guide/install/",
                "note": "x",
                "selectedText": "Use pipx when you want it isolated.",
                "quote": {
                    "exact": "Use pipx when you want it isolated.",
                    "prefix": "",
                    "suffix": "",
                },
            }
        )
    assert note.source is not None
    assert (note.source.path, note.source.line_start) == ("docs/guide/install.md", 3)
    result = CliRunner().invoke(cli, ["list", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)[0]["source"]["path"] == "docs/guide/install.md"
