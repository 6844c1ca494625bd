"""Notes written into the Markdown and read back (annotate/inline.py, issue #19 item 5)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import markdown
import pytest
from click.testing import CliRunner
from markdown_it import MarkdownIt

import annotate
from annotate import inline
from annotate.cli import cli
from annotate.errors import InlineError, MarkerError

from .conftest import text_note, write_project
from .inline_project import add_notes, file_bytes, make_project, snapshot

MARKER_LINE = re.compile(r"^\[//\]: # \(annotate: (.*)\)\r?\n", re.MULTILINE)


def _filled(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _delete_store(project: Path) -> None:
    for f in (project / ".annotate").glob("annotations.db*"):
        f.unlink()


def _markers(data: bytes) -> list[dict[str, object]]:
    doc = inline.Document.parse(data.decode("utf-8"))
    return [inline.decode(doc.lines[n]) for n in inline.markers(doc)]


# -- the marker ---------------------------------------------------------------------------------


def test_a_marker_is_one_definition_no_note_can_end(store: annotate.Store) -> None:
    nasty = "ends ) here, (opens, \\) escaped, --> <!-- a\nline\u2028sep\u0085 <b> \u202e"
    note = store.add_page_note({"pageUrl": "/", "note": nasty})
    line = inline.encode(note)
    assert line.startswith("[//]: # (annotate: {") and line.endswith("})")
    inner = line[len("[//]: # (annotate: ") : -len(")")]
    assert not re.search(r"[()<>\u202e]", inner)
    assert not re.search(r"[\n\r\u2028\u2029\u0085]", line)
    assert inline.decode(line)["note"] == nasty
    assert list(json.loads(inner))[:3] == ["id", "status", "note"]


def test_a_marker_reads_left_to_right(store: annotate.Store, tmp_path: Path) -> None:
    write_project(tmp_path, "# Install\n\nRun pip install mkdocs-annotate in a shell.\n")
    a = store.add_annotation(text_note(intent="replace", suggestion="Run pipx"))
    data = json.loads(inline.encode(store.get_annotation(a.id))[len(inline.MARKER_PREFIX) : -1])
    assert list(data)[:6] == ["id", "type", "status", "intent", "note", "suggestion"]
    assert "excerpt" not in data["source"] and "replacedText" not in data


# -- round trip ---------------------------------------------------------------------------------


def test_round_trip_on_these_docs_and_every_kind_of_block(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    docs = project / "docs"
    before = file_bytes(docs)
    with annotate.open(project) as store:
        ids = add_notes(store, docs)
        expected = snapshot(store)
        result = inline.export_inline(store)
    assert set(expected) == set(ids) and len(ids) > 300
    assert result.written == len(ids) and result.already == 0 and result.no_file == 0
    marked = file_bytes(docs)
    assert set(result.files) == {f"docs/{name}" for name in before}
    found = [m for name in marked for m in _markers(marked[name])]
    assert sorted(str(m["id"]) for m in found) == sorted(ids)
    # Markers sit between blocks and take the file's line ends; nothing else moved.
    for name, data in marked.items():
        if b"\r\n" in before[name]:
            assert data.count(b"\n") == data.count(b"\r\n")
        assert data.startswith(b"\xef\xbb\xbf") == before[name].startswith(b"\xef\xbb\xbf")
        doc = inline.Document.parse(data.decode("utf-8"))
        at = set(inline.markers(doc))
        unmarked = "".join(line for n, line in enumerate(doc.lines) if n not in at)
        assert _filled(unmarked) == _filled(before[name].decode("utf-8-sig"))

    _delete_store(project)
    with annotate.open(project) as store:
        assert snapshot(store) == {}
        result2 = inline.import_inline(store, strip_markers=True)
        assert result2.markers == len(ids)
        assert result2.counts["annotations"] + result2.counts["pageNotes"] == len(ids)
        assert file_bytes(docs) == before
        restored = snapshot(store)
    assert restored == expected


def test_export_again_writes_only_new_notes(tmp_path: Path) -> None:
    project = make_project(tmp_path, own_docs=False)
    docs = project / "docs"
    before = file_bytes(docs)
    with annotate.open(project) as store:
        add_notes(store, docs, per_page=4)
        first = inline.export_inline(store)
        once = file_bytes(docs)
        again = inline.export_inline(store)
        assert (again.written, again.already) == (0, first.written)
        assert file_bytes(docs) == once
        # A new note joins the markers already there; stripping still gives the original back.
        url = "/inline-fixtures/tables/"
        late = store.add_page_note({"pageUrl": url, "note": "Late note."})
        third = inline.export_inline(store, url)
        assert (third.written, third.files) == (1, ["docs/inline-fixtures/tables.md"])
        tables = (docs / "inline-fixtures" / "tables.md").read_text()
        assert tables.count(late.id) == 1
        inline.import_inline(store, docs, strip_markers=True)
    assert file_bytes(docs) == before


def test_resolved_notes_and_other_pages_stay_out(tmp_path: Path) -> None:
    write_project(tmp_path, "# Install\n\nRun pip install mkdocs-annotate in a shell.\n")
    (tmp_path / "docs" / "index.md").write_text("# Home\n\nWelcome.\n")
    with annotate.open(tmp_path) as store:
        done = store.add_annotation(text_note(note="Resolved."))
        store.accept(done.id)
        kept = store.add_annotation(text_note(note="Kept."))
        marker = inline.encode(store.get_annotation(kept.id))
        home = store.add_page_note({"pageUrl": "/", "note": "Home note."})
        result = inline.export_inline(store, "/guide/install")
    assert result.files == ["docs/guide/install.md"]
    text = (tmp_path / "docs" / "guide" / "install.md").read_text()
    assert kept.id in text and done.id not in text and home.id not in text
    assert text == ("# Install\n\n" + marker + "\n\nRun pip install mkdocs-annotate in a shell.\n")


# -- where a marker goes --------------------------------------------------------------------------

# (fixture page, a passage of it, the line the marker must stand before)
PLACES = [
    ("lists.md", "A nested item under the second", "- First item of a tight list"),
    ("lists.md", "Ordered inside nested", "- First item of a tight list"),
    ("lists.md", 'print("code inside a list item")', "- First item of a tight list"),
    ("lists.md", "Asterisk list that Python-Markdown", "- First item of a tight list"),
    ("lists.md", "which Python-Markdown keeps", "A paragraph directly followed by a list line"),
    ("lists.md", "Closing paragraph of the lists page.", "Closing paragraph of the lists page."),
    (
        "lists.md",
        "Lists and nesting",
        "A paragraph before the list, long enough to be quoted by a reviewer somewhere.",
    ),
    ("tables.md", "Turn warnings into errors", "| Option | Default | What it does |"),
    ("tables.md", "stays text", "Text between two tables."),
    ("admonitions.md", "A second paragraph in the body", '!!! note "A note with a title"'),
    ("admonitions.md", "pip install mkdocs-annotate", '!!! note "A note with a title"'),
    ("admonitions.md", "indented code inside the details", '??? warning "Collapsed by default"'),
    ("admonitions.md", "another point", "???+ tip"),
    ("admonitions.md", "Inner admonition body text.", "!!! danger"),
    ("tabs.md", "Use uv to add it to the project.", '=== "pip"'),
    ("tabs.md", "Or install the command line alone.", '=== "pip"'),
    ("tabs.md", "Body of the second tab.", '===! "First of a new set"'),
    ("tabs.md", "Tab two inside the admonition.", '!!! example "Tabs inside an admonition"'),
    ("tabs.md", "Text after the stray fence.", '=== "Stray one"'),
    ("tabs.md", "int result_cpp();", '=== "C"'),
    ("tabs.md", "int example_cpp();", '``` title="Tabs with code"'),
    ("code.md", 'return "hello"', "```python"),
    ("code.md", "site_name: My docs", '~~~yaml title="mkdocs.yml"'),
    ("code.md", "annotate get a_0123456789", "An indented block:"),
    ("code.md", "Text right after a fence", "```markdown"),
    ("misc.md", "A second quotation Python-Markdown", "> A quotation that spans"),
    ("misc.md", "Its definition, with enough", "Term to define"),
    ("misc.md", "A definition after a blank line.", "Term to define"),
    ("misc.md", "The footnote text at the bottom.", "[^1]: The footnote text at the bottom."),
    ("misc.md", "Markdown inside an HTML block", "<div markdown>"),
    ("misc.md", "The item after the footnote", "1.  A list item with a footnote.[^2]"),
]


def _line_after_markers(text: str, id: str) -> str:
    lines = text.splitlines()
    n = next(
        i for i, line in enumerate(lines) if id in line and line.startswith(inline.MARKER_PREFIX)
    )
    while lines[n].startswith(inline.MARKER_PREFIX):
        n += 1
    assert lines[n] == "", "a blank line ends each group of markers"
    return lines[n + 1]


@pytest.mark.parametrize(("page", "passage", "before"), PLACES, ids=lambda v: str(v)[:24])
def test_where_the_marker_goes(tmp_path: Path, page: str, passage: str, before: str) -> None:
    project = make_project(tmp_path, own_docs=False)
    file = project / "docs" / "inline-fixtures" / page
    url = f"/inline-fixtures/{page[:-3]}/"
    with annotate.open(project) as store:
        note = store.add_annotation(
            {
                "type": "text",
                "pageUrl": url,
                "note": "Here.",
                "selectedText": passage,
                "quote": {"exact": passage},
            }
        )
        assert note.source is not None, "the passage is found in the Markdown"
        inline.export_inline(store, url)
    assert _line_after_markers(file.read_text(), note.id) == before


@pytest.mark.parametrize(
    ("page", "first"),
    [
        (
            "lists.md",
            "A paragraph before the list, long enough to be quoted by a reviewer somewhere.",
        ),
        ("misc.md", "> A quotation that spans"),
        ("code.md", "A fenced block with backticks:"),
    ],
)
def test_page_notes_go_after_the_front_matter_and_the_title(
    tmp_path: Path, page: str, first: str
) -> None:
    # MkDocs takes a page's title from its first element only when that is an h1: a comment
    # before it would change the title in the navigation and the browser tab.
    project = make_project(tmp_path, own_docs=False)
    file = project / "docs" / "inline-fixtures" / page
    with annotate.open(project) as store:
        note = store.add_page_note({"pageUrl": f"/inline-fixtures/{page[:-3]}/", "note": "Hi."})
        inline.export_inline(store)
    assert _line_after_markers(file.read_text(), note.id) == first


@pytest.mark.parametrize(
    ("page", "marked"),
    [
        ("# Install\nRun pip install mkdocs-annotate.\n", "# Install\n{m}\n\nRun pip"),
        ("Install\n=======\n\nRun pip install mkdocs-annotate.\n", "=======\n\n{m}\n\nRun"),
        ("# Install\n", "# Install\n{m}\n\n"),
        # No line end to put the marker after: before the title, the one place left.
        ("# Install", "{m}\n\n# Install"),
        ("## Install\n\nRun pip install mkdocs-annotate.\n", "{m}\n\n## Install"),
    ],
)
def test_the_title_stays_first(tmp_path: Path, page: str, marked: str) -> None:
    write_project(tmp_path, page)
    with annotate.open(tmp_path) as store:
        note = store.add_page_note({"pageUrl": "/guide/install/", "note": "Hi."})
        line = inline.encode(note)
        inline.export_inline(store)
        text = (tmp_path / "docs" / "guide" / "install.md").read_text()
        assert marked.format(m=line) in text
        inline.import_inline(store, strip_markers=True)
    assert (tmp_path / "docs" / "guide" / "install.md").read_text() == page


def test_a_note_without_lines_goes_to_the_top(tmp_path: Path) -> None:
    write_project(tmp_path, "---\ntitle: Install\n...\n\nRun pip install mkdocs-annotate.\n")
    with annotate.open(tmp_path) as store:
        note = store.add_annotation(text_note(quote={"exact": "Made with Material for MkDocs"}))
        assert note.source is None
        inline.export_inline(store)
    text = (tmp_path / "docs" / "guide" / "install.md").read_text()
    assert text.startswith("---\ntitle: Install\n...\n\n[//]: # (annotate: ")
    assert _line_after_markers(text, note.id) == "Run pip install mkdocs-annotate."


# -- import -------------------------------------------------------------------------------------


def test_import_keeps_the_store_copy_of_a_known_id(tmp_path: Path) -> None:
    write_project(tmp_path, "# Install\n\nRun pip install mkdocs-annotate in a shell.\n")
    with annotate.open(tmp_path) as store:
        note = store.add_annotation(text_note())
        inline.export_inline(store)
        store.add_reply(note.id, "Later reply.")
        store.accept(note.id)
        result = inline.import_inline(store)
        assert result.markers == 1 and result.counts["annotations"] == 0
        assert result.counts["skipped"] == 1
        kept = store.get_annotation(note.id)
        assert kept.status == "resolved" and [r.message for r in kept.replies] == ["Later reply."]
        assert len(store.list_annotations(include_resolved=True)) == 1


def test_import_without_strip_finds_the_lines_in_the_marked_file(tmp_path: Path) -> None:
    write_project(
        tmp_path, "# Install\n\nSome text.\n\nRun pip install mkdocs-annotate in a shell.\n"
    )
    with annotate.open(tmp_path) as store:
        note = store.add_annotation(text_note())
        assert note.source is not None and note.source.line_start == 5
        inline.export_inline(store)
    _delete_store(tmp_path)
    with annotate.open(tmp_path) as store:
        inline.import_inline(store)
        back = store.get_annotation(note.id)
    assert back.source is not None and back.source.line_start == 7
    lines = (tmp_path / "docs" / "guide" / "install.md").read_text().splitlines()
    assert lines[4].startswith(inline.MARKER_PREFIX) and lines[6].startswith("Run pip install")


def test_a_malformed_marker_names_its_line_and_changes_nothing(tmp_path: Path) -> None:
    write_project(tmp_path, "# Install\n\nRun pip install mkdocs-annotate in a shell.\n")
    with annotate.open(tmp_path) as store:
        store.add_annotation(text_note())
        inline.export_inline(store)
    good = tmp_path / "docs" / "guide" / "install.md"
    bad = tmp_path / "docs" / "bad.md"
    bad.write_text('# Bad\n\n<!-- annotate: {"id": "a_0123456789", "note": -->\n\nText.\n')
    files = file_bytes(tmp_path / "docs")
    _delete_store(tmp_path)
    with annotate.open(tmp_path) as store:
        with pytest.raises(MarkerError, match=r"bad\.md:3: not a readable annotate marker"):
            inline.import_inline(store, strip_markers=True)
        bad.write_text('<!-- annotate: {"id": "a_0123456789", "type": "text", "pageUrl": 3} -->\n')
        with pytest.raises(MarkerError, match=r"bad\.md:1: .*pageUrl"):
            inline.import_inline(store, strip_markers=True)
        assert store.list_annotations() == []
    assert good.read_bytes() == files["guide/install.md"]


def test_a_marker_shown_in_code_is_no_marker(tmp_path: Path) -> None:
    page = (
        '# Doc\n\n```markdown\n<!-- annotate: {"id": broken -->\n[//]: # (annotate: {"id": x})\n'
        "```\n\n    <!-- annotate: x -->\n\n- item\n\n  [//]: # (annotate: y)\n\n"
        "Text\n[//]: # (annotate: z)\n"
    )
    write_project(tmp_path, page)
    with annotate.open(tmp_path) as store:
        result = inline.import_inline(store, strip_markers=True)
    assert result.markers == 0 and result.stripped == []
    assert (tmp_path / "docs" / "guide" / "install.md").read_text() == page


def test_bad_pages_and_files_are_named(tmp_path: Path) -> None:
    write_project(tmp_path, "# Install\n")
    with annotate.open(tmp_path) as store:
        with pytest.raises(InlineError, match="Page /nowhere/ has no Markdown file"):
            inline.export_inline(store, "/nowhere/")
        with pytest.raises(InlineError, match="does not exist"):
            inline.import_inline(store, tmp_path / "missing")
        (tmp_path / "docs" / "latin1.md").write_bytes(b"caf\xe9\n")
        with pytest.raises(InlineError, match=r"latin1\.md is not UTF-8 text"):
            inline.import_inline(store)
        store.add_page_note({"pageUrl": "/latin1/", "note": "Hi."})
        with pytest.raises(InlineError, match=r"latin1\.md is not UTF-8 text"):
            inline.export_inline(store)


# -- the CLI ------------------------------------------------------------------------------------


def test_cli_export_and_import_inline(tmp_path: Path) -> None:
    original = "# Install\r\n\r\nRun pip install mkdocs-annotate in a shell.\r\n"
    write_project(tmp_path, "")
    page = tmp_path / "docs" / "guide" / "install.md"
    page.write_bytes(original.encode())
    with annotate.open(tmp_path) as store:
        a = store.add_annotation(text_note())
        store.add_reply(a.id, "Why?")
    run = CliRunner()
    out = run.invoke(cli, ["export", "--inline", "--project", str(tmp_path)])
    assert out.exit_code == 0, out.output
    assert out.output == "Wrote 1 marker into 1 file: docs/guide/install.md\n"
    assert page.read_bytes().count(b"\r\n") == 5
    _delete_store(tmp_path)
    out = run.invoke(cli, ["import", "--inline", "--strip", "--json", "--project", str(tmp_path)])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output) == {
        "markers": 1,
        "annotations": 1,
        "pageNotes": 0,
        "replies": 1,
        "reviews": 0,
        "skipped": 0,
        "stripped": [str(page)],
    }
    assert page.read_bytes() == original.encode()
    with annotate.open(tmp_path) as store:
        assert [r.message for r in store.get_annotation(a.id).replies] == ["Why?"]


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["export", "--inline", "--page", "/nowhere/"], 1, "Error: Page /nowhere/ has no Markdown"),
        (["import", "--inline", "docs/missing"], 1, "Error: docs/missing does not exist"),
        (["export", "--inline", "--format", "json"], 2, "--format, --output and"),
        (["export", "--page", "/"], 2, "--page goes with --inline"),
        (["import", "--strip", "x.json"], 2, "--strip goes with --inline"),
        (["import"], 2, "Missing argument 'FILE'"),
    ],
)
def test_cli_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], code: int, message: str
) -> None:
    write_project(tmp_path, "# Install\n")
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(cli, [*argv, "--project", str(tmp_path)])
    assert out.exit_code == code
    assert message in out.output
    if code == 1:
        assert out.output.count("\n") == 1


def test_import_reads_every_markdown_suffix(tmp_path: Path) -> None:
    write_project(tmp_path, "# Install\n")
    with annotate.open(tmp_path) as store:
        note = store.add_page_note({"pageUrl": "/old/", "note": "From a .markdown file."})
        marker = inline.encode(note)
        store.delete(note.id)
        (tmp_path / "docs" / "old.markdown").write_text(f"{marker}\n\n# Old\n")
        (tmp_path / "docs" / "notes.txt").write_text(f"{marker}\n\nNot Markdown.\n")
        result = inline.import_inline(store, strip_markers=True)
        assert result.markers == 1 and store.get_page_note(note.id).note == note.note
    assert (tmp_path / "docs" / "old.markdown").read_text() == "# Old\n"
    assert (tmp_path / "docs" / "notes.txt").read_text().startswith(inline.MARKER_PREFIX)


# -- issue #32: strict markers, symlinked pages ------------------------------------------------

# Page notes that every check of a new note passes, but for the one thing each shows.
STRICT = [
    ('{"id": "p_0123456789", "pageUrl": "/", "note": "One.", "note": "Two."}', "twice"),
    ('{"id": "p_0123456789", "pageUrl": "/", "note": "One.", "extra": 1}', "extra"),
    ('{"id": "p_0123456789", "pageUrl": "/", "note": "One.", "weight": NaN}', "NaN"),
    ('{"id": "p_0123456789", "pageUrl": "/", "note": "One.", "deep": '
     + "[" * 100_000 + "]" * 100_000 + "}", "too deeply"),
]  # fmt: skip


@pytest.mark.parametrize(("payload", "why"), STRICT, ids=["twice", "unknown", "nan", "deep"])
@pytest.mark.parametrize("form", ["[//]: # (annotate: {})", "<!-- annotate: {} -->"])
def test_a_marker_is_read_strictly(tmp_path: Path, payload: str, why: str, form: str) -> None:
    """Duplicate keys, unknown fields, NaN and deep nesting are refused as the REST API refuses
    them: one MarkerError naming the line, nothing stored, no file changed."""
    write_project(tmp_path, "# Install\n")
    bad = tmp_path / "docs" / "bad.md"
    bad.write_text("# Bad\n\n" + form.replace("{}", payload) + "\n\nText.\n")
    before = bad.read_bytes()
    with annotate.open(tmp_path) as store:
        with pytest.raises(MarkerError, match=rf"bad\.md:3: .*{why}"):
            inline.import_inline(store, strip_markers=True)
        assert store.list_annotations(include_resolved=True) == []
        assert store.list_page_notes(include_resolved=True) == []
    assert bad.read_bytes() == before


def test_strip_writes_through_a_symlinked_page(tmp_path: Path) -> None:
    """docs/index.md → ../README.md: the markers are read once, removed from README.md, and the
    page stays a link (it was replaced by a copy with the markers left in README.md)."""
    write_project(tmp_path, "# Install\n")
    readme = tmp_path / "README.md"
    readme.write_text("# Project\n\nThe project's front page, shared with the docs.\n")
    (tmp_path / "docs" / "index.md").symlink_to(Path("..") / "README.md")
    with annotate.open(tmp_path) as store:
        note = store.add_page_note({"pageUrl": "/", "note": "Say what it does first."})
        assert inline.export_inline(store).files == ["docs/index.md"]
        marked = readme.read_text()
        assert inline.MARKER_PREFIX in marked
        store.delete(note.id)
        result = inline.import_inline(store, strip_markers=True)
        assert result.markers == 1 and store.get_page_note(note.id).note == note.note
    assert (tmp_path / "docs" / "index.md").is_symlink()
    assert readme.read_text() == "# Project\n\nThe project's front page, shared with the docs.\n"


def test_a_link_leading_outside_the_project_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    project = write_project(tmp_path / "project", "# Install\n")
    outside = tmp_path / "elsewhere.md"
    with annotate.open(project) as store:
        note = store.add_page_note({"pageUrl": "/guide/install/", "note": "Not from here."})
        marker = inline.encode(note)
        store.delete(note.id)
    outside.write_text(f"# Elsewhere\n\n{marker}\n\nText.\n")
    (project / "docs" / "linked.md").symlink_to(outside)
    with annotate.open(project) as store:
        with pytest.raises(InlineError, match=r"linked\.md leads outside the project"):
            inline.import_inline(store, strip_markers=True)
        with pytest.raises(InlineError, match=r"leads outside the project"):
            inline.import_inline(store, outside)
        assert store.list_page_notes() == []
    assert inline.MARKER_PREFIX in outside.read_text()


def test_markers_of_the_older_form_are_read_and_stripped(tmp_path: Path) -> None:
    """Files marked by an earlier release (HTML comments) import and strip as before."""
    page = "# Install\n\nRun pip install mkdocs-annotate in a shell.\n"
    write_project(tmp_path, page)
    with annotate.open(tmp_path) as store:
        note = store.add_annotation(text_note())
        old = inline.OLD_PREFIX + inline.encode(note)[len(inline.MARKER_PREFIX) : -1] + " -->"
        store.delete(note.id)
    file = tmp_path / "docs" / "guide" / "install.md"
    file.write_text(f"# Install\n\n{old}\n\nRun pip install mkdocs-annotate in a shell.\n")
    with annotate.open(tmp_path) as store:
        result = inline.import_inline(store, strip_markers=True)
        assert result.markers == 1 and store.get_annotation(note.id).note == note.note
    assert file.read_text() == page


@pytest.mark.parametrize("renderer", ["python-markdown", "markdown-it-py"])
def test_a_marker_renders_as_nothing(store: annotate.Store, renderer: str) -> None:
    """The marker is a link reference definition: CommonMark (markdown-it-py; GitHub's cmark-gfm
    alike) and Python-Markdown consume it and write nothing, in the page or its source."""
    note = store.add_page_note({"pageUrl": "/", "note": "Secret ) ( --> <b>text</b> \\ end"})
    text = f"# Title\n\n{inline.encode(note)}\n{inline.encode(note)}\n\nBody.\n"
    if renderer == "python-markdown":
        html = markdown.markdown(text)
    else:
        html = MarkdownIt("commonmark").render(text)
    assert html.split() == ["<h1>Title</h1>", "<p>Body.</p>"]


def test_export_rewrites_markers_of_the_older_form(tmp_path: Path) -> None:
    """A file marked by an earlier release publishes its notes in HTML comments: exporting again
    rewrites them in the current form (the same JSON), and --strip still gives the file back."""
    page = "# Install\n\nRun pip install mkdocs-annotate in a shell.\n"
    write_project(tmp_path, page)
    file = tmp_path / "docs" / "guide" / "install.md"
    with annotate.open(tmp_path) as store:
        note = store.add_annotation(text_note(note="Say (briefly) why --> <b>"))
        new = inline.encode(note)
        payload = json.dumps(inline.decode(new), ensure_ascii=False, separators=(", ", ": "))
        payload = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("--", "-\\u002d")
        old = f"{inline.OLD_PREFIX}{payload} -->"
        file.write_text(f"# Install\n\n{old}\n\nRun pip install mkdocs-annotate in a shell.\n")
        result = inline.export_inline(store)
        assert (result.already, result.converted, result.written) == (1, 1, 0)
        lines = file.read_text().split("\n")
        assert lines[2].startswith(inline.MARKER_PREFIX) and inline.decode(lines[2]) == (
            inline.decode(old)
        )
        assert markdown.markdown(file.read_text()).split("\n")[1] == (
            "<p>Run pip install mkdocs-annotate in a shell.</p>"
        )
        assert inline.export_inline(store).converted == 0  # nothing left to rewrite
        inline.import_inline(store, strip_markers=True)
    assert file.read_text() == page
