"""``python -m anyagent_testkit.fakemodel`` — run the fake model until SIGTERM/SIGINT.

Options: ``--port 0`` (any free port), ``--port-file F`` (the bound port, written atomically once
listening), ``--log L`` (JSONL, one line per request), ``--slow-delay S``, ``--script S.json`` (a JSON
list of scripted replies, see ``reply_from_json``), ``--no-bad-key`` (never answer 401).
Prints ``fake model listening on http://127.0.0.1:<port>`` on stdout once ready.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from . import FakeModel
from ._script import reply_from_json


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m anyagent_testkit.fakemodel", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 = any free port)")
    parser.add_argument("--port-file", type=Path, default=None, help="write the bound port here")
    parser.add_argument("--log", type=Path, default=None, help="JSONL request log")
    parser.add_argument("--slow-delay", type=float, default=0.25, help="seconds between SLOW chunks")
    parser.add_argument("--script", type=Path, default=None, help="JSON list of scripted replies")
    parser.add_argument("--no-bad-key", action="store_true", help="do not answer 401 to keys containing 'bad'")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server; returns the exit status (0 after a clean stop, 2 for a bad script)."""
    options = _parser().parse_args(argv)
    try:
        script = [reply_from_json(item) for item in json.loads(options.script.read_text())] if options.script else []
    except (OSError, ValueError, TypeError) as exc:
        print(f"fake model: cannot use the script {options.script}: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda number, frame: stop.set())
    model = FakeModel(
        script,
        log=options.log,
        slow_delay=options.slow_delay,
        port=options.port,
        bad_key_marker=None if options.no_bad_key else "bad",
    )
    with model:
        if options.port_file is not None:
            partial = options.port_file.with_name(options.port_file.name + ".partial")
            partial.write_text(str(model.port), encoding="utf-8")
            os.replace(partial, options.port_file)
        print(f"fake model listening on {model.url}", flush=True)
        while not stop.wait(0.2):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
