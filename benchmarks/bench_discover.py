"""Discovery scan wall time beside a bare ``shutil.which`` loop, same names, same PATH, same run.

Setup (all in a temp dir): 12 profiles, a 100-entry ``PATH`` of fake dirs with 6 of the 12 executables
spread through it, a fresh ``HOME``, and a fake ``$SHELL`` whose login ``PATH`` is the same 100 dirs plus
two more. The login-shell capture is prewarmed before timing, so ``scan`` runs no subprocess.
Targets: median ``scan`` <= 2x the bare loop and <= 20 ms.

Run: ``python benchmarks/bench_discover.py [--iterations N]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from anyagent._discovery import Discovery, LoginShellPath
from anyagent.installation import AgentProfile, DiscoveryReport

PROFILES = 12
PATH_DIRS = 100
FOUND_AT = {0: 5, 2: 20, 4: 45, 6: 70, 8: 90, 10: 99}  # profile index -> PATH dir holding its executable


def build_machine(root: Path) -> tuple[list[AgentProfile], str]:
    """Fake dirs, executables and a fake login shell under ``root``; -> (profiles, PATH value)."""
    dirs = [root / "path" / f"d{i:03}" for i in range(PATH_DIRS)]
    for directory in dirs:
        directory.mkdir(parents=True)
    profiles = []
    for index in range(PROFILES):
        name = f"bench-agent-{index:02}"
        profiles.append(
            AgentProfile(
                id=name,
                name=name,
                wire="acp",
                executables=(name,),
                install_hint=f"install {name}",
                extra_dirs={"any": ("~/.bench/bin",)},
            )
        )
        if index in FOUND_AT:
            target = dirs[FOUND_AT[index]] / name
            target.write_text("#!/bin/sh\n")
            target.chmod(0o755)
    path = os.pathsep.join(str(d) for d in dirs)
    home = root / "home"
    home.mkdir()
    login_path = path + os.pathsep + os.pathsep.join(str(root / "login" / f"l{i}") for i in range(2))
    shell = root / "fake-shell"
    shell.write_text(f'#!/bin/sh\nPATH="{login_path}"\neval "$2"\n')
    shell.chmod(0o755)
    os.environ.update(HOME=str(home), PATH=path, SHELL=str(shell))
    os.environ.pop("ANYAGENT_NO_LOGIN_SHELL", None)
    return profiles, path


def timed(samples: list[float], call: Callable[[], object]) -> object:
    started = time.perf_counter()
    result = call()
    samples.append(time.perf_counter() - started)
    return result


async def measure(profiles: list[AgentProfile], path: str, iterations: int) -> dict[str, list[float]]:
    """Interleave ``scan`` and the bare ``which`` loop so both see the same machine load."""
    capture = LoginShellPath()
    discovery = Discovery(login_shell=capture)
    discovery.prewarm()
    await anyio.to_thread.run_sync(capture.join, 10.0)
    names = [p.executables[0] for p in profiles]
    samples: dict[str, list[float]] = {"scan": [], "which": []}
    report: DiscoveryReport | None = None
    for _ in range(iterations):
        started = time.perf_counter()
        report = await discovery.scan(profiles)
        samples["scan"].append(time.perf_counter() - started)
        timed(samples["which"], lambda: [shutil.which(name, path=path) for name in names])
    assert report is not None
    assert len(report.agents) == len(FOUND_AT), report
    assert not report.diagnostics, report.diagnostics
    return samples


def summary(label: str, values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return f"{label:>28}: median {statistics.median(values) * 1e3:7.3f} ms  p95 {p95 * 1e3:7.3f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=300)
    args = parser.parse_args()
    saved = dict(os.environ)
    ok = True
    try:
        with tempfile.TemporaryDirectory(prefix="anyagent-bench-") as tmp:
            profiles, path = build_machine(Path(tmp))
            print(f"discover: {PROFILES} profiles, {PATH_DIRS}-entry PATH, {len(FOUND_AT)} installed, prewarmed")
            for backend in ("asyncio", "trio"):
                samples = anyio.run(measure, profiles, path, args.iterations, backend=backend)
                scan_ms = statistics.median(samples["scan"]) * 1e3
                which_ms = statistics.median(samples["which"]) * 1e3
                ratio = scan_ms / which_ms
                print(summary(f"scan() [{backend}]", samples["scan"]))
                print(summary(f"shutil.which loop [{backend}]", samples["which"]))
                verdict = "ok" if ratio <= 2.0 and scan_ms <= 20.0 else "MISSED"
                print(f"{'ratio':>28}: {ratio:.2f}x  (target <= 2x and <= 20 ms: {verdict})")
                ok = ok and verdict == "ok"
    finally:
        os.environ.clear()
        os.environ.update(saved)
    if not ok:
        print("  (a figure, not a failure: `nox -s bench` runs the other benchmarks too)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
