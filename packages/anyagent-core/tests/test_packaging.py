"""What a package index shows of each package: license, metadata, READMEs that work off the repo.

``nox -s dist`` builds every sdist and wheel, runs ``twine check`` and looks for the LICENSE
inside each artifact; this file checks the sources those artifacts come from (fast, no build).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = sorted(p for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists())
PYTHONS = ["3.10", "3.11", "3.12", "3.13"]


def _project(package: Path) -> dict[str, object]:
    with (package / "pyproject.toml").open("rb") as file:
        project: dict[str, object] = tomllib.load(file)["project"]
    return project


def _names(requirements: object) -> set[str]:
    assert isinstance(requirements, list)
    return {re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements}


def _imports(package: Path) -> set[str]:
    """Top-level modules the package's source imports (at any depth, lazily or not)."""
    found: set[str] = set()
    for source in (package / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_every_package_carries_the_license_and_index_metadata(package: Path) -> None:
    _check_metadata(package)  # a new package: `python .ci/package_metadata.py` gives it all of this


def test_the_metadata_script_gives_a_new_package_what_the_index_shows(tmp_path: Path) -> None:
    package = tmp_path / "anyagent-newagent"
    package.mkdir()
    (package / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling>=1.21"]\nbuild-backend = "hatchling.build"\n\n'
        '[project]\nname = "anyagent-newagent"\nversion = "0.1.0"\nreadme = "README.md"\n'
        'requires-python = ">=3.10"\nlicense = "MIT"\ndependencies = ["anyagent-core>=0.1.0"]\n'
        'classifiers = [\n    "Framework :: Trio",\n    "Typing :: Typed",\n]\n\n'
        '[tool.hatch.build.targets.wheel]\npackages = ["src/anyagent_newagent"]\n'
    )
    script = ROOT / ".ci" / "package_metadata.py"
    subprocess.run([sys.executable, str(script), str(package)], check=True, timeout=60)
    _check_metadata(package)
    project = _project(package)
    assert project["dependencies"] == ["anyagent-core>=0.1,<0.2"] and project["dynamic"] == ["version"]
    assert '__version__ = "0.1.0"' in (package / "src/anyagent_newagent/__init__.py").read_text()
    before = (package / "pyproject.toml").read_text()
    subprocess.run([sys.executable, str(script), str(package)], check=True, timeout=60)
    assert (package / "pyproject.toml").read_text() == before  # idempotent


def _check_metadata(package: Path) -> None:
    project = _project(package)
    assert (package / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    assert project["authors"]
    urls = project["urls"]
    assert isinstance(urls, dict) and {"Homepage", "Source", "Issues", "Changelog"} <= set(urls)
    classifiers = project["classifiers"]
    assert isinstance(classifiers, list)
    for version in PYTHONS:
        assert f"Programming Language :: Python :: {version}" in classifiers
    assert project["requires-python"] == f">={PYTHONS[0]}"


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_package_readmes_work_on_an_index(package: Path) -> None:
    readme = (package / "README.md").read_text()
    relative = [link for link in re.findall(r"\]\(([^)\s]+)\)", readme) if not link.startswith(("http", "#"))]
    assert relative == [], "relative links break on the package index"
    assert not re.search(r"(?<![\w.])/(work|home|root|tmp|Users)/", readme), "a machine-local path"


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_a_package_declares_what_its_code_imports_from_outside(package: Path) -> None:
    project = _project(package)
    declared = _names(project.get("dependencies", []))
    extras = project.get("optional-dependencies", {})
    assert isinstance(extras, dict)
    optional = set().union(*(_names(v) for v in extras.values())) if extras else set()
    third_party = {"httpx": "httpx", "httpx_sse": "httpx-sse", "pytest": "pytest", "prompt_toolkit": "prompt-toolkit"}
    for module, distribution in third_party.items():
        if module in _imports(package):
            assert distribution in declared | optional, f"{package.name} imports {module}"


def test_a_stdio_install_does_not_pull_the_http_stack_or_the_terminal_ui() -> None:
    by_name = {p.name: _project(p) for p in PACKAGES}
    for name in ("anyagent-core", "anyagent-claude", "anyagent-acp"):
        assert not {"httpx", "httpx-sse", "prompt-toolkit", "rich"} & _names(by_name[name]["dependencies"])
    extras = by_name["anyagent-core"]["optional-dependencies"]
    assert isinstance(extras, dict)
    assert _names(extras["http"]) == {"httpx", "httpx-sse"}
    assert _names(extras["cli"]) == {"prompt-toolkit"}
    assert "pytest" in _names(by_name["anyagent-testkit"]["dependencies"])


def _requirement(requirements: object, name: str) -> list[str]:
    assert isinstance(requirements, list)
    return [r for r in requirements if re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0].lower() == name]


def test_every_package_pins_the_core_to_its_0x_series_and_one_anyio_floor() -> None:
    floors = set()
    for package in PACKAGES:
        project = _project(package)
        extras = project.get("optional-dependencies", {})
        assert isinstance(extras, dict)
        every = [*project.get("dependencies", []), *(r for group in extras.values() for r in group)]  # type: ignore[misc]
        if package.name != "anyagent-core":  # `python .ci/package_metadata.py` pins it
            assert _requirement(every, "anyagent-core") == ["anyagent-core>=0.1,<0.2"], package.name
        floors |= {re.sub(r"^anyio(\[trio\])?", "", r) for r in _requirement(every, "anyio")}
    noxfile = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    floors |= set(re.findall(r'"anyio(?:\[trio\])?(>=[\d.]+)"', noxfile))
    assert floors == {">=4.7"}


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_the_version_is_written_in_one_place_the_source(package: Path) -> None:
    project = _project(package)
    # `python .ci/package_metadata.py` moves a written version into the source
    assert "version" not in project and project["dynamic"] == ["version"]
    with (package / "pyproject.toml").open("rb") as file:
        source = package / tomllib.load(file)["tool"]["hatch"]["version"]["path"]
    written = re.findall(r'(?m)^__version__ = "([^"]+)"$', source.read_text(encoding="utf-8"))
    assert len(written) == 1
    # nowhere else in the package's source
    for path in (package / "src").rglob("*.py"):
        if path != source:
            assert not re.search(r'(?m)^__version__ = "', path.read_text(encoding="utf-8")), path
