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
  detach   after the first text, start a sleeper that calls setsid and a double-fork daemon
           (setsid, its parent exits at once), write both pids to ``detached.pids``, exit 3
  detachstay  as ``detach``, but write its own pid to ``agent.pid`` and stay mid-turn
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def out(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


DAEMON = """\
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open("daemon.pid.tmp", "w") as file:
            file.write(str(os.getpid()))
        os.rename("daemon.pid.tmp", "daemon.pid")
        time.sleep(60)
    os._exit(0)
"""


def detach(stay: bool) -> None:
    quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True, **quiet)
    subprocess.run([sys.executable, "-c", DAEMON], check=True, **quiet)
    while not os.path.exists("daemon.pid"):
        time.sleep(0.01)
    with open("daemon.pid") as file:
        daemon = int(file.read())
    with open("detached.pids.tmp", "w") as file:
        file.write(f"{sleeper.pid} {daemon}")
    os.rename("detached.pids.tmp", "detached.pids")
    if not stay:
        sys.exit(3)
    with open("agent.pid.tmp", "w") as file:
        file.write(str(os.getpid()))
    os.rename("agent.pid.tmp", "agent.pid")
    time.sleep(3600)


def main() -> None:
    mode = sys.argv[1].removeprefix("fast-")  # "fast-X": X, read by a driver with a fast path
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
        if mode in ("detach", "detachstay"):
            detach(mode == "detachstay")
        if mode == "garbage":
            sys.stdout.write("this is not json\n")
            sys.stdout.flush()
            out({"boom": True})
        out({"end": turn})


if __name__ == "__main__":
    main()
