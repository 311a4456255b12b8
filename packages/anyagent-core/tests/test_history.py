"""``Runtime.history`` and ``HistoryEntry``: the agents' own conversation lists, through the mock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from anyagent import (
    AgentInstallation,
    DiagnosticInfo,
    HistoryEntry,
    InvalidRequest,
    NotInstalled,
    ResumeFailed,
    Runtime,
    SessionOptions,
    TextDelta,
    TurnEnded,
    UnsupportedFeature,
    seam,
    serialize,
)
from anyagent.mock import Script, Step, completed, text

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)


def entry(token: str, cwd: str, minutes: int | None, title: str | None = None) -> HistoryEntry:
    when = T0 + timedelta(minutes=minutes) if minutes is not None else None
    return HistoryEntry("mock", token, title or f"conversation {token}", cwd, when, when, 2)


def test_an_entry_keeps_its_times_in_utc_and_refuses_naive_ones() -> None:
    paris = timezone(timedelta(hours=1))
    kept = HistoryEntry("claude", "t", created_at=datetime(2026, 1, 1, 13, 0, tzinfo=paris))
    assert kept.created_at == datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
    assert kept.created_at is not None and kept.created_at.tzinfo is timezone.utc
    assert kept.last_activity == kept.created_at
    with pytest.raises(InvalidRequest, match="naive"):
        HistoryEntry("claude", "t", updated_at=datetime(2026, 1, 1, 12, 0))


def test_an_entry_round_trips_through_serialize() -> None:
    full = entry("tok-1", "/work/repo", 5)
    assert serialize.loads(serialize.dumps(full), HistoryEntry) == full
    bare = HistoryEntry("codex", "thr_1")
    assert serialize.loads(serialize.dumps(bare), HistoryEntry) == bare
    assert '"resume_token":"thr_1"' in serialize.dumps(bare)
    assert "HistoryEntry" in serialize.json_schema()["$defs"]


async def test_history_lists_newest_first_filtered_by_directory(tmp_path: Path) -> None:
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    kept = [
        entry("old", str(here), 1),
        entry("undated", str(here), None),
        entry("new", str(here), 30),
        entry("elsewhere", str(there), 60),
    ]
    async with Runtime.with_mock(Script(history=kept)) as runtime:
        listed = await runtime.history("mock", here)
        assert [e.resume_token for e in listed] == ["new", "old", "undated"]
        everything = await runtime.history("mock")
        assert [e.resume_token for e in everything] == ["elsewhere", "new", "old", "undated"]
        # a relative or symlinked directory names the same place
        (tmp_path / "link").symlink_to(here)
        assert [e.resume_token for e in await runtime.history("mock", tmp_path / "link")] == ["new", "old", "undated"]


async def test_resuming_a_listed_conversation_opens_it_with_its_title(tmp_path: Path) -> None:
    script = Script(history=[entry("tok-7", str(tmp_path), 3, title="fix the flaky test")]).turn(
        [Step.emit(text("m1", "back again")), Step.end(completed())]
    )
    async with Runtime.with_mock(script) as runtime:
        (listed,) = await runtime.history("mock", tmp_path)
        session, events = await runtime.open(
            (await runtime.discover()).require("mock"), SessionOptions.in_dir(tmp_path).resume(listed.resume_token)
        )
        async with session:
            assert session.info().resume_token == "tok-7"
            assert session.info().title == "fix the flaky test"
            await session.prompt("continue")
            said = []
            async for event in events:
                if isinstance(event.kind, TextDelta):
                    said.append(event.kind.text)
                if isinstance(event.kind, TurnEnded):
                    break
            assert said == ["back again"]
        with pytest.raises(ResumeFailed, match="no conversation"):
            await runtime.open(
                (await runtime.discover()).require("mock"), SessionOptions.in_dir(tmp_path).resume("tok-unknown")
            )


async def test_an_agent_without_history_answers_unsupported_feature() -> None:
    async with Runtime.with_mock(Script()) as runtime:
        with pytest.raises(UnsupportedFeature, match="keeps no history"):
            await runtime.history("mock")
        with pytest.raises(NotInstalled):
            await runtime.history("claude")
        with pytest.raises(InvalidRequest, match="cwd must be a path"):
            await runtime.history("mock", 42)  # type: ignore[arg-type]


class _Foreign(seam.Adapter):
    """An adapter whose listing names another agent id and skips a file."""

    wire = "foreign"

    async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
        raise AssertionError("history never connects a session")

    async def history(self, request: seam.ConnectRequest, cwd: Path | None) -> seam.HistoryListing:
        assert cwd is None
        assert request.options.no_tools
        return seam.HistoryListing(
            [HistoryEntry("someone-else", "a", created_at=T0)],
            [DiagnosticInfo("skipped /x.jsonl: not a transcript", code="history_unreadable")],
        )


class _ForeignPlugin:
    from anyagent import hookimpl as _hookimpl

    @_hookimpl
    def anyagent_adapters(self, register: object) -> None:
        register.adapter(_Foreign, wire="foreign")  # type: ignore[attr-defined]


async def test_the_runtime_stamps_the_agent_id_and_reports_skipped_files() -> None:
    seen: list[DiagnosticInfo] = []
    async with Runtime(plugins=[_ForeignPlugin()]) as runtime:
        agent = AgentInstallation.at("custom", "/bin/true")
        listed = await runtime.history(_with_wire(agent, "foreign"), on_diagnostic=seen.append)
    assert [(e.agent_id, e.resume_token) for e in listed] == [("custom", "a")]
    assert [d.code for d in seen] == ["history_unreadable"]


def _with_wire(agent: AgentInstallation, wire: str) -> AgentInstallation:
    import attrs

    return attrs.evolve(agent, wire=wire)


# ---------------------------------------------------------------------------------------------
# toolkit: bounded JSONL samples, times, titles


def test_a_sample_reads_a_head_and_a_tail_and_never_a_cut_line(tmp_path: Path) -> None:
    from anyagent import toolkit

    path = tmp_path / "t.jsonl"
    lines = [f'{{"n": {i}, "pad": "{"x" * 50}"}}' for i in range(200)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    sample = toolkit.read_json_lines_sample(path, head_bytes=1000, tail_bytes=1000)
    assert not sample.complete and sample.bad_lines == 0
    numbers = [value["n"] for value in sample.lines]
    assert numbers[0] == 0 and numbers[-1] == 199
    assert numbers == sorted(set(numbers))  # no line twice, none cut
    assert 0 < len(sample.head) <= 1000 // 60 and 0 < len(sample.tail) <= 1000 // 60
    whole = toolkit.read_json_lines_sample(path, head_bytes=1000, tail_bytes=len(path.read_bytes()))
    assert whole.complete and [v["n"] for v in whole.lines] == list(range(200))
    small = tmp_path / "s.jsonl"
    small.write_bytes(b'{"a": 1}\n[1]\nnot json\n{"b": 2}')  # no final newline: still read when whole
    read = toolkit.read_json_lines_sample(small)
    assert read.complete and read.head == ({"a": 1}, {"b": 2}) and read.bad_lines == 2


async def test_sampling_skips_what_it_cannot_read_with_a_diagnostic(tmp_path: Path) -> None:
    from anyagent import toolkit

    good = tmp_path / "good.jsonl"
    good.write_text('{"a": 1}\n', encoding="utf-8")
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    samples, diagnostics = await toolkit.sample_json_lines(lambda: [good, folder, tmp_path / "gone.jsonl"])
    assert [s.path for s in samples] == [good]
    assert [d.code for d in diagnostics] == ["history_unreadable", "history_unreadable"]
    samples, diagnostics = await toolkit.sample_json_lines(lambda: [good, good, good], max_files=2)
    assert len(samples) == 2 and [d.code for d in diagnostics] == ["history_truncated"]


def test_history_times_and_titles() -> None:
    from anyagent import toolkit

    utc = timezone.utc
    assert toolkit.history_time("2026-12-03T00:46:47.021Z") == datetime(2026, 12, 3, 0, 46, 47, 21000, tzinfo=utc)
    assert toolkit.history_time("2026-12-03T01:46:47.1234567+01:00") == datetime(
        2026, 12, 3, 0, 46, 47, 123456, tzinfo=utc
    )
    assert toolkit.history_time(1796258308404) == toolkit.history_time(1796258308.404)
    assert toolkit.history_time(True) is None and toolkit.history_time("soon") is None
    assert toolkit.title_line("  fix\n the   test ") == "fix the test"
    assert toolkit.title_line("x" * 300) == "x" * 200 + "\u2026"
    assert toolkit.title_line("") is None and toolkit.title_line(None) is None


# ---------------------------------------------------------------------------------------------
# anyagent history AGENT [-C DIR] [--all] [--json]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "ANYAGENT_NO_LOGIN_SHELL": "1"}
    return subprocess.run(
        [sys.executable, "-m", "anyagent.cli", *args], capture_output=True, text=True, timeout=60, env=env
    )


def test_the_history_command_prints_a_table_and_json_lines(tmp_path: Path) -> None:
    kept = [entry("tok-a", str(tmp_path), 1, title="older one"), entry("tok b", "/elsewhere", 9, title="newer one")]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"history": [json.loads(serialize.dumps(e)) for e in kept]}), encoding="utf-8")
    here = _cli("--mock", str(script), "history", "mock", "-C", str(tmp_path))
    assert here.returncode == 0, here.stderr
    assert "older one" in here.stdout and "newer one" not in here.stdout
    assert "anyagent chat mock --resume tok-a" in here.stdout
    everywhere = _cli("--mock", str(script), "history", "mock", "--all", "--json")
    assert everywhere.returncode == 0, everywhere.stderr
    listed = [serialize.loads(line, HistoryEntry) for line in everywhere.stdout.splitlines()]
    assert [e.resume_token for e in listed] == ["tok b", "tok-a"]
    assert "--resume 'tok b'  in /elsewhere" in _cli("--mock", str(script), "history", "mock", "--all").stdout
    none = tmp_path / "none.json"
    none.write_text("{}", encoding="utf-8")
    refused = _cli("--mock", str(none), "history", "mock")
    assert refused.returncode != 0 and "UnsupportedFeature" in refused.stdout + refused.stderr
