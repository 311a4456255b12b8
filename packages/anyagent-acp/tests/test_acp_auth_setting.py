"""The ``authenticate_unless_setting`` quirk: parsed from a profile, and the settings-file check
(read only) that decides whether ``authenticate`` runs on open. The end-to-end open is tested with
Antigravity's server in ``anyagent-antigravity``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from anyagent_acp.adapter import _setting_set
from anyagent_acp.quirks import Quirks

SETTING = ("~/.agent/settings.json", "auth.type")


def test_the_quirk_is_parsed_and_bad_shapes_are_ignored() -> None:
    quirks = Quirks.read({"authenticate_unless_setting": {"file": SETTING[0], "key": SETTING[1]}})
    assert quirks.authenticate_unless_setting == SETTING
    for bad in ("x", {"file": "a"}, {"key": "b"}, {"file": 1, "key": "b"}, None):
        assert Quirks.read({"authenticate_unless_setting": bad}).authenticate_unless_setting is None


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (json.dumps({"auth": {"type": "oauth-personal"}}), True),
        (json.dumps({"auth.type": "gemini-api-key"}), True),
        (json.dumps({"auth": {"type": ""}}), False),
        (json.dumps({"auth": {}}), False),
        (json.dumps(["auth"]), False),
        ("{not json", False),
        (None, False),
    ],
)
def test_the_settings_file_decides(tmp_path: Path, content: str | None, expected: bool) -> None:
    path = tmp_path / ".agent" / "settings.json"
    if content is not None:
        path.parent.mkdir()
        path.write_text(content)
    assert _setting_set(SETTING, {"HOME": str(tmp_path)}) is expected
    assert _setting_set(None, {"HOME": str(tmp_path)}) is False
    if content is not None:
        assert path.read_text() == content  # read, never written
