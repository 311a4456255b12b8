"""A cancelled open leaves no actor; a SIGKILLed driver (a real subprocess) leaves no session actor alive."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import anyio
import pytest
import ray

import anyagent
from anyagent_ray import ACTOR_PREFIX, RayRuntime

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _alive_hosts() -> list[str]:
    named = ray.util.list_named_actors(all_namespaces=True)  # public, from the GCS (no dashboard needed)
    return [a["name"] for a in named if a["name"].startswith(ACTOR_PREFIX)]


def _wait_no_hosts(seconds: float) -> list[str]:
    deadline = time.monotonic() + seconds
    while (alive := _alive_hosts()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return alive


async def test_cancelled_open_leaves_nothing() -> None:
    async with RayRuntime(runtime=functools.partial(anyagent.Runtime.with_mock, None)) as runtime:
        await runtime.discover()
        with anyio.move_on_after(0.05) as scope:
            await runtime.open("mock", anyagent.SessionOptions.in_dir("."))
        assert scope.cancelled_caught
        assert await anyio.to_thread.run_sync(_wait_no_hosts, 30) == []


DRIVER = """
import functools, sys, anyio, ray, anyagent
from anyagent.mock import Script, Step, completed, text
from anyagent_ray import ACTOR_PREFIX, RayRuntime
script = Script().turn([Step.emit(text("m1", "a")), Step.sleep(120), Step.end(completed())])
async def main():
    async with RayRuntime(runtime=functools.partial(anyagent.Runtime.with_mock, script)) as runtime:
        session, events = await runtime.open("mock", anyagent.SessionOptions.in_dir("."))
        await session.prompt("go")
        async for event in events:
            if isinstance(event.kind, anyagent.TextDelta):
                print("mid-turn", flush=True)
                await anyio.sleep(600)
ray.init(address=sys.argv[1], log_to_driver=False)
anyio.run(main)
"""


def test_sigkilled_driver_leaves_no_session() -> None:
    address = ray.get_runtime_context().gcs_address
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, address], stdout=subprocess.PIPE, text=True)
    try:
        assert driver.stdout is not None
        line = driver.stdout.readline()
        assert line.strip() == "mid-turn"
        assert _alive_hosts()
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(30)
        assert _wait_no_hosts(60) == []
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
