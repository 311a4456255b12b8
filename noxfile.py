"""Contributor commands: ``nox -s tests``, ``nox -s lint``, ``nox -s demo``, ``nox -s bench``, ``nox -s live``,
``nox -s fuzz``, ``nox -s browser`` (anyagent ui in chromium), ``nox -s install`` (the README's install lines in a
fresh environment), ``nox -s docs``."""

from __future__ import annotations

import os
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["tests", "lint"]
nox.options.reuse_existing_virtualenvs = True

ROOT = Path(__file__).parent
PACKAGES = sorted(p for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists())
TEST_DEPS = [
    "pytest>=8",
    "anyio[trio]>=4.7",
    "hypothesis>=6.100",
    "pexpect>=4.9",
    "pyte>=0.8",  # the CLI's pseudo-terminal tests read the screen a person would see
    "jsonschema>=4.20",
    "rfc3339-validator>=0.1.4",
    "agent-client-protocol>=0.12,<0.13",
    "httpx-ws>=0.7",  # the sidecar's WebSocket tests' client (anyio: asyncio and trio)
    "mypy>=1.11",  # core's test_public_types runs mypy on a snippet (what reveal_type shows a user)
]


def _install_packages(session: nox.Session) -> None:
    args: list[str] = []
    for package in PACKAGES:
        # core with its extras: the chat input line (cli) and the HTTP+SSE wire helpers (http) are tested
        extras = {"anyagent-core": "[cli,http]", "anyagent-store": "[postgres]"}.get(package.name, "")
        args += ["-e", f"{package}{extras}"]
    session.install(*args)


@nox.session
def tests(session: nox.Session) -> None:
    """Every package's offline tests, on asyncio and trio."""
    _install_packages(session)
    session.install(*TEST_DEPS)
    # anyagent-ray's tests start Ray clusters: they run in `nox -s ray`
    targets = [str(p / "tests") for p in PACKAGES if (p / "tests").exists() and p.name != "anyagent-ray"]
    session.run("pytest", *(session.posargs or targets))


@nox.session
def ray(session: nox.Session) -> None:
    """anyagent-ray's tests on local Ray clusters (one node with 2 CPUs, two nodes on one machine), asyncio and
    trio. Its ruff and mypy run in `nox -s lint` (ray is a dependency of anyagent-ray, installed everywhere)."""
    _install_packages(session)
    session.install(*TEST_DEPS)
    session.run(
        "pytest",
        str(ROOT / "packages/anyagent-ray/tests"),
        *session.posargs,
        # a raylet on a busy 2-core machine took longer than Ray's default 60 s wait to start (seen at load 30)
        env={"RAY_USAGE_STATS_ENABLED": "0", "RAY_raylet_start_wait_time_s": "120"},
    )


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (lint + format check) and mypy --strict over every package."""
    _install_packages(session)
    session.install("ruff>=0.6", "mypy>=1.11", *TEST_DEPS)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy", *[str(p / "src") for p in PACKAGES])


@nox.session
def fuzz(session: nox.Session) -> None:
    """The testkit's fuzz harness: >= 10k mutated recorded frames per adapter (claude, ACP, codex, pi), counters
    printed.

    ``ANYAGENT_FUZZ_FRAMES`` / ``ANYAGENT_FUZZ_SEED`` from the environment override the size and seed.
    """
    _install_packages(session)
    session.install(*TEST_DEPS)
    env = {
        "ANYAGENT_FUZZ_FRAMES": os.environ.get("ANYAGENT_FUZZ_FRAMES", "10000"),
        "ANYAGENT_FUZZ_SEED": os.environ.get("ANYAGENT_FUZZ_SEED", "0"),
    }
    # one backend (asyncio) for the long run; the bounded run in `nox -s tests` covers trio too
    tests = [
        str(ROOT / "packages/anyagent-claude/tests/test_claude_fuzz.py"),
        str(ROOT / "packages/anyagent-acp/tests/test_acp_fuzz.py"),
        str(ROOT / "packages/anyagent-codex/tests/test_codex_fuzz.py"),
        str(ROOT / "packages/anyagent-pi/tests/test_pi_fuzz.py"),
        str(ROOT / "packages/anyagent-server/tests/test_server_fuzz.py"),  # command lines into the sidecar
    ]
    session.run("pytest", "-s", "-k", "fuzzed and asyncio", *tests, *session.posargs, env=env)


_README_INSTALL = r"""
import pathlib, re, shlex, subprocess, sys
ran = []
for name in sys.argv[1:]:
    text = pathlib.Path(name).read_text(encoding="utf-8")
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            # the lines that install from the checkout, as written, with this environment's pip
            if words[:2] == ["pip", "install"] and words[2:] and all(w.startswith("./packages/") for w in words[2:]):
                print(f"$ {shlex.join(words)}   ({name})", flush=True)
                subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *words[2:]], check=True)
                ran.append(name)
missing = [name for name in sys.argv[1:] if name not in ran]
sys.exit(f"no checkout install line in {missing}" if missing else 0)
"""


@nox.session(venv_backend="venv", reuse_venv=False)
def install(session: nox.Session) -> None:
    """The install lines of the README, getting-started and every adapter's README, as written (pip, from
    the checkout), in a fresh environment; then the installed command runs a turn."""
    readmes = [ROOT / "README.md", ROOT / "docs/getting-started.md"]
    readmes += [p / "README.md" for p in PACKAGES if p.name != "anyagent-testkit"]  # the testkit's is for tests
    session.run("python", "-c", _README_INSTALL, *map(str, readmes))
    session.run("anyagent", "--version")
    session.run("python", "-c", "import anyagent, anyagent_claude, prompt_toolkit; print(anyagent.Runtime)")
    session.run("anyagent", "plugins")
    session.run("anyagent", "demo", "--yes")


@nox.session
def demo(session: nox.Session) -> None:
    """One turn through the whole stack, printed as a person would read it."""
    _install_packages(session)
    session.run("anyagent", "demo", "--yes", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Throughput and latency benchmarks (figures, not pass/fail)."""
    _install_packages(session)
    # the SDKs are yardsticks: claude-agent-sdk for bench_claude, agent-client-protocol for bench_acp,
    # opencode-ai for bench_opencode
    session.install("anyio[trio]>=4.7", "httpx", "claude-agent-sdk", "agent-client-protocol>=0.12,<0.13", "opencode-ai")
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        session.run("python", str(script), *session.posargs)


@nox.session
def live(session: nox.Session) -> None:
    """The real agent CLIs (pinned, from npm) against the loopback fake model."""
    _install_packages(session)
    session.install(*TEST_DEPS)
    live_dirs = [str(p / "tests") for p in PACKAGES if (p / "tests").exists()]
    session.run("pytest", "-m", "live", "--live", *(session.posargs or live_dirs))


BROWSER_DEPS = ["pytest>=8", "playwright>=1.40"]


@nox.session
def browser(session: nox.Session) -> None:
    """``anyagent ui`` in a real browser: Playwright driving Debian's chromium (``CHROMIUM``, default
    /usr/bin/chromium; Playwright's own browser download is not used) against the server as a subprocess."""
    _install_packages(session)
    session.install(*BROWSER_DEPS)
    # --live: the claude scenario installs the pinned CLI from npm (like nox -s live) and runs against the fake model
    session.run("pytest", "-p", "no:anyio", "--live", *(session.posargs or ["packages/anyagent-server/browser_tests"]))


@nox.session
def screenshots(session: nox.Session) -> None:
    """Regenerate docs/images/ui-chat.png, ui-threads.png and ui-usage.png: ``anyagent ui`` against
    scripted agents in chromium."""
    _install_packages(session)
    session.install(*BROWSER_DEPS)
    session.run("python", "packages/anyagent-server/browser_tests/screenshots.py")


DOCS_DEPS = [
    "mkdocs>=1.6,<2",
    "mkdocs-material>=9.5",
    "mkdocstrings[python]>=0.26",
    "mkdocs-gen-files>=0.5",
    "mkdocs-literate-nav>=0.6",
    "ruff>=0.6",  # mkdocstrings formats the signatures with it
]


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site (guides + an API reference generated from every package), built ``--strict``.

    ``nox -s docs -- serve`` serves it on http://127.0.0.1:8000 instead; the site lands in ``site/``.
    """
    _install_packages(session)
    session.install(*DOCS_DEPS)
    env = {"NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}  # the plugins' banners, not our output
    if session.posargs[:1] == ["serve"]:
        session.run("mkdocs", "serve", "--dev-addr", "127.0.0.1:8000", *session.posargs[1:], env=env)
    else:
        session.run("mkdocs", "build", "--strict", "--site-dir", str(ROOT / "site"), *session.posargs, env=env)


_DIST_CHECK = """
import sys, tarfile, zipfile, pathlib
missing = []
for artifact in sorted(pathlib.Path(sys.argv[1]).glob("*.*[lz]")):
    if artifact.suffix == ".whl":
        names = zipfile.ZipFile(artifact).namelist()
        ok = any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    else:
        names = tarfile.open(artifact).getnames()
        ok = any(n.count("/") == 1 and n.endswith("/LICENSE") for n in names)
    print(("LICENSE ok   " if ok else "LICENSE MISSING ") + artifact.name)
    if not ok:
        missing.append(artifact.name)
sys.exit(1 if missing else 0)
"""


@nox.session
def dist(session: nox.Session) -> None:
    """Build every package's sdist and wheel, ``twine check`` them, and find the LICENSE inside each."""
    session.install("build>=1.2", "twine>=5.1", "uv>=0.4")
    out = Path(session.create_tmp()) / "dist"
    if out.exists():
        for old in out.iterdir():
            old.unlink()
    for package in PACKAGES:
        session.run("uv", "build", "--quiet", "--out-dir", str(out), str(package))
    artifacts = sorted(str(p) for p in out.iterdir() if p.name.endswith((".whl", ".tar.gz")))
    session.run("twine", "check", "--strict", *artifacts)
    session.run("python", "-c", _DIST_CHECK, str(out))


_README_SCRIPT = """
import re, pathlib
from anyagent import Runtime
from anyagent.cli import agents_markdown
path = pathlib.Path("README.md")
table = agents_markdown(Runtime())
block = re.compile(r"(<!-- agents:start -->\\n).*?(\\n<!-- agents:end -->)", re.S)
text = block.sub(lambda m: m[1] + table + m[2], path.read_text())
path.write_text(text)
from anyagent._docs import codes_markdown
path = pathlib.Path("docs/events.md")
block = re.compile(r"(<!-- codes:start -->\\n).*?(\\n<!-- codes:end -->)", re.S)
path.write_text(block.sub(lambda m: m[1] + codes_markdown() + m[2], path.read_text()))
"""


@nox.session
def readme(session: nox.Session) -> None:
    """Regenerate the README's agent table and the events reference's code table."""
    _install_packages(session)
    session.run("python", "-c", _README_SCRIPT)
