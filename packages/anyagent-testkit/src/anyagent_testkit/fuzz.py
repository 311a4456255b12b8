"""Fuzzing an adapter with mutated copies of its own wire recordings.

In: an adapter's recordings (JSONL, the replayer's format), the wire's rules (``CLAUDE_RULES``,
``ACP_RULES``, ``PI_RULES``: which client frame is a prompt, a cancel, an answer; which agent frame ends a turn) and
how to make an ``AgentInstallation`` from an executable. Out: a ``FuzzReport`` of counters (all 0 when
the adapter and engine held up) with examples (recording, seed, mutation, what went wrong).

Each case copies one recorded process, applies one seeded mutation to its agent frames after the
handshake (drop, duplicate, swap adjacent, retype a field, a huge string, invalid UTF-8, a truncated
line, an unknown frame type, a missing, doubled or late turn end — one moved after the next prompt),
plays it with the replayer (non-strict,
as the agent process) through the real adapter and engine, and drives the session as the recording's
client frames say: each recorded prompt is prompted once the previous turn ended (or the stream went
quiet for ``idle`` seconds), a recorded cancel cancels, requests are answered automatically. Then the
session is closed and its events checked::

    report = await fuzz(FuzzTarget("claude", CLAUDE_RULES, installation, recordings), frames=500, seed=1)
    assert report.clean, report.describe()

Counters: ``uncaught`` (anything but an ``AgentError`` raised by open/prompt/answer/cancel/close or at
the end of the stream), ``hangs`` (close or the end of the stream not within ``bound`` seconds),
``turn_ends`` (a TurnStarted not ended exactly once, or a TurnEnded without a start), ``sequence_gaps``
(event sequence numbers not consecutive), ``requests_open`` (a request of a turn neither closed before
that turn's end), ``lost_prompts`` (a ``Started`` delivery whose turn never ended), ``unserializable``
(``anyagent.serialize.dumps`` raising on an event).

Mutations are deterministic for a (recording, seed): ``FuzzCase.replay`` reruns one.
"""

from __future__ import annotations

import copy
import json
import random
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs

from anyagent import (
    AgentError,
    AgentInstallation,
    Answer,
    Event,
    PermissionChoice,
    PermissionRequest,
    QuestionAnswer,
    QuestionRequest,
    RequestClosed,
    RequestOpened,
    Runtime,
    SessionOptions,
    Started,
    TurnEnded,
    TurnStarted,
    seam,
    serialize,
)

from .replay import Line, LineKind, load_recording, write_replayer_shim

__all__ = [
    "ACP_RULES",
    "CLAUDE_RULES",
    "CODEX_RULES",
    "PI_RULES",
    "MUTATIONS",
    "Action",
    "FuzzCase",
    "FuzzReport",
    "FuzzTarget",
    "WireRules",
    "cases",
    "check_events",
    "fuzz",
    "mutate",
    "run_case",
]

MUTATIONS = (
    "drop",
    "duplicate",
    "swap",
    "retype",
    "huge",
    "invalid_utf8",
    "truncate",
    "unknown_type",
    "drop_end",
    "double_end",
    "late_end",
)
"""Every mutation ``mutate`` knows (and ``"none"``, the unmutated control)."""

COUNTERS = ("uncaught", "hangs", "turn_ends", "sequence_gaps", "requests_open", "lost_prompts", "unserializable")


# ---------------------------------------------------------------------------------------------
# wire rules


@attrs.frozen
class Action:
    """What a recorded client frame asks the driver to do: ``prompt`` (with ``text``), ``cancel``, or
    ``answer`` (answers are automatic; the action only marks where the recording answered)."""

    kind: str
    text: str = ""


@attrs.frozen
class WireRules:
    """A wire's knowledge the fuzzer needs: ``action(client_frame)`` (None for frames the adapter sends
    by itself) and ``is_end(agent_frame, prompt_ids)`` (``prompt_ids``: the recorded ids of prompt
    requests, for JSON-RPC replies); ``unknown`` makes a frame of a type the wire does not define."""

    name: str
    action: Callable[[Any], Action | None]
    is_end: Callable[[Any, frozenset[str]], bool]
    prompt_id: Callable[[Any], str | None]
    unknown: Callable[[random.Random], Any]


def _text_of_blocks(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _claude_action(frame: Any) -> Action | None:
    if not isinstance(frame, dict):
        return None
    if frame.get("type") == "user":
        message = frame.get("message")
        return Action("prompt", _text_of_blocks(message.get("content") if isinstance(message, dict) else ""))
    if frame.get("type") == "control_request":
        request = frame.get("request")
        if isinstance(request, dict) and request.get("subtype") == "interrupt":
            return Action("cancel")
    if frame.get("type") == "control_response":
        return Action("answer")
    return None


def _claude_unknown(rng: random.Random) -> Any:
    return rng.choice(
        [
            {"type": f"fuzz_{rng.randrange(1000)}", "data": {"x": 1}},
            {"type": "stream_event", "event": {"type": f"fuzz_{rng.randrange(1000)}"}, "session_id": "s"},
            {"type": "system", "subtype": f"fuzz_{rng.randrange(1000)}"},
            {"type": "control_request", "request_id": "fuzz-1", "request": {"subtype": "fuzz_unknown"}},
            {"no_type": True},
            [],
            17,
        ]
    )


CLAUDE_RULES = WireRules(
    name="claude",
    action=_claude_action,
    is_end=lambda frame, _ids: isinstance(frame, dict) and frame.get("type") == "result",
    prompt_id=lambda frame: None,
    unknown=_claude_unknown,
)
"""Claude Code's stream-json: a ``user`` frame is a prompt, an ``interrupt`` a cancel, a ``result`` ends."""


def _acp_action(frame: Any) -> Action | None:
    if not isinstance(frame, dict):
        return None
    method = frame.get("method")
    if method == "session/prompt":
        params = frame.get("params")
        return Action("prompt", _text_of_blocks(params.get("prompt") if isinstance(params, dict) else ""))
    if method == "session/cancel":
        return Action("cancel")
    if method is None and "id" in frame:
        return Action("answer")
    return None


def _acp_prompt_id(frame: Any) -> str | None:
    if isinstance(frame, dict) and frame.get("method") == "session/prompt" and "id" in frame:
        return json.dumps(frame["id"])
    return None


def _acp_is_end(frame: Any, prompt_ids: frozenset[str]) -> bool:
    return (
        isinstance(frame, dict)
        and "method" not in frame
        and "id" in frame
        and ("result" in frame or "error" in frame)
        and json.dumps(frame["id"]) in prompt_ids
    )


def _acp_unknown(rng: random.Random) -> Any:
    return rng.choice(
        [
            {"jsonrpc": "2.0", "method": f"fuzz/{rng.randrange(1000)}", "params": {}},
            {"jsonrpc": "2.0", "id": 90000 + rng.randrange(1000), "method": "fuzz/unknown", "params": {}},
            {"jsonrpc": "2.0", "id": 91000 + rng.randrange(1000), "result": {}},
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": "x", "update": {"sessionUpdate": f"fuzz_{rng.randrange(1000)}"}},
            },
            {"jsonrpc": "2.0"},
            [],
            17,
        ]
    )


ACP_RULES = WireRules(
    name="acp",
    action=_acp_action,
    is_end=_acp_is_end,
    prompt_id=_acp_prompt_id,
    unknown=_acp_unknown,
)
"""The Agent Client Protocol: ``session/prompt`` is a prompt, ``session/cancel`` a cancel, its reply ends."""


def _codex_action(frame: Any) -> Action | None:
    if not isinstance(frame, dict):
        return None
    method = frame.get("method")
    if method == "turn/start":
        params = frame.get("params")
        items = params.get("input") if isinstance(params, dict) else None
        return Action("prompt", _text_of_blocks(items))
    if method == "turn/interrupt":
        return Action("cancel")
    if method is None and "id" in frame:
        return Action("answer")
    return None


def _codex_unknown(rng: random.Random) -> Any:
    return rng.choice(
        [
            {"method": f"fuzz/{rng.randrange(1000)}", "params": {"threadId": "x"}},
            {"id": 90000 + rng.randrange(1000), "method": "fuzz/unknown", "params": {}},
            {"id": 91000 + rng.randrange(1000), "result": {}},
            {"method": "item/started", "params": {"item": {"type": f"fuzz{rng.randrange(1000)}", "id": "f1"}}},
            {"method": "turn/completed", "params": {"threadId": "another-thread", "turn": {"id": "t"}}},
            [],
            17,
        ]
    )


CODEX_RULES = WireRules(
    name="codex",
    action=_codex_action,
    is_end=lambda frame, _ids: isinstance(frame, dict) and frame.get("method") == "turn/completed",
    prompt_id=lambda frame: None,
    unknown=_codex_unknown,
)
"""Codex's app server: ``turn/start`` is a prompt, ``turn/interrupt`` a cancel, ``turn/completed`` ends."""


def _pi_action(frame: Any) -> Action | None:
    if not isinstance(frame, dict):
        return None
    kind = frame.get("type")
    if kind == "prompt":
        return Action("prompt", str(frame.get("message", "")))
    if kind == "abort":
        return Action("cancel")
    if kind == "extension_ui_response":
        return Action("answer")
    return None


def _pi_unknown(rng: random.Random) -> Any:
    return rng.choice(
        [
            {"type": f"fuzz_{rng.randrange(1000)}", "data": {"x": 1}},
            {"type": "message_update", "assistantMessageEvent": {"type": f"fuzz_{rng.randrange(1000)}"}},
            {"type": "extension_ui_request", "id": f"fuzz-{rng.randrange(1000)}", "method": "fuzz_unknown"},
            {"type": "response", "id": "fuzz-1", "command": "fuzz", "success": False, "error": "fuzz"},
            {"no_type": True},
            [],
            17,
        ]
    )


PI_RULES = WireRules(
    name="pi",
    action=_pi_action,
    is_end=lambda frame, _ids: isinstance(frame, dict) and frame.get("type") == "agent_end",
    prompt_id=lambda frame: None,
    unknown=_pi_unknown,
)
"""pi's RPC mode: a ``prompt`` command is a prompt, ``abort`` a cancel, ``agent_end`` ends the run."""


# ---------------------------------------------------------------------------------------------
# mutation


def _line_json(line: Line) -> dict[str, Any]:
    if line.kind is LineKind.AGENT:
        return line.value if isinstance(line.value, dict) else {"_raw_value": line.value}
    if line.kind is LineKind.CLIENT:
        return {"_sent": line.value}
    if line.kind is LineKind.RAW:
        return {"_raw": line.value}
    if line.kind is LineKind.META:
        return {"_meta": line.value}
    if line.kind is LineKind.NOTE:
        return {"_note": line.value}
    if line.kind is LineKind.STDERR:
        return {"_stderr": line.value}
    return {"_note": {"exit_ignored": line.value}}


def _agent(value: Any) -> dict[str, Any]:
    # a non-object agent frame cannot be a recording line of its own; send its text raw
    if isinstance(value, dict) and not any(key.startswith("_") for key in value):
        return value
    return {"_raw": json.dumps(value, separators=(",", ":"))}


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append((*prefix, key))
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.append((*prefix, index))
            found += _paths(item, (*prefix, index))
    return found


def _set(value: Any, path: tuple[Any, ...], new: Any) -> None:
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = new


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def _retyped(old: Any, rng: random.Random) -> Any:
    choices: list[Any] = ["fuzz", 7, -1, 1.5e308, None, True, {"fuzz": 1}, [], [1, "x"], ""]
    return rng.choice([c for c in choices if type(c) is not type(old)])


def mutate(lines: Sequence[Line], rules: WireRules, mutation: str, rng: random.Random) -> list[dict[str, Any]] | None:
    """``lines`` (one recorded process) as recording objects with ``mutation`` applied to one agent
    frame after the first prompt; None when the recording has nothing it applies to."""
    out = [_line_json(line) for line in lines]
    first_prompt = next(
        (i for i, line in enumerate(lines) if line.kind is LineKind.CLIENT and _is_prompt(rules, line.value)), None
    )
    if first_prompt is None:
        return None
    prompt_ids = frozenset(
        pid for line in lines if line.kind is LineKind.CLIENT and (pid := rules.prompt_id(line.value)) is not None
    )
    agents = [i for i, line in enumerate(lines) if i > first_prompt and line.kind is LineKind.AGENT]
    ends = [i for i in agents if rules.is_end(lines[i].value, prompt_ids)]
    if not agents:
        return None
    at = rng.choice(agents)
    frame = copy.deepcopy(lines[at].value)
    if mutation == "none":
        pass
    elif mutation == "drop":
        del out[at]
    elif mutation == "duplicate":
        out.insert(at, _agent(copy.deepcopy(frame)))
    elif mutation == "swap":
        pairs = [i for i in agents if i + 1 < len(lines) and lines[i + 1].kind is LineKind.AGENT]
        if not pairs:
            return None
        i = rng.choice(pairs)
        out[i], out[i + 1] = out[i + 1], out[i]
    elif mutation in ("retype", "huge"):
        paths = _paths(frame)
        if mutation == "huge":
            paths = [p for p in paths if isinstance(_get(frame, p), str)]
        if not paths:
            return None
        path = rng.choice(paths)
        if mutation == "huge":
            size = rng.choice([70_000, 1_000_000, 4_000_000])
            _set(frame, path, rng.choice(["x", "é", "\U0001f600", "\\"]) * size)
        else:
            _set(frame, path, _retyped(_get(frame, path), rng))
        out[at] = _agent(frame)
    elif mutation == "invalid_utf8":
        text = json.dumps(frame, separators=(",", ":"), ensure_ascii=False)
        cut = rng.randrange(len(text) + 1)
        bad = rng.choice(["\udcff", "\udcc3", "\udce2\udc82", "\udcc0\udcaf"])
        out[at] = {"_raw": text[:cut] + bad + text[cut:]}
    elif mutation == "truncate":
        text = json.dumps(frame, separators=(",", ":"), ensure_ascii=False)
        out[at] = {"_raw": text[: rng.randrange(max(1, len(text) - 1))]}
    elif mutation == "unknown_type":
        out.insert(at, _agent(rules.unknown(rng)))
    elif mutation == "late_end":
        later = [
            (end, prompt)
            for end in ends
            for prompt in [next((i for i in range(end, len(lines)) if _is_client_prompt(rules, lines[i])), None)]
            if prompt is not None
        ]
        if not later:
            return None
        end, prompt = rng.choice(later)
        moved = out.pop(end)
        out.insert(prompt, moved)  # after the next prompt (its index shifted down by the pop)
    elif mutation in ("drop_end", "double_end"):
        if not ends:
            return None
        end = rng.choice(ends)
        if mutation == "drop_end":
            del out[end]
        else:
            out.insert(end, _agent(copy.deepcopy(lines[end].value)))
    else:
        raise ValueError(f"unknown mutation {mutation!r}")
    return out


def _is_client_prompt(rules: WireRules, line: Line) -> bool:
    return line.kind is LineKind.CLIENT and _is_prompt(rules, line.value)


def _is_prompt(rules: WireRules, frame: Any) -> bool:
    action = rules.action(frame)
    return action is not None and action.kind == "prompt"


# ---------------------------------------------------------------------------------------------
# running one case


@attrs.frozen
class FuzzTarget:
    """An adapter under fuzz: ``installation(executable, recording)`` names the replayer shim (playing
    a mutated ``recording``) as that adapter's agent; ``recordings`` are (path, process number)
    pairs; ``runtime`` makes the runtime."""

    name: str
    rules: WireRules
    installation: Callable[[Path, Path], AgentInstallation]
    recordings: tuple[tuple[Path, int], ...] = attrs.field(converter=tuple)
    runtime: Callable[[], Runtime] = Runtime


@attrs.frozen
class FuzzCase:
    """One mutated replay: ``recording`` (its process ``process``), ``mutation`` and ``seed``."""

    recording: Path
    process: int
    mutation: str
    seed: int

    def __str__(self) -> str:
        return f"{self.recording.name}#{self.process} {self.mutation} seed={self.seed}"


@attrs.define
class FuzzReport:
    """Counters over every case run (all 0 is a pass) and up to ``keep`` examples per counter."""

    cases: int = 0
    frames: int = 0
    turns: int = 0
    events: int = 0
    uncaught: int = 0
    hangs: int = 0
    turn_ends: int = 0
    sequence_gaps: int = 0
    requests_open: int = 0
    lost_prompts: int = 0
    unserializable: int = 0
    examples: dict[str, list[str]] = attrs.field(factory=dict)
    keep: int = 5

    @property
    def clean(self) -> bool:
        """True when every counter is 0."""
        return all(getattr(self, name) == 0 for name in COUNTERS)

    def count(self, counter: str, case: FuzzCase, detail: str) -> None:
        """Add one to ``counter`` with an example."""
        setattr(self, counter, getattr(self, counter) + 1)
        kept = self.examples.setdefault(counter, [])
        if len(kept) < self.keep:
            kept.append(f"{case}: {detail}")

    def merge(self, other: FuzzReport) -> None:
        """Add ``other``'s counts and examples to this report."""
        self.cases += other.cases
        self.frames += other.frames
        self.turns += other.turns
        self.events += other.events
        for name in COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name, kept in other.examples.items():
            mine = self.examples.setdefault(name, [])
            mine += kept[: max(0, self.keep - len(mine))]

    def describe(self) -> str:
        """The counters on one line, then the examples."""
        head = f"cases={self.cases} frames={self.frames} turns={self.turns} events={self.events} " + " ".join(
            f"{n}={getattr(self, n)}" for n in COUNTERS
        )
        lines = [head]
        for name, kept in self.examples.items():
            lines += [f"  {name}: {example}" for example in kept]
        return "\n".join(lines)


class _Driver:
    def __init__(self, case: FuzzCase, report: FuzzReport, idle: float, bound: float) -> None:
        self.case = case
        self.report = report
        self.idle = idle
        self.bound = bound
        self.events: list[Event] = []
        self.last_event = time.monotonic()
        self.started: list[str] = []
        self.answered: set[str] = set()
        self.ended = False

    def uncaught(self, where: str, exc: BaseException) -> None:
        self.report.count("uncaught", self.case, f"{where}: {type(exc).__name__}: {str(exc)[:200]}")

    def running(self) -> bool:
        starts = sum(isinstance(e.kind, TurnStarted) for e in self.events)
        ends = sum(isinstance(e.kind, TurnEnded) for e in self.events)
        return starts > ends

    async def settle(self, want_running: bool = False) -> None:
        """Until no turn runs (or, ``want_running``, one does) or the stream stays quiet ``idle`` s."""
        while not self.ended:
            if self.running() == want_running and (not want_running or self._since_start() > 0):
                return
            if time.monotonic() - self.last_event > self.idle:
                return
            await anyio.sleep(0.01)

    def _since_start(self) -> int:
        for index in range(len(self.events) - 1, -1, -1):
            if isinstance(self.events[index].kind, TurnStarted):
                return len(self.events) - 1 - index
        return 0


async def run_case(target: FuzzTarget, case: FuzzCase, *, idle: float = 0.5, bound: float = 15.0) -> FuzzReport:
    """Mutate, play and check one case; returns its report (``cases`` 0 when the mutation did not apply)."""
    report = FuzzReport()
    recording = load_recording(case.recording)
    lines = recording.segment(case.process)
    rng = random.Random(f"{case.recording.name}:{case.process}:{case.mutation}:{case.seed}")
    mutated = mutate(lines, target.rules, case.mutation, rng)
    if mutated is None:
        return report
    actions = [a for line in lines if line.kind is LineKind.CLIENT and (a := target.rules.action(line.value))]
    # the handshake's client frames are the adapter's own: drive from the first prompt on
    while actions and actions[0].kind != "prompt":
        actions.pop(0)
    report.cases = 1
    report.frames = sum(1 for item in mutated if "_sent" not in item and "_meta" not in item and "_note" not in item)
    with tempfile.TemporaryDirectory(prefix="anyagent-fuzz-") as folder:
        path = Path(folder) / "mutated.jsonl"
        with path.open("w", encoding="utf-8") as file:
            for item in mutated:  # ASCII escapes keep lone surrogates (invalid UTF-8 on the wire)
                file.write(json.dumps(item, separators=(",", ":")) + "\n")
        shim = write_replayer_shim(folder, path)
        workspace = Path(folder) / "workspace"
        workspace.mkdir()
        await _drive(target, case, report, target.installation(shim, case.recording), workspace, actions, idle, bound)
    return report


async def _drive(
    target: FuzzTarget,
    case: FuzzCase,
    report: FuzzReport,
    agent: AgentInstallation,
    workspace: Path,
    actions: list[Action],
    idle: float,
    bound: float,
) -> None:
    driver = _Driver(case, report, idle, bound)
    async with target.runtime() as runtime:
        try:
            with anyio.fail_after(seam.HANDSHAKE_TIMEOUT + bound):
                session, events = await runtime.open(agent, SessionOptions.in_dir(workspace))
        except AgentError:
            return
        except TimeoutError:
            report.count("hangs", case, "open did not return")
            return
        except Exception as exc:
            driver.uncaught("open", exc)
            return
        async with anyio.create_task_group() as group:

            async def read() -> None:
                try:
                    async for event in events:
                        driver.events.append(event)
                        driver.last_event = time.monotonic()
                        if isinstance(event.kind, RequestOpened):
                            group.start_soon(answer, event.kind.request)
                except AgentError:
                    pass
                except Exception as exc:
                    driver.uncaught("events", exc)
                finally:
                    driver.ended = True

            async def answer(request: Any) -> None:
                if request.id in driver.answered:
                    return
                driver.answered.add(request.id)
                try:
                    await session.answer(request.id, _auto_answer(request))
                except AgentError:
                    pass
                except Exception as exc:
                    driver.uncaught("answer", exc)

            group.start_soon(read)
            try:
                for action in actions:
                    if driver.ended:
                        break
                    if action.kind == "prompt":
                        await driver.settle()
                        delivery = await session.prompt(action.text or "fuzz")
                        driver.last_event = time.monotonic()
                        if isinstance(delivery.kind, Started):
                            driver.started.append(delivery.kind.turn_id)
                    elif action.kind == "cancel":
                        await driver.settle(want_running=True)
                        await session.cancel()
                await driver.settle()
            except AgentError:
                pass
            except Exception as exc:
                driver.uncaught("drive", exc)
            try:
                with anyio.fail_after(bound):
                    await session.close()
            except TimeoutError:
                report.count("hangs", case, "close() did not return")
            except AgentError:
                pass
            except Exception as exc:
                driver.uncaught("close", exc)
            with anyio.move_on_after(bound) as scope:
                while not driver.ended:
                    await anyio.sleep(0.01)
            if scope.cancelled_caught:
                report.count("hangs", case, "the event stream did not end after close()")
                group.cancel_scope.cancel()
    check_events(driver.events, report, case, started=driver.started)


def _auto_answer(request: Any) -> Answer:
    if isinstance(request, PermissionRequest):
        options = request.options
        choice = PermissionChoice.ALLOW_ONCE if PermissionChoice.ALLOW_ONCE in options or not options else options[0]
        return Answer.permission(choice)
    assert isinstance(request, QuestionRequest)
    answers = [
        QuestionAnswer.choices([q.choices[0].id]) if q.choices else QuestionAnswer.text("fuzz")
        for q in request.questions
    ]
    return Answer.question(answers)


def check_events(events: Sequence[Event], report: FuzzReport, case: FuzzCase, *, started: Iterable[str] = ()) -> None:
    """Count into ``report`` what is wrong with one session's whole event stream (``started``: the turn
    ids of the prompts delivered as ``Started``)."""
    report.events += len(events)
    report.turns += sum(isinstance(event.kind, TurnStarted) for event in events)
    ends: dict[str, int] = {}
    starts: list[str] = []
    open_requests: dict[str, str | None] = {}
    for index, event in enumerate(events):
        if index and event.sequence != events[index - 1].sequence + 1:
            report.count(
                "sequence_gaps", case, f"sequence {events[index - 1].sequence} then {event.sequence} at event {index}"
            )
        try:
            serialize.dumps(event)
        except Exception as exc:
            report.count("unserializable", case, f"{type(event.kind).__name__}: {type(exc).__name__}: {exc}"[:300])
        kind = event.kind
        turn = event.turn_info.id if event.turn_info is not None else None
        if isinstance(kind, TurnStarted) and turn is not None:
            starts.append(turn)
        elif isinstance(kind, TurnEnded):
            ends[str(turn)] = ends.get(str(turn), 0) + 1
            left = [rid for rid, owner in open_requests.items() if owner == turn]
            if left:
                report.count("requests_open", case, f"requests {left} still open at the end of turn {turn}")
                for rid in left:
                    del open_requests[rid]
        elif isinstance(kind, RequestOpened):
            open_requests[kind.request.id] = turn
        elif isinstance(kind, RequestClosed):
            open_requests.pop(kind.request_id, None)
    for turn in starts:
        if ends.get(turn, 0) != 1:
            report.count("turn_ends", case, f"turn {turn} ended {ends.get(turn, 0)} times")
    for turn, count in ends.items():
        if turn not in starts:
            report.count("turn_ends", case, f"TurnEnded for turn {turn} that never started ({count}x)")
    for turn in started:
        if turn not in ends:
            report.count("lost_prompts", case, f"prompt started turn {turn}, which never ended")
    if open_requests:
        report.count("requests_open", case, f"requests {sorted(open_requests)} still open when the stream ended")


# ---------------------------------------------------------------------------------------------
# a whole run


def cases(target: FuzzTarget, *, seed: int = 0, mutations: Iterable[str] = MUTATIONS) -> Iterable[FuzzCase]:
    """Endless deterministic cases: per seed (counting up from ``seed``) every mutation once, each on
    the next recording in turn, so a short run still sees every mutation and every recording."""
    chosen = tuple(mutations)
    recordings = target.recordings
    number = seed
    turn = 0
    while True:
        for mutation in chosen:
            path, process = recordings[turn % len(recordings)]
            turn += 1
            yield FuzzCase(path, process, mutation, number)
        number += 1


async def fuzz(
    target: FuzzTarget,
    *,
    frames: int,
    seed: int = 0,
    mutations: Iterable[str] = MUTATIONS,
    skip: Callable[[FuzzCase], str | None] = lambda case: None,
    idle: float = 0.5,
    bound: float = 15.0,
    progress: Callable[[FuzzReport], None] | None = None,
    max_cases: int | None = None,
) -> FuzzReport:
    """Run cases until at least ``frames`` mutated agent frames were played; ``skip(case)`` returning
    a reason leaves a case out (known failures, named in the caller); ``max_cases`` stops sooner."""
    report = FuzzReport()
    for case in cases(target, seed=seed, mutations=mutations):
        if report.frames >= frames or (max_cases is not None and report.cases >= max_cases):
            break
        if skip(case) is not None:
            continue
        report.merge(await run_case(target, case, idle=idle, bound=bound))
        if progress is not None:
            progress(report)
    return report
