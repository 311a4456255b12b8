"""``docs/writing-an-adapter.md`` keeps up with what it documents: its table of diagnostic codes is
``DiagnosticCode``'s, and it names every conformance check. (Its code blocks run in core's
``test_docs.py``.)"""

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


def test_the_diagnostic_code_table_is_the_one_in_core() -> None:
    rows = re.findall(r"^\| `([a-z_]+)` \| ", _section("Diagnostic codes"), re.M)
    assert len(rows) == len(set(rows))
    assert set(rows) == set(DiagnosticCode.all())


def test_every_conformance_check_is_named() -> None:
    testing = _section("Testing it")
    missing = [check.__name__ for check in CHECKS if f"`{check.__name__.removeprefix('check_')}`" not in testing]
    assert missing == []
