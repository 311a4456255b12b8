"""Import cost (figures, not pass/fail): each statement in a fresh interpreter, alternating, medians.

- ``import anyagent`` (target <= 150 ms wall; <= 120 ms cumulative by ``python -X importtime``);
- ``import anyagent`` + loading every installed plugin (``Runtime().registry()``; target <= 250 ms);
- ``import httpx`` for scale, and a bare ``python -c pass`` (the interpreter's own start-up).

Printed: the whole process wall time and its CPU time (user + system), each as median (min–max)
and minus the bare start-up, with the load average before and after (wall time on a loaded machine
is mostly waiting for a core; CPU time is what load barely moves).

Run: ``python benchmarks/bench_import.py [--runs 15]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _flood import median

STATEMENTS = {
    "python -c pass": "pass",
    "import anyagent": "import anyagent",
    "import anyagent + all plugins": "import anyagent; r = anyagent.Runtime(); r.registry()",
    "import httpx": "import httpx",
}


COUNT_PLUGINS = (
    "import anyagent; r = anyagent.Runtime().registry(); "
    "print(len(r.adapters), 'adapters,', len(r.profiles), 'profiles')"
)


# an installed package has its bytecode compiled (pip does it); this shell may forbid writing it
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def once(code: str) -> tuple[float, float]:
    """(wall ms, CPU ms) of one fresh interpreter running ``code``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=ENV)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def importtime_ms(module: str) -> float:
    """``python -X importtime -c "import module"``: the cumulative time of ``module``'s line, ms."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
        env=ENV,
    )
    for line in result.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip() == module:
            return int(parts[1]) / 1000
    raise RuntimeError(f"no importtime line for {module}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    load_before = os.getloadavg()
    for code in STATEMENTS.values():
        once(code)  # writes the bytecode a real installation has
    times: dict[str, list[float]] = {name: [] for name in STATEMENTS}
    cpus: dict[str, list[float]] = {name: [] for name in STATEMENTS}
    for _ in range(args.runs):
        for name, code in STATEMENTS.items():
            wall, cpu = once(code)
            times[name].append(wall)
            cpus[name].append(cpu)
    base, cpu_base = median(times["python -c pass"]), median(cpus["python -c pass"])
    plugins = subprocess.run(
        [sys.executable, "-c", COUNT_PLUGINS],
        capture_output=True,
        text=True,
        env=ENV,
    ).stdout.strip()
    print(
        f"import cost, fresh interpreter each, median (min–max) of {args.runs}, ms: wall | minus start-up"
        " || CPU | minus start-up (CPU is what a loaded machine does not inflate)"
    )
    for name, values in times.items():
        ordered, cpu = sorted(values), sorted(cpus[name])
        mid, cpu_mid = median(values), median(cpus[name])
        print(
            f"  {name:<30} {mid:7.1f} ({ordered[0]:.1f}–{ordered[-1]:.1f}) | {mid - base:6.1f}"
            f" || {cpu_mid:6.1f} ({cpu[0]:.1f}–{cpu[-1]:.1f}) | {cpu_mid - cpu_base:6.1f}"
        )
    print(f"  (plugins loaded: {plugins or 'unknown'})")
    cumulative = sorted(importtime_ms("anyagent") for _ in range(args.runs))
    print(
        f"  python -X importtime, the `anyagent` line's cumulative µs (the sum of the self times of every"
        f" module it imports) as ms: min {cumulative[0]:.1f}, median {median(cumulative):.1f},"
        f" max {cumulative[-1]:.1f} (target <= 120; tests/test_import_cost.py guards the min)"
    )
    load_after = os.getloadavg()
    print(
        f"  (load average 1/5/15 min: before {load_before[0]:.2f}/{load_before[1]:.2f}/{load_before[2]:.2f},"
        f" after {load_after[0]:.2f}/{load_after[1]:.2f}/{load_after[2]:.2f}; {os.cpu_count()} CPUs)"
    )


if __name__ == "__main__":
    sys.exit(main())
