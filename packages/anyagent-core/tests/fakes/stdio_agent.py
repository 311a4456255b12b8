"""A fake stdio agent for the process and JSON-lines tests: ``stdio_agent.py MODE [ARG]``.

Modes (each prints ``{"ready": <pid>}`` first unless noted):
  echo          echo every stdin line back as {"echo": <parsed or text>}; exit 0 at stdin EOF
  exit N        write "dying N" to stderr and exit N at once (no ready line)
  garbage       write good frames mixed with non-JSON, binary, non-object and nested lines, then exit
  longline N    write one N-byte line (a JSON string), then {"after": true}, then wait for EOF
  noeol         write {"last": true} with no trailing newline and exit
  stderrflood N write N bytes of numbered stderr lines, then {"done": true}; wait for EOF
  stubborn      ignore SIGTERM and stdin EOF; sleep forever
  grandchild    start a grandchild that holds stdout/stderr and sleeps, print {"grandchild": pid},
                then exit (or, with ARG "stay", ignore EOF/SIGTERM and sleep too)
  escapee       like ``grandchild stay``, but the grandchild calls setsid (leaves the group); with
                ARG "mortal" the agent does not ignore SIGTERM (it dies of it, the grandchild stays)
  env           print {"env": environ, "cwd": cwd, "sigign": <SigIgn mask>} and exit
  slowstart S   sleep S seconds before the ready line (to cancel a spawn mid-way)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time


def out(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def ready() -> None:
    out({"ready": os.getpid()})


def sleep_forever() -> None:
    while True:
        time.sleep(3600)


def echo() -> None:
    ready()
    for line in sys.stdin.buffer:
        try:
            value: object = json.loads(line)
        except ValueError:
            value = line.decode("utf-8", "replace")
        out({"echo": value})


def garbage() -> None:
    ready()
    w = sys.stdout.buffer
    w.write(b'{"n": 1}\n')
    w.write(b"this is not json\n")
    w.write(b"\x00\xff\xfe binary \x80\x81\n")
    w.write(b"[1, 2, 3]\n")
    w.write(b'"a string"\n')
    w.write(b"\n   \n")
    w.write(b"[" * 100_000 + b"\n")
    w.write(b'{"n": 2}\r\n')
    w.write(b'{"unterminated": \n')
    w.write(b'{"n": 3}\n')
    w.flush()


def longline(size: int) -> None:
    ready()
    w = sys.stdout.buffer
    w.write(b'"')
    block = b"x" * (1024 * 1024)
    left = size - 2
    while left > 0:
        w.write(block[: min(left, len(block))])
        left -= len(block)
    w.write(b'"\n')
    w.write(b'{"after": true}\n')
    w.flush()
    sys.stdin.read()


def stderrflood(size: int) -> None:
    ready()
    written = 0
    n = 0
    while written < size:
        line = f"stderr line {n} " + "y" * 100 + "\n"
        sys.stderr.write(line)
        written += len(line)
        n += 1
    sys.stderr.flush()
    out({"done": True, "lines": n})
    sys.stdin.read()


def stubborn() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ready()
    sleep_forever()


def grandchild(stay: bool, escape: bool = False, mortal: bool = False) -> None:
    code = "import time\nwhile True: time.sleep(3600)"
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL, start_new_session=escape)
    if stay and not mortal:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # before the line: a SIGTERM right after it is ignored
    out({"grandchild": child.pid, "pid": os.getpid()})
    if stay:
        sleep_forever()
    os._exit(0)


def env() -> None:
    with open("/proc/self/status") as status:
        sigign = next(line.split()[1] for line in status if line.startswith("SigIgn:"))
    out({"env": dict(os.environ), "cwd": os.getcwd(), "sigign": sigign})


def main() -> None:
    mode = sys.argv[1]
    arg = sys.argv[2] if len(sys.argv) > 2 else ""
    if mode == "echo":
        echo()
    elif mode == "exit":
        sys.stderr.write(f"dying {arg}\n")
        sys.stderr.flush()
        sys.exit(int(arg))
    elif mode == "garbage":
        garbage()
    elif mode == "longline":
        longline(int(arg))
    elif mode == "noeol":
        sys.stdout.write('{"last": true}')
        sys.stdout.flush()
    elif mode == "stderrflood":
        stderrflood(int(arg))
    elif mode == "stubborn":
        stubborn()
    elif mode == "grandchild":
        grandchild(arg == "stay")
    elif mode == "escapee":
        grandchild(True, escape=True, mortal=arg == "mortal")
    elif mode == "env":
        env()
    elif mode == "slowstart":
        time.sleep(float(arg))
        ready()
        sys.stdin.read()
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
