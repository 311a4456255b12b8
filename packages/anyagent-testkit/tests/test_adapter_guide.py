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
