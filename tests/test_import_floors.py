"""The import rules of annotate/ (docs/architecture.md, "The floors"; issue #28, item 3): no import
cycle, counting imports inside functions and under TYPE_CHECKING, and no import of another
module's private `_name`. Read from the source with `ast`, so an import nobody runs counts too."""

from __future__ import annotations

import ast
from pathlib import Path

import annotate

ROOT = Path(annotate.__file__).parent
# Private names one module still takes from another: none (only shrinks).
KNOWN_PRIVATE: set[tuple[str, str, str]] = set()


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(
    modules: dict[str, Path],
) -> tuple[dict[str, set[str]], set[tuple[str, str, str]]]:
    """(module → the annotate modules it imports, (module, from, private name) triples)."""
    graph: dict[str, set[str]] = {}
    private: set[tuple[str, str, str]] = set()
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        out: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                target = ".".join([*base, *([node.module] if node.module else [])])
                for alias in node.names:
                    if f"{target}.{alias.name}" in modules:
                        out.add(f"{target}.{alias.name}")
                        continue
                    out.add(target)
                    private_name = alias.name.startswith("_") and not alias.name.startswith("__")
                    if private_name and target in modules:
                        private.add((name, target, alias.name))
        graph[name] = {m for m in out if m in modules and m != name}
    return graph, private


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_walk_sees_the_imports() -> None:
    # What the rules below stand on: imports in functions and relative ones are seen.
    graph, _ = _imports(_modules())
    assert "annotate.mcp_server" in graph["annotate.compose"]
    assert "annotate.web.app" in graph["annotate.compose"]
    assert "annotate.compose" in graph["annotate.cli"]  # `annotate mcp`: inside a function
    assert "annotate.web.signin" in graph["annotate.web.app"]


def test_the_tools_table_is_read_by_every_mcp_surface() -> None:
    # One table of tools (annotate/mcp_tools.py), read by the server, the bridge and the view.
    graph, _ = _imports(_modules())
    readers = {m for m, out in graph.items() if "annotate.mcp_tools" in out}
    assert {"annotate.mcp_server", "annotate.mcp_remote", "annotate.chatview"} <= readers


def test_a_cycle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    graph, _ = _imports(_modules())
    assert _cycles(graph) == []


def test_nothing_below_imports_the_top_floor() -> None:
    # annotate/compose.py puts the surfaces together; only entry points import it.
    graph, _ = _imports(_modules())
    importers = {m for m, out in graph.items() if "annotate.compose" in out}
    assert importers == {
        "annotate.chathost",
        "annotate.cli",
        "annotate.mcp_remote",
        "annotate.web.local",
        "annotate.web.server",
        "annotate.web.team",
    }


def test_no_module_imports_another_modules_private_names() -> None:
    _, private = _imports(_modules())
    assert private == KNOWN_PRIVATE
