"""Portable mode names on codex: ``default``/``ask`` and ``bypass-permissions`` reach codex as its
own approval policies, at open and mid-session; codex's own ids keep working."""

from __future__ import annotations

from pathlib import Path

from anyagent import SessionOptions
from anyagent_codex.adapter import _thread_params
from anyagent_codex.settings import Settings


def test_the_mode_option_takes_the_portable_names() -> None:
    option = Settings().option("mode")
    assert option is not None
    for value in ("default", "ask", "bypass-permissions", "untrusted", "on-request", "never"):
        assert option.accepts(value), value
    assert not option.accepts("accept-edits")  # codex has no such approval policy
    assert option.resolve("default") == "on-request"
    assert option.resolve("ask") == "on-request"
    assert option.resolve("bypass-permissions") == "never"


def test_a_portable_name_set_mid_session_goes_out_as_codexs_own_policy() -> None:
    settings = Settings()
    settings.set("mode", "bypass-permissions")
    assert settings.mode == "never"
    assert settings.turn_overrides()["approvalPolicy"] == "never"
    settings.set("mode", "untrusted")
    assert settings.turn_overrides()["approvalPolicy"] == "untrusted"


def test_a_portable_name_at_open_starts_the_thread_with_codexs_own_policy(tmp_path: Path) -> None:
    options = SessionOptions(cwd=tmp_path).configure("mode", "ask")
    assert _thread_params(options)["approvalPolicy"] == "on-request"


def test_plan_mode_is_codexs_plan_collaboration_mode_not_an_approval_policy(tmp_path: Path) -> None:
    settings = Settings(model="gpt-5.5", mode="on-request")
    assert settings.option("mode").accepts("plan")  # type: ignore[union-attr]
    settings.set("mode", "plan")
    fields = settings.turn_overrides()
    assert "approvalPolicy" not in fields, "the approval policy stays what it was"
    assert fields["collaborationMode"] == {"mode": "plan", "settings": {"model": "gpt-5.5", "reasoning_effort": None}}
    assert settings.turn_overrides() == {}, "codex keeps the mode for the turns after"
    settings.set("effort", "low")
    assert settings.turn_overrides()["collaborationMode"]["settings"] == {"model": "gpt-5.5", "reasoning_effort": "low"}
    settings.set("mode", "default")
    fields = settings.turn_overrides()
    assert fields["approvalPolicy"] == "on-request"
    assert fields["collaborationMode"]["mode"] == "default", "leaving Plan mode says so"
    assert "approvalPolicy" not in _thread_params(SessionOptions(cwd=tmp_path).configure("mode", "plan"))


def test_a_resumed_thread_in_plan_mode_reports_it() -> None:
    settings = Settings()
    settings.adopt_thread({"approvalPolicy": "on-request", "collaborationMode": {"mode": "plan", "settings": {}}})
    assert settings.configuration()["mode"] == "plan"
    settings.set("mode", "never")
    assert settings.turn_overrides()["collaborationMode"]["mode"] == "default"
