"""The field table (annotate/fields.py) is the one declaration of an annotation's fields.

`test_a_new_field_reaches_every_surface` adds a field to the table, as a change adding one would,
and checks that every surface generated from it picks the field up: validation, the decoder,
`to_dict`, the JSON SQLite writes, the OpenAPI schemas and the export rows.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from annotate import export, fields, models, sqljson, validation

from .conftest import text_note, write_project


@pytest.mark.parametrize(
    ("cls", "table"),
    [
        (models.Annotation, fields.ANNOTATION),
        (models.PageNote, fields.PAGE_NOTE),
        (models.Reply, fields.REPLY),
    ],
)
def test_each_attribute_is_a_field_of_the_table(cls: type, table: fields.Table) -> None:
    # The dataclass is the typed view of the table: the two cannot drift apart.
    attributes = {f.name for f in dataclasses.fields(cls)}
    assert attributes == {f.attr for f in table.answer}


def test_field_sets_and_limits_come_from_the_table() -> None:
    assert validation.MAX_SUGGESTION == fields.ANNOTATION["suggestion"].limit == 10_000
    assert fields.PAGE_NOTE["pageUrl"].limit == validation.MAX_PAGE_URL
    assert "suggestion" in validation.ANNOTATION_INPUT
    assert (
        "anchorScore" in validation.SERVER_SET and "anchorScore" not in validation.ANNOTATION_INPUT
    )
    assert {"note", "pageTitle"} == validation.PAGE_NOTE_EDITABLE


def test_export_rows_are_named_and_read_by_name() -> None:
    row = fields.ANNOTATION.row
    assert row._fields[:3] == ("id", "type", "page_url")
    assert fields.ANNOTATION.select.startswith("id, type, page_url, coalesce(page_title, '')")
    # The Markdown writer takes a row apart into parameters named as the table names its columns.
    annotation = list(inspect.signature(export._annotation).parameters)[3:]
    assert tuple(annotation) == row._fields
    page_note = list(inspect.signature(export._page_note).parameters)[2:]
    assert tuple(page_note) == fields.PAGE_NOTE.row._fields
    assert "'replies', json((SELECT json_group_array(json_object('id', r.id" in (
        sqljson.ANNOTATION_JSON
    )


# Run in a fresh interpreter: the table is read once, when annotate is imported. What a change
# adding a field writes: one line in the table and the dataclass attribute (its typed view);
# everything else below is generated, the column's migration included.
NEW_FIELD = """
import dataclasses, importlib.util, json, sys
from pathlib import Path

root = Path(importlib.util.find_spec("annotate").submodule_search_locations[0])


def load(name):
    spec = importlib.util.spec_from_file_location(f"annotate.{name}", root / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# The next schema version: one past the newest (a field's, or a table's in schema.LATER). Read
# from a first import, then forgotten, so the table below is read afresh with the new field.
import annotate.schema

since = annotate.schema.LATEST + 1
for name in [m for m in sys.modules if m == "annotate" or m.startswith("annotate.")]:
    del sys.modules[name]
f = load("fields")
extra = f.Field(
    "priority", nullable=True, limit=20, input=True, editable=True, export=True, since=since
)
at = [x.key for x in f.ANNOTATION].index("suggestion") + 1
f.ANNOTATION = f.Table(
    "Annotation", "annotations", (*f.ANNOTATION.fields[:at], extra, *f.ANNOTATION.fields[at:]),
    decoder_args=f.ANNOTATION.decoder_args,
)
models = load("models")


@dataclasses.dataclass(slots=True)
class Annotation(models.Annotation):
    priority: str | None = None
    to_dict = f.ANNOTATION.to_dict()


models.Annotation = Annotation

import annotate
from annotate.web import create_app
from starlette.testclient import TestClient

project, note = Path(sys.argv[1]), json.loads(sys.argv[2])
store = annotate.open(project)
api = "/__annotate/api"
out = {}
with TestClient(create_app(store, token="t" * 32), base_url="http://127.0.0.1:8000",
                headers={"X-Annotate-Token": "t" * 32}) as c:
    created = c.post(f"{api}/annotations", json={**note, "priority": "high"})
    out["created"] = created.json()
    out["too_long"] = c.post(f"{api}/annotations", json={**note, "priority": "x" * 21}).json()
    id = out["created"]["id"]
    out["edited"] = c.patch(f"{api}/annotations/{id}", json={"priority": "low"}).json()
    out["listed"] = c.get(f"{api}/annotations").json()["annotations"][0]
    schemas = c.get("/__annotate/openapi.json").json()["components"]["schemas"]
    out["schemas"] = {
        name: schemas[name]["properties"].get("priority")
        for name in ("Annotation", "AnnotationInput", "AnnotationPatch", "PageNote")
    }
    out["exported"] = json.loads(c.get(f"{api}/export?format=json").text)["annotations"][0]
row = store.export_rows(include_resolved=True)[0][0]
out["outline"] = dict(zip(f.ANNOTATION.row._fields, row))["priority"]
with store._tx(write=False) as conn:
    out["version"] = conn.execute("SELECT max(version) FROM schema_version").fetchone()[0]
out["since"] = since
out["latest"] = annotate.schema.LATEST
print(json.dumps(out))
"""


def test_a_new_field_reaches_every_surface(tmp_path: Path) -> None:
    write_project(tmp_path, "# Install\n\nRun pip install mkdocs-annotate in a shell.\n")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(NEW_FIELD), str(tmp_path), json.dumps(text_note())],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    # its column, by the migration the table generates (at `since`, with a hand-written step
    # of that version if there is one: schema.LATER)
    assert out["since"] <= out["version"] == out["latest"]
    keys = list(out["created"])
    # validation took it, the decoder read it back, to_dict wrote it in the table's order
    assert out["created"]["priority"] == "high"
    assert keys[keys.index("suggestion") + 1] == "priority"
    assert out["too_long"]["error"] == "priority is 21 characters long; the limit is 20"
    assert out["edited"]["priority"] == "low"
    # SQLite's JSON writer for listings, in the same place
    listed = list(out["listed"])
    assert out["listed"]["priority"] == "low" and listed == keys
    # OpenAPI: the answer, the create body and the edit body; page notes unchanged
    assert out["schemas"]["Annotation"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert out["schemas"]["AnnotationInput"]["anyOf"][0]["maxLength"] == 20
    assert out["schemas"]["AnnotationPatch"]["anyOf"][0]["maxLength"] == 20
    assert out["schemas"]["PageNote"] is None
    # the exports: the JSON export and the Markdown export's rows
    assert out["exported"]["priority"] == "low"
    assert out["outline"] == "low"


def test_docs_list_every_limit_of_the_table() -> None:
    """docs/data-model.md's table of limits says what the field table says."""
    docs = (Path(__file__).parent.parent / "docs" / "data-model.md").read_text()
    section = docs.split("## Limits", 1)[1].split("\n## ", 1)[0]
    documented: dict[str, int] = {}
    for line in section.splitlines():
        if line.startswith("| `"):
            names, limit = line.strip("|").rsplit("|", 1)
            number = int(re.search(r"[\d,]+", limit)[0].replace(",", ""))  # type: ignore[index]
            documented |= dict.fromkeys(re.findall(r"`([\w.]+)`", names), number)
    for table in (fields.ANNOTATION, fields.PAGE_NOTE):
        for f in table:
            if f.limit is not None:
                assert documented.get(f.key) == f.limit, f.key


def test_no_code_is_built_from_strings() -> None:
    """annotate/ runs no code made from text (issue #28): what the field table generates is
    closures, in mypy's and ruff's sight."""
    built = re.compile(r"(?<![.\w])(exec|eval|compile)\(")
    root = Path(fields.__file__).parent
    found = [
        f"{path.relative_to(root)}:{n}: {line.strip()}"
        for path in sorted(root.rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if built.search(line)
    ]
    assert found == []
    # It would see one.
    assert built.search('    exec(compile(source, "<x>", "exec"), namespace)')
    assert not built.search("    pattern = re.compile(r'x'); conn.execute(sql)")
