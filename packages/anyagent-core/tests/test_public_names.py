"""``from anyagent import *`` as a type checker sees it, and public classes as tracebacks name them."""

from __future__ import annotations

import ast
import subprocess
import sys
import traceback
from pathlib import Path
from types import ModuleType

import attrs

import anyagent

INIT = Path(anyagent.__file__)


def test_all_is_a_literal_list_a_type_checker_can_read() -> None:
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    (value,) = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
    ]
    assert isinstance(value, ast.List)
    assert all(isinstance(item, ast.Constant) and isinstance(item.value, str) for item in value.elts)
    assert [item.value for item in value.elts] == anyagent.__all__  # type: ignore[attr-defined]


def test_all_names_exactly_what_the_package_exports() -> None:
    exported = {
        name
        for name, value in vars(anyagent).items()
        if not name.startswith("_") and not isinstance(value, ModuleType) and name != "annotations"
    }
    lazy = set(anyagent._LAZY)  # imported on first access by the module's ``__getattr__``
    assert set(anyagent.__all__) == exported | lazy | {"__version__", "jsonread", "seam"}
    assert len(anyagent.__all__) == len(set(anyagent.__all__))
    for name in ("Event", "PermissionRequest", "TurnEnded", "Runtime", "NotInstalled", "hookimpl"):
        assert name in anyagent.__all__


def test_star_import_gives_every_public_name() -> None:
    namespace: dict[str, object] = {}
    exec("from anyagent import *", namespace)
    assert set(anyagent.__all__) <= set(namespace)


def test_public_classes_say_they_live_in_anyagent() -> None:
    for name in ("NotInstalled", "AgentError", "Runtime", "Session", "Events", "ToolStatus", "PermissionChoice"):
        assert getattr(anyagent, name).__module__ == "anyagent"
    for name in anyagent.__all__:
        value = getattr(anyagent, name)
        if isinstance(value, type) and value.__module__.startswith("anyagent") and not attrs.has(value):
            assert value.__module__ == "anyagent", name
    try:
        raise anyagent.NotInstalled("ghost")
    except anyagent.NotInstalled:
        shown = traceback.format_exc()
    assert "anyagent.NotInstalled: " in shown and "_errors" not in shown


def test_a_traceback_from_a_fresh_interpreter_names_the_public_class() -> None:
    code = "import anyagent\nraise anyagent.NotInstalled('ghost')"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stderr.strip().splitlines()[-1] == "anyagent.NotInstalled: agent 'ghost' is not installed"
