"""The example third-party adapter, ``examples/anyagent-echo``, as its users get it: installed from
its folder into a fresh venv (with ``anyagent-core`` and ``anyagent-testkit`` from theirs), its own
test suite run there in a subprocess — the conformance suite on asyncio and trio included.

Slow on purpose but bounded (~30-60 s: a venv, three local builds, a pytest run), so it runs once
(a plain test, not per backend) with the venv shared by the module. ``uv`` builds the venv when it
is on PATH (CI), else ``python -m venv`` + pip; it skips only when neither can make a venv.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import attrs
import pytest

from anyagent_testkit.conformance import CHECKS

PACKAGES = Path(__file__).resolve().parents[2]
EXAMPLE = PACKAGES / "anyagent-testkit" / "examples" / "anyagent-echo"
LOCAL = [PACKAGES / "anyagent-core", PACKAGES / "anyagent-testkit", EXAMPLE]
TEST_DEPS = ["pytest>=8", "anyio[trio]>=4.7", "hypothesis>=6.100"]
INSTALL_TIMEOUT = 600.0
RUN_TIMEOUT = 600.0
BACKENDS = ("asyncio", "trio")
TIMINGS: dict[str, float] = {}
ECHO_SKIPS = frozenset({"between_turns"})
"""The checks echo-agent cannot stage: it has no settings at all."""


@attrs.frozen
class Venv:
    """A fresh virtual environment: its interpreter and the environment to run things in it."""

    root: Path
    python: Path
    env: dict[str, str]

    def run(
        self, argv: Sequence[str | Path], timeout: float, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(a) for a in argv], cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout
        )


def _bin(root: Path) -> Path:
    return root / ("Scripts" if os.name == "nt" else "bin")


def _isolated_env(root: Path) -> dict[str, str]:
    """Our environment minus anything that would reach past the venv (other venvs, plugin filters,
    pinned agent binaries, pytest options), with the venv's ``bin`` first on PATH."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("ANYAGENT_", "PYTEST_", "PYTHON")) and key not in ("VIRTUAL_ENV", "CONDA_PREFIX")
    }
    env["PATH"] = os.pathsep.join([str(_bin(root)), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(root)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # leave no __pycache__ in the source tree,
    env["HYPOTHESIS_STORAGE_DIRECTORY"] = str(root.parent / "hypothesis")  # and no .hypothesis either
    return env


def _check(result: subprocess.CompletedProcess[str], what: str) -> None:
    assert result.returncode == 0, (
        f"{what} failed ({result.returncode}):\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    )


def _create(root: Path) -> tuple[Venv, list[str]]:
    """Make the venv; the command prefix that installs into it. Skips when no venv can be made."""
    uv = shutil.which("uv")
    python = _bin(root) / ("python.exe" if os.name == "nt" else "python")
    venv = Venv(root, python, _isolated_env(root))
    if uv is not None:
        _check(venv.run([uv, "venv", "--python", sys.executable, root], INSTALL_TIMEOUT), "uv venv")
        return venv, [uv, "pip", "install", "--python", str(python)]
    made = venv.run([sys.executable, "-m", "venv", root], INSTALL_TIMEOUT)
    if made.returncode != 0:
        pytest.skip(f"cannot create a virtual environment: no uv on PATH and `python -m venv` failed: {made.stderr}")
    return venv, [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--quiet"]


@pytest.fixture(scope="module")
def example_venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A venv with core, testkit and the example installed (not editable) from their folders."""
    started = time.monotonic()
    venv, install = _create(tmp_path_factory.mktemp("example") / "venv")
    _check(venv.run([*install, *LOCAL, *TEST_DEPS], INSTALL_TIMEOUT), "installing the example")
    TIMINGS["venv_and_install_s"] = round(time.monotonic() - started, 1)
    return venv


def _outcomes(junit: Path) -> dict[str, str]:
    """Test id → "passed" / "skipped" / "failed" from a JUnit XML report."""
    outcomes: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        if case.find("skipped") is not None:
            outcomes[name] = "skipped"
        elif case.find("failure") is not None or case.find("error") is not None:
            outcomes[name] = "failed"
        else:
            outcomes[name] = "passed"
    return outcomes


def test_the_example_adapter_passes_its_own_suite_in_a_fresh_venv(example_venv: Venv, tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    started = time.monotonic()
    result = example_venv.run(
        [example_venv.python, "-m", "pytest", "-q", f"--junitxml={junit}", "-o", "junit_family=xunit2"],
        RUN_TIMEOUT,
        cwd=EXAMPLE,
    )
    TIMINGS["example_suite_s"] = round(time.monotonic() - started, 1)
    _check(result, "the example's test suite")
    outcomes = _outcomes(junit)
    expected = {
        f"test_conformance::test_conformance[{backend}-{name}]": "skipped" if name in ECHO_SKIPS else "passed"
        for backend in BACKENDS
        for name in (check.__name__.removeprefix("check_") for check in CHECKS)
    }
    if not sys.platform.startswith("linux"):  # process accounting reads /proc
        linux_only = ("close_reaps", "dropped_handles_reap")
        expected = {name: "skipped" if any(c in name for c in linux_only) else o for name, o in expected.items()}
    assert {name: outcomes.get(name, "missing") for name in expected} == expected
    assert [name for name, outcome in outcomes.items() if outcome != "passed" and name not in expected] == []
    assert len(outcomes) > len(expected), "the example's own tests beyond the conformance suite did not run"
    print(f"example adapter timings: {TIMINGS}, {len(outcomes)} tests")  # shown with -rP


def test_the_installed_example_exposes_its_entry_point_and_console_script(example_venv: Venv) -> None:
    probe = (
        "import importlib.metadata as m, importlib.resources as r;"
        "print(sorted(f'{e.name}={e.value}' for e in m.entry_points(group='anyagent')));"
        "print(r.files('anyagent_echo').joinpath('py.typed').is_file())"
    )
    result = example_venv.run([example_venv.python, "-c", probe], 60)
    _check(result, "probing the installed package")
    assert result.stdout.split("\n")[:2] == ["['echo=anyagent_echo.plugin']", "True"]
    version = example_venv.run([_bin(example_venv.root) / "echo-agent", "--version"], 60)
    _check(version, "echo-agent --version")
    assert version.stdout.strip() == "echo-agent 0.1.0"
    assert shutil.which("echo-agent", path=example_venv.env["PATH"]) == str(_bin(example_venv.root) / "echo-agent")
