"""docs/configuration.md documents every plugin option, with its default: a new option cannot go
undocumented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from mkdocs_plugin.plugin import AnnotateConfig

DOC = (Path(__file__).parent.parent / "docs" / "configuration.md").read_text()
OPTIONS = {name: option.default for name, option in AnnotateConfig._schema}


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_option_documented(name: str) -> None:
    assert f"\n### `{name}`\n" in DOC, f"plugin option {name!r} has no section in configuration.md"


def test_defaults_block_matches_the_plugin() -> None:
    block = re.search(r"## Options\n.*?```yaml\n(.*?)```", DOC, re.S)
    assert block, "configuration.md has no YAML block of defaults under ## Options"
    [entry] = yaml.safe_load(block[1])["plugins"]
    assert entry == {"annotate": OPTIONS}
