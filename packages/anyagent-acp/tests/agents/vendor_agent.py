"""A raw JSON-lines ACP agent (stdlib only) that speaks the vendor extensions real agents use.

``vendor_agent.py FLAVOR [args...]`` — FLAVOR is cursor, grok, qwen, gemini, kiro, hermes, steer,
codex2 (reports its login in ``_auth/status_update`` after ``initialize``, as codex-acp 2.6 does) or
plain; ``vendor_agent.py about`` answers cursor's preflight (exit 1 when ``VENDOR_LOGGED_OUT=1``).
``VENDOR_LOGGED_OUT=1`` also makes ``session/new`` fail -32000 "Authentication required".
The first word of a prompt picks a script (see ``SCRIPTS``). ``VENDOR_LOG`` names a file where the
order of what the client sent is appended: one method per line, ``prompt <text>`` for each prompt,
``reply <id> <result>`` for each answer to one of the agent's requests, and ``early <line>`` when
the client wrote something before the agent answered a hidden ``/effort`` prompt.

The hermes flavor wedges as hermes-agent 0.19.0 does: a ``session/cancel`` that lands outside a
model call (beside a pending permission, in either order, or while idle) fails that prompt with
-32603 ``'NoneType' object has no attribute 'startswith'`` and every later prompt is answered at
once "Queued for the next turn. (N queued)" with ``end_turn``. A permission answered ``cancelled``
with no ``session/cancel`` is a denial: the turn ends ``end_turn`` and the agent stays usable.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
from typing import Any

FLAVOR = sys.argv[1] if len(sys.argv) > 1 else "plain"
SESSION = "vs-1"
state: dict[str, Any] = {
    "model": "grok-4",
    "effort": "low",
    "mode": "default",
    "cancelled": False,
    "next": 100,
    "wedged": False,  # hermes: every prompt is queued forever
    "queued": 0,
    "pushback": [],  # lines read ahead (by the /effort script's look at what is waiting)
}


def send(frame: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def log(entry: str) -> None:
    path = os.environ.get("VENDOR_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(entry + "\n")


def update(body: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SESSION, "update": body}})


def say(text: str) -> None:
    update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})


def read() -> dict[str, Any] | None:
    line = state["pushback"].pop(0) if state["pushback"] else sys.stdin.readline()
    if not line:
        return None
    frame: dict[str, Any] = json.loads(line)
    if "method" not in frame and "id" in frame:
        log(f"reply {frame['id']} {json.dumps(frame.get('result', frame.get('error')))}")
    return frame


def next_frame() -> dict[str, Any]:
    """The next frame (exit at end of input); a ``session/cancel`` is logged and noted."""
    frame = read()
    if frame is None:
        sys.exit(0)
    if frame.get("method") == "session/cancel":
        log("session/cancel")
        state["cancelled"] = True
    return frame


def call(method: str, params: dict[str, Any], request_id: Any = None) -> dict[str, Any]:
    """Send a request to the client and wait for its answer, noting cancels that arrive meanwhile."""
    if request_id is None:
        state["next"] += 1
        request_id = state["next"]
    send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    while True:
        frame = next_frame()
        if frame.get("method") == "session/cancel":
            if state.get("withdraw_on_cancel"):
                send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": request_id}})
                return {"withdrawn": True}
            continue
        if frame.get("id") == request_id and "method" not in frame:
            log(f"answer {method}")
            return frame


def models() -> dict[str, Any]:
    efforts = [{"value": "low", "label": "Low"}, {"value": "high", "label": "High"}]
    return {
        "currentModelId": state["model"],
        "availableModels": [
            {
                "modelId": "grok-4",
                "name": "Grok 4",
                "_meta": {"reasoningEfforts": efforts, "reasoningEffort": state["effort"]},
            },
            {"modelId": "grok-mini", "name": "Grok mini"},
            {"modelId": "claude-opus-4.5", "name": "Opus"},
            {"modelId": "auto", "name": "Auto"},
        ],
    }


def initialize(frame: dict[str, Any]) -> None:
    capabilities: dict[str, Any] = {"loadSession": False, "promptCapabilities": {}}
    if FLAVOR == "steer":
        capabilities["_meta"] = {"steering": {"supported": True}}
    if FLAVOR == "codex2":
        capabilities["_meta"] = {"authStatus": {}}
    result = {"protocolVersion": 1, "agentCapabilities": capabilities, "agentInfo": {"name": FLAVOR, "version": "1.0"}}
    send({"jsonrpc": "2.0", "id": frame["id"], "result": result})
    if FLAVOR == "codex2" and os.environ.get("VENDOR_LOGGED_OUT") != "1":
        status = {"kind": "chatgpt", "label": "ChatGPT", "detail": "dev@example.invalid"}
        send({"jsonrpc": "2.0", "method": "_auth/status_update", "params": {"authStatus": status}})


def new_session(frame: dict[str, Any]) -> None:
    if os.environ.get("VENDOR_LOGGED_OUT") == "1":
        error = {"code": -32000, "message": "Authentication required"}
        send({"jsonrpc": "2.0", "id": frame["id"], "error": error})
        return
    result: dict[str, Any] = {"sessionId": SESSION}
    if FLAVOR in ("grok", "kiro"):
        if FLAVOR == "kiro":
            state["model"] = "claude-opus-4.5"
        result["models"] = models()
    if FLAVOR in ("qwen", "gemini", "hermes", "plain", "cursor"):
        modes = [{"id": m, "name": m} for m in ("default", "plan", "autoEdit")]
        result["modes"] = {"currentModeId": "default", "availableModes": modes}
    send({"jsonrpc": "2.0", "id": frame["id"], "result": result})
    if FLAVOR == "kiro":
        commands = [{"name": "effort", "description": "Set effort", "meta": {"hint": "<level>"}}]
        send(
            {
                "jsonrpc": "2.0",
                "method": "_kiro.dev/commands/available",
                "params": {"sessionId": SESSION, "commands": commands},
            }
        )


def set_model(frame: dict[str, Any]) -> None:
    params = frame["params"]
    state["model"] = params["modelId"]
    effort = (params.get("_meta") or {}).get("reasoningEffort")
    if effort:
        state["effort"] = effort
    send({"jsonrpc": "2.0", "id": frame["id"], "result": {}})
    if FLAVOR == "grok":
        changed = {"sessionUpdate": "model_changed", "model_id": state["model"], "reasoning_effort": state["effort"]}
        send(
            {
                "jsonrpc": "2.0",
                "method": "_x.ai/session_notification",
                "params": {"sessionId": SESSION, "update": changed},
            }
        )


def set_mode(frame: dict[str, Any]) -> None:
    state["mode"] = frame["params"]["modeId"]
    send({"jsonrpc": "2.0", "id": frame["id"], "result": {}})
    if FLAVOR == "gemini":
        say(f"[MODE_UPDATE] {state['mode']}")
    if FLAVOR == "qwen":
        send(
            {
                "jsonrpc": "2.0",
                "method": "qwen/notify/session/mode-update",
                "params": {"v": 1, "sessionId": SESSION, "currentModeId": state["mode"]},
            }
        )


def permission(request_id: Any = None) -> dict[str, Any]:
    options = [
        {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
        {"optionId": "cancel", "name": "Reject", "kind": "reject_once"},
    ]
    tool = {"toolCallId": "tc-1", "title": "rm -rf junk", "kind": "execute", "status": "pending"}
    return call("session/request_permission", {"sessionId": SESSION, "toolCall": tool, "options": options}, request_id)


def prompt(frame: dict[str, Any]) -> None:
    params = frame["params"]
    text = " ".join(block.get("text", "") for block in params["prompt"]).strip()
    log(f"prompt {text}")
    word, _, rest = text.partition(" ")
    if FLAVOR == "hermes" and (state["wedged"] or state["cancelled"]):  # a stale interrupt wedges it
        stop = queue_forever() if state["wedged"] else WEDGE
    else:
        state["cancelled"] = False
        stop = SCRIPTS.get(word, default)(rest, params)
    if stop == WEDGE:
        state["wedged"] = True
        error = {"code": -32603, "message": "Internal error"}
        error["data"] = {"details": "'NoneType' object has no attribute 'startswith'"}
        send({"jsonrpc": "2.0", "id": frame["id"], "error": error})
    elif stop is None:
        state["late"] = frame["id"]  # answered late, when the next request arrives
    else:
        send({"jsonrpc": "2.0", "id": frame["id"], "result": {"stopReason": stop}})


WEDGE = "wedge"  # a script's stop: the hermes wedge's error answer


def queue_forever() -> str:
    state["queued"] += 1
    say(f"Queued for the next turn. ({state['queued']} queued)")
    return "end_turn"


def cancel_follows() -> bool:
    """Whether a ``session/cancel`` arrives within 0.3 s (read ahead, pushed back otherwise)."""
    ready, _, _ = select.select([sys.stdin], [], [], 0.3)
    if not ready:
        return False
    line = sys.stdin.readline()
    if '"session/cancel"' in line:
        log("session/cancel")
        return True
    state["pushback"].append(line)
    return False


def default(rest: str, params: dict[str, Any]) -> str:
    say("ok")
    return "end_turn"


def ask(rest: str, params: dict[str, Any]) -> str:
    questions = [
        {
            "id": "db",
            "prompt": "Which database?",
            "options": [{"id": "pg", "label": "Postgres"}, {"id": "lite", "label": "SQLite"}],
        }
    ]
    answer = call("cursor/ask_question", {"toolCallId": "q-tool", "questions": questions}, "ask-1")
    outcome = answer.get("result", {}).get("outcome", {})
    chosen = [a["selectedOptionIds"] for a in outcome.get("answers", [])]
    say(f"{outcome.get('outcome')} {chosen}")
    return "end_turn"


def todos(rest: str, params: dict[str, Any]) -> str:
    items = [
        {"id": "1", "content": "write", "status": "completed"},
        {"id": "2", "content": "test", "status": "pending"},
    ]
    send(
        {
            "jsonrpc": "2.0",
            "method": "cursor/update_todos",
            "params": {"toolCallId": "t", "todos": items, "merge": False},
        }
    )
    send(
        {
            "jsonrpc": "2.0",
            "method": "cursor/task",
            "params": {
                "toolCallId": "sub-1",
                "description": "Explore",
                "prompt": "look",
                "subagentType": "explore",
                "durationMs": 5,
            },
        }
    )
    say("planned")
    return "end_turn"


def grok_ask(rest: str, params: dict[str, Any]) -> str:
    questions = [{"question": "Colour?", "options": [{"label": "Red"}, {"label": "Blue"}]}]
    answer = call("_x.ai/ask_user_question", {"sessionId": SESSION, "questions": questions})
    say(json.dumps(answer.get("result")))
    return "end_turn"


def grok_end(rest: str, params: dict[str, Any]) -> None:
    say("done early")
    prompt_id = (params.get("_meta") or {}).get("promptId")
    send(
        {
            "jsonrpc": "2.0",
            "method": "_x.ai/session/prompt_complete",
            "params": {"sessionId": SESSION, "promptId": prompt_id, "stopReason": "end_turn"},
        }
    )
    return None


def read_missing(rest: str, params: dict[str, Any]) -> str:
    answer = call("fs/read_text_file", {"sessionId": SESSION, "path": rest})
    say(json.dumps(answer.get("result") or answer.get("error", {}).get("code")))
    return "end_turn"


def effort(rest: str, params: dict[str, Any]) -> str:
    state["effort"] = rest
    say(f"Effort set to {rest}")
    send({"jsonrpc": "2.0", "method": "_kiro.dev/metadata", "params": {"sessionId": SESSION, "effort": rest}})
    # kiro runs one prompt at a time: no other prompt may arrive before this one is answered
    ready, _, _ = select.select([sys.stdin], [], [], 0.3)
    if ready:
        line = sys.stdin.readline()
        state["pushback"].append(line)
        if '"session/prompt"' in line:
            log("early " + line.strip())
    return "end_turn"


def env(rest: str, params: dict[str, Any]) -> str:
    say(os.environ.get(rest, "<unset>"))
    return "end_turn"


def hold(rest: str, params: dict[str, Any]) -> str:
    answer = permission()
    outcome = answer.get("result", {}).get("outcome", {})
    if FLAVOR == "hermes" and (state["cancelled"] or cancel_follows()):
        return WEDGE  # the interrupt lands on the loop's next step, with no final text
    if FLAVOR == "hermes" and outcome.get("outcome") == "cancelled":
        say("denied")
        return "end_turn"
    if state["cancelled"] or outcome.get("outcome") == "cancelled":
        return "cancelled"
    say("held " + str(outcome.get("optionId")))
    return "end_turn"


def racing_cancel(rest: str, params: dict[str, Any]) -> str:
    """Hermes with a session/cancel that lands just after its model call ended: wedged."""
    say("slow")
    while not state["cancelled"]:
        next_frame()
    return WEDGE


def withdraw(rest: str, params: dict[str, Any]) -> str:
    state["withdraw_on_cancel"] = True
    answer = permission("perm-" + "a1b2")
    return "cancelled" if answer.get("withdrawn") or state["cancelled"] else "end_turn"


def drain(rest: str, params: dict[str, Any]) -> str:
    answer = call("craft/drainMidTurnQueue", {"sessionId": SESSION})
    say(f"drain {answer.get('error', {}).get('code')}")
    return "end_turn"


def steer(rest: str, params: dict[str, Any]) -> str:
    say("working ")
    while True:
        frame = read()
        if frame is None:
            sys.exit(0)
        if frame.get("method") == "_session/steering":
            steered = " ".join(b.get("text", "") for b in frame["params"]["prompt"])
            send({"jsonrpc": "2.0", "id": frame["id"], "result": {"accepted": True}})
            say(f"steered by {steered}")
            return "end_turn"


def die(rest: str, params: dict[str, Any]) -> None:
    say("dying")
    sys.stderr.write("vendor agent: fatal\n")
    sys.stderr.flush()
    os._exit(3)


def garbage(rest: str, params: dict[str, Any]) -> str:
    sys.stdout.write("this is not json\n")
    sys.stdout.flush()
    say("after garbage")
    return "end_turn"


SCRIPTS = {
    "ASK": ask,
    "TODOS": todos,
    "GROKASK": grok_ask,
    "GROKEND": grok_end,
    "READMISSING": read_missing,
    "/effort": effort,
    "ENV": env,
    "HOLD": hold,
    "RACE": racing_cancel,
    "WITHDRAW": withdraw,
    "DRAIN": drain,
    "STEER": steer,
    "DIE": die,
    "GARBAGE": garbage,
}

HANDLERS = {
    "initialize": initialize,
    "session/new": new_session,
    "session/set_model": set_model,
    "session/set_mode": set_mode,
    "session/prompt": prompt,
}


def main() -> None:
    if FLAVOR == "about":
        if os.environ.get("VENDOR_LOGGED_OUT") == "1":
            sys.stderr.write("Not logged in\n")
            sys.exit(1)
        print("Logged in as dev@example.invalid")
        return
    while True:
        frame = read()
        if frame is None:
            return
        method = frame.get("method")
        if method is not None:
            log(method)
        if method == "session/cancel":
            state["cancelled"] = True
            continue
        handler = HANDLERS.get(method or "")
        if handler is not None:
            late = state.pop("late", None)
            if late is not None:
                send({"jsonrpc": "2.0", "id": late, "result": {"stopReason": "end_turn"}})
            handler(frame)
        elif "id" in frame and method is not None:
            send({"jsonrpc": "2.0", "id": frame["id"], "error": {"code": -32601, "message": "Method not found"}})
        time.sleep(0)


if __name__ == "__main__":
    main()
