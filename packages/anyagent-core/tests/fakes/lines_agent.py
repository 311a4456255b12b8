"""A fake agent speaking a tiny JSON-lines protocol, for session-level fault tests.

``lines_agent.py MODE``. Handshake: it prints ``{"hello": "1.0"}`` (except in ``hang``).
Each client line ``{"prompt": text, "turn": id}`` gets ``{"ack": id}``, ``{"text": ...}`` and
``{"end": id}``. Modes change that:
  normal   as above
  die      after the first text, write "fatal: the model crashed" to stderr and exit 3
  garbage  write a non-JSON line and a frame the translator chokes on in each turn
  hang     never finish the handshake (sleep)
  escape   after the first text, start a sleeper in its own session (setsid) that inherits
           stdout and stderr, write its pid to ``escaped.pid`` in the cwd, and exit 3
"""

from __future__ import annotations

import json
import subprocess
import sys
import time


def out(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> None:
    mode = sys.argv[1]
    if mode == "hang":
        time.sleep(3600)
        return
    out({"hello": "1.0"})
    for line in sys.stdin:
        frame = json.loads(line)
        turn = frame["turn"]
        out({"ack": turn})
        out({"text": "echo: " + frame["prompt"]})
        if mode == "die":
            sys.stderr.write("loading model\nfatal: the model crashed\n")
            sys.stderr.flush()
            sys.exit(3)
        if mode == "escape":
            sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
            with open("escaped.pid", "w") as file:
                file.write(str(sleeper.pid))
            sys.exit(3)
        if mode == "garbage":
            sys.stdout.write("this is not json\n")
            sys.stdout.flush()
            out({"boom": True})
        out({"end": turn})


if __name__ == "__main__":
    main()
