"""The package's module layout: no import cycles between anyagent's modules, and no adapter
package imported by core.

The graph is read from the source with ``ast``, and it is strict: every import counts, wherever it
is written — at module level, inside a function (a "lazy" import), or under ``if TYPE_CHECKING:``.
A cycle that only type checking or a deferred import closes is still two modules that cannot be
understood (or type-checked, or resolved by ``typing.get_type_hints``) one without the other, and
deferring an import hides a cycle instead of removing it. Importing a submodule also runs its
package's ``__init__``; that implicit edge is not counted (``anyagent/__init__.py`` imports the
public modules, and no module imports ``anyagent`` itself).
"""

from __future__ import annotations

import ast
from pathlib import Path

import anyagent

PACKAGE = Path(anyagent.__file__).parent


def _modules() -> dict[str, Path]:
    return {("anyagent" if p.stem == "__init__" else f"anyagent.{p.stem}"): p for p in PACKAGE.glob("*.py")}


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    """The anyagent modules ``module`` imports, anywhere in its source."""
    package = "anyagent"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = package + (f".{node.module}" if node.module else "")
            # `from . import x` and `from anyagent import x` may name submodules
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        found.update(t for t in targets if t in known and t != module)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (or a self-import)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_sees_every_kind_of_import() -> None:
    graph = import_graph()
    assert "anyagent.recording" in graph["anyagent.process"]  # under `if TYPE_CHECKING:`
    assert "anyagent.http" in graph["anyagent.wire"]  # inside a function (`__getattr__`)
    assert "anyagent._demo" in graph["anyagent.cli"]  # inside a function
    assert "anyagent.jsonread" in graph["anyagent"]  # `from . import jsonread, seam`


def test_the_cycle_finder_finds_cycles() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_anyagent_has_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_core_never_imports_an_adapter_package() -> None:
    """Adapters reach core through plugins (entry points, hooks); core names none of them in code."""
    offenders = []
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called in ("import_module", "__import__"):
                    names = [str(node.args[0].value)]
            offenders += [f"{path.name}: {name}" for name in names if name.startswith("anyagent_")]
    assert offenders == []
