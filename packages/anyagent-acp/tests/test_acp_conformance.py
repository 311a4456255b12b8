"""The testkit's adapter conformance suite against anyagent-acp, in two tiers.

* Offline (``nox -s tests``, no Node): the scripted SDK agent (``agents/scripted_agent.py``) as a real
  subprocess through ``AgentInstallation.acp(...)``, staged per scenario by its prompt keywords;
  ``fuzzed_frames`` runs the adapter's pure translation (``FrameTranslator``) over the frames of the
  package's recordings and near misses of them.
* Live (``pytest --live``): qwen and the Claude Code ACP bridge (pinned by ``anyagent_testkit.live``)
  against the fake model, staged by its keywords (``WRITE`` for a tool and a permission, ``SLOW``
  for a cancel).

Each check is its own test case (``pytest_suite``) and runs on asyncio and trio. A deeper fuzzer
(``test_deep_near_misses_never_crash_the_translator``) mutates one nested object at a time, which
the suite's top-level mutations never reach in a JSON-RPC frame.
"""

from __future__ import annotations

import json
import shlex
import stat
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest
from acpsupport import AGENTS, runtime, scripted
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anyagent import AgentInstallation, Cancelled, Capabilities, Completed, SessionOptions, ToolUpdate
from anyagent_acp import translate
from anyagent_acp._state import InfoState
from anyagent_acp.prompt import PromptMedia
from anyagent_testkit.conformance import Launch, Scenario, pytest_suite
from anyagent_testkit.live import LiveAgent

RECORDINGS = Path(__file__).parent / "recordings"
_RECORDER_KEYS = ("_sent", "_meta", "_note", "_stderr", "_raw", "_exit", "_http")


# ---------------------------------------------------------------------------------------------
# the fuzzed-frame hook: one JSON-RPC frame through the adapter's pure translation


def _obj(value: Any) -> dict[str, Any]:
    """What the driver does to every untrusted object before translating it."""
    return value if isinstance(value, dict) else {}


class FrameTranslator:
    """One agent→client JSON-RPC frame through the pure pieces the driver and the handshake use,
    routed the way they route it. State (tool snapshots, session info) carries across frames, as
    it does across one session. Returns what the translation produced (for inspection)."""

    def __init__(self) -> None:
        self.tools = translate.ToolBook(lambda terminal_id: f"output of {terminal_id}")
        self.state = InfoState(Capabilities.of())

    def __call__(self, frame: dict[str, Any]) -> object:
        method = frame.get("method")
        params = _obj(frame.get("params"))
        if method == "session/update":
            return self._update(_obj(params.get("update")))
        if method == "session/request_permission":
            return translate.permission_options(params.get("options")), self.tools.upsert(_obj(params.get("toolCall")))
        if method == "cursor/ask_question":
            return [translate.question_from_cursor(q) for q in params.get("questions") or []]
        if method in ("_x.ai/ask_user_question", "x.ai/ask_user_question"):
            body = _obj(params.get("params")) or params
            return [translate.question_from_grok(q, i) for i, q in enumerate(body.get("questions") or [])]
        if method == "_x.ai/models/update":
            self.state.adopt_models(params.get("models") if "models" in params else params)
            return self.state.info()
        if method == "cursor/update_todos":
            return translate.plan_entries(params.get("todos"))
        if method is None and "result" in frame:
            return self._result(_obj(frame.get("result")))
        return None

    def _update(self, update: dict[str, Any]) -> object:
        kind = update.get("sessionUpdate")
        if kind in ("tool_call", "tool_call_update"):
            return self.tools.upsert(update)
        if kind == "plan":
            return translate.plan_entries(update.get("entries"))
        if kind == "usage_update":
            return translate.usage(update)
        if kind == "available_commands_update":
            return translate.commands(update.get("availableCommands"))
        if kind == "config_option_update":
            self.state.adopt_config_options(update.get("configOptions"))
            return self.state.info()
        if kind == "current_mode_update":
            mode = update.get("currentModeId")
            return self.state.select("mode", mode) if isinstance(mode, str) else None
        if kind in ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk"):
            return _obj(update.get("content")).get("text")
        return None

    def _result(self, result: dict[str, Any]) -> object:
        """Everything a response may be read as: an ``initialize``, a session open, a prompt's end."""
        self.state.adopt_session(result)
        return (
            translate.capabilities(result),
            translate.login_methods(result, Path("/usr/bin/agent")),
            PromptMedia.read(result),
            translate.stop_reason(result),
            self.state.info(),
        )


def recorded_frames(cli_id: str = "") -> list[dict[str, Any]]:
    """Every agent frame in the package's recordings (of ``cli_id`` only, when given), the
    recorder's keys stripped."""
    frames: list[dict[str, Any]] = []
    for path in sorted(RECORDINGS.glob(f"{cli_id}-*.jsonl" if cli_id else "*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            if not isinstance(entry, dict) or any(key in entry for key in _RECORDER_KEYS):
                continue
            frames.append({k: v for k, v in entry.items() if k != "_t"})
    return frames


SAMPLE_FRAMES = recorded_frames()


def test_the_recordings_seed_the_fuzzer_with_every_kind_of_frame() -> None:
    methods = {f.get("method") for f in SAMPLE_FRAMES}
    updates = {_obj(_obj(f.get("params")).get("update")).get("sessionUpdate") for f in SAMPLE_FRAMES}
    assert {"session/update", "session/request_permission", "fs/write_text_file"} <= methods
    assert {"agent_message_chunk", "tool_call", "tool_call_update", "usage_update"} <= updates
    assert any("result" in f for f in SAMPLE_FRAMES)


def test_the_translator_reads_recorded_frames() -> None:
    """The hook is not a no-op: recorded frames come out as tool snapshots, permission choices
    and stop reasons."""
    translator = FrameTranslator()
    tools, permissions, stops = [], [], []
    for frame in SAMPLE_FRAMES:
        out = translator(frame)
        if isinstance(out, ToolUpdate):
            tools.append(out)
        elif frame.get("method") == "session/request_permission":
            assert isinstance(out, tuple)
            permissions.append(out)
        elif "stopReason" in _obj(frame.get("result")):
            assert isinstance(out, tuple)
            stops.append(out[3])
    assert tools and all(t.id and t.title for t in tools)
    assert permissions and all(choices and isinstance(tool, ToolUpdate) for (choices, _ids), tool in permissions)
    assert Completed() in stops and Cancelled() in stops


_ACP_KEYS = (
    "toolCallId", "status", "title", "kind", "content", "locations", "rawInput", "rawOutput", "line", "path",
    "newText", "oldText", "terminalId", "options", "optionId", "toolCall", "sessionUpdate", "text", "type",
    "entries", "used", "size", "cost", "amount", "currency", "availableCommands", "configOptions", "currentValue",
    "modes", "availableModes", "currentModeId", "models", "availableModels", "currentModelId", "_meta",
    "agentCapabilities", "promptCapabilities", "mcpCapabilities", "sessionCapabilities", "authMethods", "stopReason",
)  # fmt: skip


def _dict_paths(value: dict[str, Any], prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """The paths of every object nested in ``value``, through arrays too (their first items)."""
    paths = [prefix]
    for key, child in value.items():
        if isinstance(child, dict):
            paths += _dict_paths(child, (*prefix, key))
        elif isinstance(child, list):
            for index, item in enumerate(child[:3]):
                if isinstance(item, dict):
                    paths += _dict_paths(item, (*prefix, key, index))
    return paths


def _at(frame: dict[str, Any], path: tuple[str | int, ...]) -> dict[str, Any]:
    """The object at ``path`` in ``frame``."""
    target: Any = frame
    for step in path:
        target = target[step]
    assert isinstance(target, dict)
    return target


def _with(frame: dict[str, Any], path: tuple[str | int, ...], key: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``frame`` whose object at ``path`` has ``key`` set to ``value``."""
    copy: dict[str, Any] = json.loads(json.dumps(frame))
    _at(copy, path)[key] = value
    return copy


def _distinct_targets(frames: list[dict[str, Any]]) -> list[tuple[dict[str, Any], tuple[str | int, ...]]]:
    """(frame, path) pairs, one per kind of frame and path, so rare shapes weigh as much as the
    hundreds of message chunks."""
    chosen: dict[tuple[Any, ...], tuple[dict[str, Any], tuple[str | int, ...]]] = {}
    for frame in frames:
        update = _obj(_obj(frame.get("params")).get("update")).get("sessionUpdate")
        for path in _dict_paths(frame):
            shape = (frame.get("method"), update, tuple(s if isinstance(s, str) else 0 for s in path))
            chosen.setdefault(shape, (frame, path))
    return list(chosen.values())


def test_deep_near_misses_never_crash_the_translator() -> None:
    """The suite's fuzzer mutates top-level keys only, which for JSON-RPC replaces ``params`` whole;
    this goes one object deeper at a time (``params.update.locations[0].line = "x"`` and the like)."""
    targets = _distinct_targets(SAMPLE_FRAMES)
    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12))
    values = st.recursive(
        scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    )
    translator = FrameTranslator()

    @settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.sampled_from(targets), st.data())
    def never_raises(target: tuple[dict[str, Any], tuple[str | int, ...]], data: st.DataObject) -> None:
        frame, path = target
        present = sorted(_at(frame, path))
        keys = st.sampled_from(present) if present else st.sampled_from(_ACP_KEYS)
        key = data.draw(st.one_of(keys, keys, keys, st.sampled_from(_ACP_KEYS), st.text(max_size=6)))
        translator(_with(frame, path, key, data.draw(values)))

    never_raises()


# ---------------------------------------------------------------------------------------------
# offline: the scripted SDK agent


class ScriptedSubject:
    """The scripted ACP agent (a real subprocess on the ``agent-client-protocol`` SDK), staged by
    the first word of the prompt (see ``agents/scripted_agent.py``)."""

    name = "anyagent-acp (scripted SDK agent)"
    sample_frames: ClassVar[list[dict[str, Any]]] = SAMPLE_FRAMES

    def __init__(self) -> None:
        self.translate = FrameTranslator()

    def launch(self, scenario: Scenario, workdir: Path) -> Launch | None:
        prompts = {
            Scenario.TOOL: "TOOL",  # tool_call pending → in_progress with input → completed with output
            Scenario.PERMISSION: f"WRITE {workdir / 'permitted.txt'}",  # the tool is first seen in the request
            Scenario.CANCEL: "SLOW",  # 40 chunks 0.05 s apart; honours session/cancel
        }
        follow_up = "hello again" if scenario in (Scenario.CANCEL, Scenario.PERMISSION) else None
        return Launch(runtime(), scripted(), SessionOptions.in_dir(workdir), prompts.get(scenario, "hello"), follow_up)


test_scripted_conformance = pytest_suite(ScriptedSubject)


class KiroSubject:
    """The raw vendor fake under the kiro profile (``agents/vendor_agent.py kiro``): its ``effort`` is
    a between-turns setting switched by a hidden ``/effort`` prompt, which the suite changes mid-turn.
    It stages text and a permission (``HOLD``); tools and long streams are the scripted agent's, and
    so is the handshake: kiro announces its commands right after ``session/new``, so a close at once
    may see their ``SessionUpdated`` after it (the engine emits info changes while closing)."""

    name = "anyagent-acp (kiro vendor fake)"

    def launch(self, scenario: Scenario, workdir: Path) -> Launch | None:
        if scenario in (Scenario.TOOL, Scenario.CANCEL, Scenario.HANDSHAKE):
            return None
        fake = [str(AGENTS / "vendor_agent.py"), "kiro"]
        agent = AgentInstallation(id="kiro", name="kiro", executable_path=sys.executable, wire="acp", args=fake)
        prompt = "HOLD" if scenario is Scenario.PERMISSION else "hello"
        return Launch(runtime(), agent, SessionOptions.in_dir(workdir), prompt, "hello again")


test_kiro_conformance = pytest_suite(KiroSubject)


# ---------------------------------------------------------------------------------------------
# live: qwen and the Claude Code ACP bridge against the fake model


def _shim(folder: Path, live: LiveAgent) -> Path:
    """An executable running the live CLI with exactly the testkit's environment (nothing inherited)."""
    assignments = " ".join(shlex.quote(f"{k}={v}") for k, v in live.env.items())
    script = folder / "agent-shim"
    script.write_text(f'#!/bin/sh\nexec env -i {assignments} {shlex.quote(str(live.executable))} "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


class LiveSubject:
    """A pinned ACP CLI, isolated by the testkit's live tier and wired to the fake model, whose
    keywords stage each scenario: ``WRITE`` a file (in a mode that accepts edits for TOOL, in the
    default mode that asks for PERMISSION), ``SLOW 40`` (40 chunks 0.25 s apart) for CANCEL.

    ``live_agent`` is the testkit's factory for the running test, handed over by the
    ``live_factory`` fixture (``Subject.launch`` takes no fixtures)."""

    live_agent: ClassVar[Callable[[str], LiveAgent] | None] = None

    def __init__(self, cli_id: str, profile_id: str, edit_mode: str) -> None:
        self.cli_id = cli_id
        self.profile_id = profile_id
        self.edit_mode = edit_mode
        self.name = f"anyagent-acp ({cli_id}, live)"
        self.sample_frames = recorded_frames(cli_id)
        self.translate = FrameTranslator()

    def launch(self, scenario: Scenario, workdir: Path) -> Launch | None:
        assert LiveSubject.live_agent is not None, "the live_factory fixture did not run"
        live = LiveSubject.live_agent(self.cli_id)
        agent = AgentInstallation(
            id=self.profile_id, name=self.cli_id, executable_path=_shim(live.root, live), wire="acp", args=live.args
        )
        workspace = live.workspace
        options = SessionOptions.in_dir(workspace)
        if scenario is Scenario.TOOL:
            options = options.configure("mode", self.edit_mode)
        prompts: Mapping[Scenario, str] = {
            Scenario.TOOL: f"WRITE {workspace / 'tool.txt'} written-by-the-tool-scenario",
            Scenario.PERMISSION: f"WRITE {workspace / 'permitted.txt'} allowed-by-conformance",
            Scenario.CANCEL: "SLOW 40",
        }
        follow_up = "Say hello again." if scenario in (Scenario.CANCEL, Scenario.PERMISSION) else None
        return Launch(runtime(), agent, options, prompts.get(scenario, "Say hello."), follow_up)


@pytest.fixture
def live_factory(live_agent: Callable[[str], LiveAgent]) -> Iterator[None]:
    """Hand the testkit's ``live_agent`` factory (installs once per cache, isolates under this
    test's ``tmp_path``, wires to this test's fake model) to ``LiveSubject``."""
    LiveSubject.live_agent = live_agent
    try:
        yield
    finally:
        LiveSubject.live_agent = None


def live_suite(cli_id: str, profile_id: str, edit_mode: str) -> Any:
    """The conformance suite over one live CLI: marked ``live``, with the factory fixture."""
    suite = pytest_suite(lambda: LiveSubject(cli_id, profile_id, edit_mode))
    return pytest.mark.live(pytest.mark.usefixtures("live_factory")(suite))


test_live_qwen_conformance = live_suite("qwen", "qwen", "auto-edit")
test_live_claude_acp_conformance = live_suite("claude-agent-acp", "claude-acp", "acceptEdits")
