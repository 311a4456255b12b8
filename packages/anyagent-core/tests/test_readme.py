"""The README's table of supported agents is generated from the installed profiles (`nox -s readme`)."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest

from anyagent import Runtime
from anyagent.cli import agents_markdown

ROOT = Path(__file__).resolve().parents[3]


def test_the_readme_agent_table_matches_the_installed_profiles() -> None:
    readme = ROOT / "README.md"
    if not readme.exists():
        pytest.skip("the README is not beside this package (installed alone)")
    packages = {p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists()}
    installed = {dist.metadata["Name"] for dist in metadata.distributions()}
    if not packages <= installed:
        pytest.skip(f"not every package of the repo is installed: {sorted(packages - installed)}")
    match = re.search(r"<!-- agents:start -->\n(.*?)\n<!-- agents:end -->", readme.read_text(), re.S)
    assert match, "README.md has no <!-- agents:start --> … <!-- agents:end --> block"
    assert match[1] == agents_markdown(Runtime()), "the README's agent table is stale: run `nox -s readme`"


def test_the_diagnostic_code_table_in_the_events_reference_matches_the_code() -> None:
    from anyagent._docs import codes_markdown

    page = ROOT / "docs" / "events.md"
    if not page.exists():
        pytest.skip("the docs are not beside this package (installed alone)")
    match = re.search(r"<!-- codes:start -->\n(.*?)\n<!-- codes:end -->", page.read_text(), re.S)
    assert match, "docs/events.md has no <!-- codes:start --> … <!-- codes:end --> block"
    assert match[1] == codes_markdown(), "the diagnostic code table is stale: run `nox -s readme`"
