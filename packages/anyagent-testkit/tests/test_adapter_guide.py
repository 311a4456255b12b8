"""``docs/writing-an-adapter.md`` keeps up with what it documents: it says who sends each code of
``DiagnosticCode`` (their meanings are ``docs/events.md``'s generated table), and it names every
conformance check. (Its code blocks run in core's ``test_docs.py``.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from anyagent import DiagnosticCode
from anyagent_testkit.conformance import CHECKS

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "writing-an-adapter.md"

pytestmark = pytest.mark.skipif(not GUIDE.exists(), reason="the docs are not beside this package (installed alone)")


def _section(title: str) -> str:
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_the_diagnostic_codes_section_places_every_code_in_core() -> None:
    section = _section("Diagnostic codes")
    adapter_codes = re.findall(r"^\| `([a-z_]+)` \| ", section, re.M)
    engine_codes = re.findall(r"`([a-z_]+)`", section[section.index("The engine's own codes") :])
    placed = [*adapter_codes, *engine_codes]
    assert len(placed) == len(set(placed))
    assert set(placed) == set(DiagnosticCode.all())


def test_every_conformance_check_is_named() -> None:
    testing = _section("Testing it")
    missing = [check.__name__ for check in CHECKS if f"`{check.__name__.removeprefix('check_')}`" not in testing]
    assert missing == []


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)


def test_the_guide_says_what_a_translator_returns_and_who_bounds_the_handshake() -> None:
    from anyagent import seam

    text = GUIDE.read_text(encoding="utf-8")
    (row,) = [line for line in text.splitlines() if line.startswith("| **the translator** |")]
    assert "`seam.DriverEvent`" in row and "`seam.TurnAck()`" in row and "`seam.TurnEnd(stop)`" in row
    contract = _section("The contract")
    assert "`Runtime.open` runs `Adapter.connect` under" in contract
    assert f"`seam.HANDSHAKE_TIMEOUT` ({seam.HANDSHAKE_TIMEOUT:g} s)" in contract
    assert "`HandshakeTimeout`" in contract


def test_subject_launch_in_the_guide_is_synchronous_and_never_starts_an_event_loop() -> None:
    import ast
    import inspect

    from anyagent import AgentInstallation

    launches = []
    for block in _python_blocks():
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "launch":
                launches.append(node)
    assert launches, "the guide shows a conformance subject"
    for launch in launches:
        assert isinstance(launch, ast.FunctionDef), "Subject.launch is synchronous"
        calls = [ast.unparse(n.func) for n in ast.walk(launch) if isinstance(n, ast.Call)]
        assert not [c for c in calls if c.endswith(("anyio.run", "discover"))], calls
    assert 'AgentInstallation.at("tiny", shutil.which("tiny-agent"))' in _section("A complete adapter")
    assert list(inspect.signature(AgentInstallation.at).parameters) == ["agent_id", "path"]


def test_one_registration_style_in_the_guide_and_the_docstrings() -> None:
    from anyagent import hookspecs, seam

    shown = [GUIDE.read_text(encoding="utf-8"), seam.Adapter.__doc__ or "", hookspecs.__doc__ or ""]
    for text in shown:
        assert "return [" not in text
    assert all("register.adapter(" in text for text in shown)
