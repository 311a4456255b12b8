"""Every public name of every package has a docstring: the API reference (``nox -s docs``) is built from them.

The modules are the ones the reference renders (``docs/gen_api.py``: each package's top module and its public
submodules that declare ``__all__``). Checked: the module's own docstring; each name in its ``__all__`` (a class,
a function, or a constant / type alias, whose docstring is the string literal right after its assignment, as
mkdocstrings reads it); each public method and property a public class defines. Skipped (with the docs not beside
the package, as when core is installed alone).
"""

from __future__ import annotations

import ast
import enum
import importlib
import importlib.util
import inspect
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]
GENERATOR = ROOT / "docs" / "gen_api.py"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_api", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_api", module)
    spec.loader.exec_module(module)
    return module


@cache
def _tree(path: str) -> ast.Module:
    return ast.parse(Path(path).read_text(encoding="utf-8"))


def _assignment_documented(module: ModuleType, name: str, depth: int = 0) -> bool:
    """Whether ``name`` is assigned in ``module``'s source with a string literal right after it (following
    ``from X import name`` to the module that assigns it)."""
    if module.__file__ is None or depth > 5:
        return False
    body = _tree(module.__file__).body
    for index, node in enumerate(body):
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            after = body[index + 1] if index + 1 < len(body) else None
            return (
                isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            )
        imports = [node] if isinstance(node, ast.ImportFrom) else node.body if isinstance(node, ast.If) else []
        for statement in imports:  # an import under ``if TYPE_CHECKING:`` (a lazy re-export) counts too
            if not isinstance(statement, ast.ImportFrom):
                continue
            for alias in statement.names:
                if (alias.asname or alias.name) == name:
                    source = importlib.import_module(
                        "." * statement.level + (statement.module or ""),
                        module.__package__ if statement.level else None,
                    )
                    return _assignment_documented(source, alias.name, depth + 1)
    return False


def _public_methods(cls: type) -> list[str]:
    if issubclass(cls, enum.Enum):
        return []
    names = []
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        function = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
        if (isinstance(function, property) or inspect.isfunction(function)) and not (function.__doc__ or "").strip():
            names.append(name)
    return names


def undocumented() -> list[str]:
    """Every public name of every package without a docstring, as dotted paths."""
    missing: list[str] = []
    seen: set[int] = set()
    for package in _generator().packages(ROOT):
        for module_name in package.modules:
            module = importlib.import_module(module_name)
            if not (module.__doc__ or "").strip():
                missing.append(module_name)
            for name in getattr(module, "__all__", ()):
                value = getattr(module, name)
                path = f"{module_name}.{name}"
                if inspect.ismodule(value):
                    continue
                if inspect.isclass(value) or inspect.isfunction(value):
                    if id(value) in seen:
                        continue  # re-exported: checked where first listed
                    seen.add(id(value))
                    if not (value.__doc__ or "").strip():
                        missing.append(path)
                    if inspect.isclass(value):
                        missing += [f"{path}.{method}" for method in _public_methods(value)]
                elif name != "__version__" and not _assignment_documented(module, name):
                    missing.append(path)
    return missing


@pytest.mark.skipif(not GENERATOR.exists(), reason="the docs are not beside this package (installed alone)")
def test_every_public_name_has_a_docstring() -> None:
    missing = undocumented()
    assert missing == [], f"{len(missing)} public names without a docstring:\n" + "\n".join(missing)


@pytest.mark.skipif(not GENERATOR.exists(), reason="the docs are not beside this package (installed alone)")
def test_the_check_sees_a_missing_docstring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "packages" / "demo-pkg"
    (package / "src" / "demo_undoc").mkdir(parents=True)
    (package / "pyproject.toml").write_text('[project]\nname = "demo-pkg"\ndescription = "d"\n')
    (package / "src" / "demo_undoc" / "__init__.py").write_text(
        '"""Doc."""\n__all__ = ["LIMIT", "SHOWN", "Thing", "f"]\nLIMIT = 3\nSHOWN = 4\n"""Four."""\n'
        "class Thing:\n    def method(self) -> None:\n        pass\n"
        'def f() -> None:\n    """Has one."""\n'
    )
    monkeypatch.syspath_prepend(str(package / "src"))
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert undocumented() == ["demo_undoc.LIMIT", "demo_undoc.Thing", "demo_undoc.Thing.method"]
