"""The API reference, generated from the packages at build time (run by mkdocs-gen-files from ``mkdocs.yml``).

One page per public module of every package under ``packages/``: a package's top module (its ``__init__``'s
``__all__``) and each of its modules whose dotted path has no ``_``-prefixed part and that declares ``__all__``.
A module without ``__all__`` (a plugin's hook module, the command line, a pytest plugin) is an entry point, not an
API, and gets no page. A new package appears here by existing: nothing to register.

core's ``tests/test_docstrings.py`` imports this file for the same list of modules and fails on a public name
without a docstring.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Package:
    """One distribution under ``packages/``: its PyPI name, description, and its public modules in page order."""

    distribution: str
    description: str
    modules: tuple[str, ...]

    @property
    def top(self) -> str:
        """The import name of the package's top module (``anyagent`` for ``anyagent-core``)."""
        return self.modules[0]


def _declares_all(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return True
    return False


def _modules(top: Path) -> list[str]:
    found = [top.name]
    for path in sorted(top.rglob("*.py")):
        parts = path.relative_to(top).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not parts or any(part.startswith("_") for part in parts):
            continue
        if _declares_all(path):
            found.append(".".join((top.name, *parts)))
    return found


def packages(root: Path = ROOT) -> list[Package]:
    """Every package under ``root/packages`` with a ``src/<import>/__init__.py``, core first, then by name."""
    found = []
    for directory in sorted((root / "packages").iterdir()):
        pyproject = directory / "pyproject.toml"
        if not pyproject.exists():
            continue
        text = pyproject.read_text(encoding="utf-8")  # tomllib is 3.11+; two plain keys need no parser
        name, description = (re.search(rf'^{key} = "(.*)"$', text, re.M) for key in ("name", "description"))
        for top in sorted((directory / "src").glob("*/__init__.py")):
            modules = tuple(_modules(top.parent))
            found.append(Package(name[1] if name else directory.name, description[1] if description else "", modules))
    return sorted(found, key=lambda p: (p.distribution != "anyagent-core", p.distribution))


def _page(module: str) -> str:
    return f"# `{module}`\n\n::: {module}\n"


def generate() -> None:
    """Write ``reference/<distribution>/<module>.md`` for each public module and the literate-nav ``SUMMARY.md``."""
    import mkdocs_gen_files

    summary = ["* [Overview](index.md)"]
    overview = ["# API reference\n", "Every public name of every package, generated from the code.\n"]
    overview.append("| package | import | what it is |\n|---|---|---|")
    for package in packages():
        first = f"{package.distribution}/{package.top}.md"
        summary.append(f"* [{package.distribution}]({first})")
        overview.append(f"| [`{package.distribution}`]({first}) | `{package.top}` | {package.description} |")
        for module in package.modules:
            path = f"{package.distribution}/{module}.md"
            if module != package.top:
                summary.append(f"    * [{module.removeprefix(package.top + '.')}]({path})")
            with mkdocs_gen_files.open(f"reference/{path}", "w") as page:
                page.write(_page(module))
    with mkdocs_gen_files.open("reference/index.md", "w") as page:
        page.write("\n".join(overview) + "\n")
    with mkdocs_gen_files.open("reference/SUMMARY.md", "w") as nav:
        nav.write("\n".join(summary) + "\n")


if __name__ in {"__main__", "<run_path>"}:
    generate()
