"""What a type checker shows a user: mypy's ``reveal_type`` (and so an IDE hover or a type error)
names every public type by a public module path, ``anyagent.types.TextDelta``, never a private one
such as ``anyagent._types.TextDelta``."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import mypy.api

import anyagent
from anyagent import hookspecs, jsonread, mock, process, seam, serialize, toolkit, wire

MODULES: tuple[types.ModuleType, ...] = (anyagent, seam, toolkit, wire, process, mock, serialize, hookspecs, jsonread)
# a dotted name as mypy prints it; "anyagent.types.TextDelta", "builtins.str", "anyio.abc.TaskGroup"
DOTTED = re.compile(r"\b[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+")


def _type_names(module: types.ModuleType) -> list[str]:
    """The names in ``module.__all__`` a user can annotate with: classes and type aliases."""
    found = []
    for name in module.__all__:
        value = getattr(module, name)
        if isinstance(value, type) or _is_alias(value):
            found.append(name)
    return found


def _is_alias(value: object) -> bool:
    return type(value).__module__ == "typing" or isinstance(value, types.UnionType)


def _snippet() -> tuple[str, list[str]]:
    lines = ["from __future__ import annotations", ""]
    lines += [f"import {module.__name__}" for module in MODULES]
    lines.append("")
    revealed = []
    for module in MODULES:
        for name in _type_names(module):
            spelled = f"{module.__name__}.{name}"
            revealed.append(spelled)
            function = "_" + spelled.replace(".", "_")
            lines += [f"def {function}(value: {spelled}) -> None:", "    reveal_type(value)", ""]
    return "\n".join(lines), revealed


def _private_segments(shown: str) -> list[str]:
    return [
        dotted
        for dotted in DOTTED.findall(shown)
        if any(part.startswith("_") for part in dotted.split(".")[:-1])  # a private module, not a private name
    ]


def test_private_segments_are_found_in_a_revealed_type() -> None:
    assert _private_segments('Revealed type is "anyagent._types.TextDelta"') == ["anyagent._types.TextDelta"]
    assert _private_segments('Revealed type is "Union[anyagent.types.A, x._y.B]"') == ["x._y.B"]
    assert _private_segments('Revealed type is "anyagent.types.TextDelta"') == []


def test_reveal_type_names_every_public_type_by_a_public_module(tmp_path: Path) -> None:
    source, spelled = _snippet()
    assert {"anyagent.Event", "anyagent.Session", "anyagent.Events", "anyagent.Runtime"} <= set(spelled)
    assert {"anyagent.SessionOptions", "anyagent.NotInstalled", "anyagent.AgentInstallation"} <= set(spelled)
    assert {"anyagent.TextDelta", "anyagent.EventKind", "anyagent.LoginMethod", "anyagent.seam.Adapter"} <= set(spelled)
    snippet = tmp_path / "snippet.py"
    snippet.write_text(source, encoding="utf-8")
    out, err, _status = mypy.api.run(
        [
            "--strict",
            "--no-error-summary",
            "--hide-error-context",
            "--no-color-output",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--python-executable",
            sys.executable,
            str(snippet),
        ]
    )
    notes = [line for line in out.splitlines() if "Revealed type is" in line]
    assert len(notes) == len(spelled), out + err  # one reveal per name, nothing else went wrong
    assert 'Revealed type is "anyagent.types.TextDelta"' in out
    shown = {name: note.split("Revealed type is", 1)[1] for name, note in zip(spelled, notes, strict=True)}
    offending = {name: revealed for name, revealed in shown.items() if _private_segments(revealed)}
    assert offending == {}


def test_every_public_class_says_it_lives_in_a_public_module() -> None:
    """``type(value)``, ``repr`` of a class and tracebacks show ``__module__``: ``anyagent`` (errors,
    enums, ``Runtime``, ``Session``…) or the public module that defines it (the attrs values:
    ``anyagent.types.TextDelta``), never a private one."""
    shown = {
        f"{module.__name__}.{name}": getattr(module, name).__module__
        for module in MODULES
        for name in module.__all__
        if isinstance(getattr(module, name), type)
    }
    assert shown["anyagent.TextDelta"] == "anyagent.types"
    assert shown["anyagent.NotInstalled"] == "anyagent"
    assert {name: where for name, where in shown.items() if any(p.startswith("_") for p in where.split("."))} == {}
