"""Accounts from real logged-in and logged-out codex frames (the project's shared recordings, cut
down to what these calls read): plan usage, the login probe, ``AuthRequired`` at open, and the plan
and rate-limit notifications of a logged-in session."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from codex_harness import RECORDINGS, runtime_with_env

from anyagent import (
    AgentInstallation,
    Authenticated,
    AuthKind,
    AuthRequired,
    PlanEntryStatus,
    PlanUpdated,
    PlanUsageUpdated,
    SessionOptions,
    Unauthenticated,
    seam,
)
from anyagent_codex import Translator
from anyagent_testkit.replay import write_replayer_shim

pytestmark = pytest.mark.anyio


def _agent(tmp_path: Path, recording: str) -> AgentInstallation:
    return AgentInstallation.at("codex", write_replayer_shim(tmp_path / "bin", RECORDINGS / recording, name="codex"))


async def test_plan_usage_reads_the_subscription_windows(tmp_path: Path) -> None:
    async with runtime_with_env(dict(os.environ)) as runtime:
        usage = await runtime.plan_usage(_agent(tmp_path, "plan-usage-subscription.jsonl"))
    assert usage.plan == "edu"
    assert [(w.label, w.used_percent) for w in usage.windows] == [("5h", 5.0), ("7d", 4.0)]
    assert usage.windows[0].resets_at is not None


async def test_probe_auth_reads_the_chatgpt_account(tmp_path: Path) -> None:
    async with runtime_with_env(dict(os.environ)) as runtime:
        auth = await runtime.probe_auth(_agent(tmp_path, "plan-usage-subscription.jsonl"))
    assert isinstance(auth, Authenticated) and auth.kind is AuthKind.SUBSCRIPTION
    assert auth.account is not None and auth.account.email == "user@example.com"


async def test_logged_out_fails_open_with_the_login_and_probes_unauthenticated(tmp_path: Path) -> None:
    agent = _agent(tmp_path, "logged-out.jsonl")
    async with runtime_with_env(dict(os.environ)) as runtime:
        with pytest.raises(AuthRequired) as caught:
            await runtime.open(agent, SessionOptions.in_dir(tmp_path))
        assert (str(agent.executable_path), "login") in [getattr(m, "command", None) for m in caught.value.login]
        assert isinstance(await runtime.probe_auth(agent), Unauthenticated)
        with pytest.raises(AuthRequired):
            await runtime.plan_usage(agent)


def test_logged_in_plan_and_rate_limit_notifications_translate() -> None:
    translator = Translator()
    events: list[seam.DriverEvent] = []
    for line in (RECORDINGS / "logged-in-notifications.jsonl").read_text().splitlines():
        frame = json.loads(line)
        if "method" in frame:
            events += translator.feed(frame["method"], frame["params"], frame)
    kinds = [event.kind for event in events if isinstance(event, seam.Content)]
    [plan] = [kind for kind in kinds if isinstance(kind, PlanUpdated)]
    assert len(plan.entries) >= 3 and plan.entries[0].status is PlanEntryStatus.PENDING
    [usage] = [kind for kind in kinds if isinstance(kind, PlanUsageUpdated)]
    assert [w.used_percent for w in usage.usage.windows] == [5.0, 4.0]
