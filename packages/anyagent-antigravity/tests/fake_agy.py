"""A scripted fake ``agy`` (headless stream-json), written from what the recordings show.

``python fake_agy.py STATE.json [agy flags...]``. ``STATE.json`` holds ``{"script": {...}, "dir": D}``.
Every launch appends its flags to ``D/argv.jsonl`` and its pid to ``D/pids``; conversations live in
``D/conversations/<id>.json`` (the step count and the prompts so far), so ``--conversation <id>``
continues one with its step numbering (recorded: 08-resume-b starts at step 2 after 08-resume-a's
two steps).

Like the real one (recorded): one ``init`` frame first (``permission_mode`` ``always-proceed`` with
``--dangerously-skip-permissions``, else ``request-review``); per prompt a ``user_input`` step, steps,
and one ``result``. Prompts:

- ``TOOL``: a ``run_command`` step that completes with ``--dangerously-skip-permissions`` and fails
  "user denied permission" without it (03-tool-ask, 04-tool-skip);
- ``SLOW``: a ``run_command`` step that stays ``ACTIVE`` for a minute (07-cancel);
- anything else: one ``agent_response`` echoing the prompt, the conversation id and the earlier
  prompts of the conversation.

``agy models`` (not logged as a launch) prints the script's ``models`` lines (default: a header
and three models, as agy's "Available models:" list shows them, recorded: 09-config); the script
key ``models_fail`` makes it print an error and exit 1, ``models_hang`` makes it sleep a minute.

Script keys: ``logged_out`` (stderr and a ``result`` error before ``init``, as 10-logged-out),
``stderr_logged_out`` (only the stderr line, then exit 1), ``hang_on_resume`` (a ``--conversation``
launch that never prints ``init``).
Unverified (no recording): what agy prints for an unknown ``--conversation``; here a ``result``
error "conversation not found" before ``init``.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

_USAGE = {"input_tokens": 13762, "output_tokens": 5, "thinking_tokens": 0, "cache_read_tokens": 0}


def send(frame: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def result(conversation: str, status: str, error: str | None = None, response: str = "") -> None:
    body: dict[str, Any] = {"conversation_id": conversation, "status": status, "response": response, "num_turns": 1}
    if error is not None:
        body["error"] = error
    body["usage"] = {**_USAGE, "total_tokens": 13767}
    send({"event": "result", "result": body})


class Conversation:
    def __init__(self, directory: Path, conversation_id: str) -> None:
        self.path = directory / "conversations" / f"{conversation_id}.json"
        self.id = conversation_id
        data = json.loads(self.path.read_text()) if self.path.exists() else {"steps": 0, "prompts": []}
        self.steps: int = data["steps"]
        self.prompts: list[str] = data["prompts"]

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps({"steps": self.steps, "prompts": self.prompts}))

    def step(self, state: str, step_type: str, **fields: Any) -> int:
        index = self.steps
        self.steps += 1
        self.save()
        return self.update(index, state, step_type, **fields)

    def update(self, index: int, state: str, step_type: str, **fields: Any) -> int:
        body = {"conversation_id": self.id, "step_index": index, "state": state, "step_type": step_type, **fields}
        send({"event": "step_update", "step_update": body})
        return index


DEFAULT_MODELS = [
    "Available models:",
    "  Gemini 3.8 Flash (High)",
    "  Gemini 3.1 Pro (Low)",
    "  Claude Opus 4.6 (Thinking)",
]


def models(script: dict[str, Any]) -> int:
    if script.get("models_hang"):
        time.sleep(60)
    if script.get("models_fail"):
        sys.stderr.write("Error: could not fetch the model list\n")
        return 1
    lines = script.get("models", DEFAULT_MODELS)
    sys.stdout.write("".join(f"{line}\n" for line in lines))
    return 0


def main() -> int:
    state = json.loads(Path(sys.argv[1]).read_text())
    script, directory = state["script"], Path(state["dir"])
    flags = sys.argv[2:]
    if flags[:1] == ["models"]:
        return models(script)
    with (directory / "argv.jsonl").open("a") as log:
        log.write(json.dumps(flags) + "\n")
    with (directory / "pids").open("a") as log:
        log.write(f"{os.getpid()}\n")
    if script.get("stderr_logged_out") or script.get("logged_out"):
        sys.stderr.write("Error: authentication required. Run 'agy' to log in, then retry.\n")
        sys.stderr.flush()
        if script.get("logged_out"):
            result("", "ERROR", "authentication failed or timed out")
        return 1
    skip = "--dangerously-skip-permissions" in flags
    resume = flags[flags.index("--conversation") + 1] if "--conversation" in flags else None
    if resume is not None and not (directory / "conversations" / f"{resume}.json").exists():
        result("", "ERROR", f"conversation not found: {resume}")
        return 1
    if resume is not None and script.get("hang_on_resume"):
        time.sleep(120)  # a relaunch that never prints init
    conversation = Conversation(directory, resume or str(uuid.uuid4()))
    conversation.save()
    mode = "always-proceed" if skip else "request-review"
    send({"event": "init", "conversation_id": conversation.id,
          "init": {"cwd": os.getcwd(), "tools": ["run_command", "view_file"], "permission_mode": mode}})  # fmt: skip
    for line in sys.stdin:
        prompt = json.loads(line)["message"]["content"]
        conversation.step("DONE", "user_input")
        if prompt.startswith(("TOOL", "SLOW")):
            conversation.step("DONE", "agent_response", usage={**_USAGE, "total_tokens": 13767})
            command = "sleep 60" if prompt.startswith("SLOW") else "echo hello > probe.txt"
            info = {"name": "run_command", "parameters": {"CommandLine": command}}
            index = conversation.step("ACTIVE", "tool", tool_name="run_command", tool_info=info)
            if prompt.startswith("SLOW"):
                time.sleep(60)
            if skip:
                conversation.update(index, "DONE", "tool", tool_name="run_command", tool_info={**info, "output": ""})
            else:
                error = {
                    "type": "TOOL_ERROR",
                    "message": f"permission check failed: user denied permission to run {command}",
                }
                conversation.update(index, "ERROR", "tool", tool_name="run_command", tool_info={**info, "error": error})
            result(conversation.id, "SUCCESS")
        else:
            earlier = ", ".join(conversation.prompts) or "nothing"
            text = f"echo: {prompt} (conversation {conversation.id}; earlier: {earlier})\n"
            usage = {**_USAGE, "total_tokens": 13767}
            conversation.step("DONE", "agent_response", text_delta=text, usage=usage)
            result(conversation.id, "SUCCESS", response=text)
        conversation.prompts.append(prompt)
        conversation.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
