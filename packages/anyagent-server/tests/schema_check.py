"""Lines against the committed schema (and the sent frames that are meant to be commands)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

PACKAGE = Path(__file__).parent.parent
SCHEMA = PACKAGE / "schema.json"


@cache
def _validators() -> tuple[Any, Any]:
    document = json.loads(SCHEMA.read_text(encoding="utf-8"))
    line = {**document, "$ref": "#/definitions/Line"}
    frame = {**document, "$ref": "#/definitions/Frame"}
    for root in (line, frame):
        root.pop("properties", None)
        root.pop("type", None)
    return jsonschema.Draft7Validator(line), jsonschema.Draft7Validator(frame)


def check_lines(lines: list[dict[str, Any]], sent: list[str] = ()) -> None:  # type: ignore[assignment]
    line_validator, frame_validator = _validators()
    shapes: set[str] = set()
    for line in lines:
        event = line.get("event")
        if isinstance(event, dict):  # a flood's lines differ only in these: validate each shape once
            key = json.dumps({**line, "event": {**event, "sequence": 0, "occurred_at": None}}, sort_keys=True)
            if key in shapes:
                continue
            shapes.add(key)
        errors = sorted(line_validator.iter_errors(line), key=lambda e: e.path)
        assert not errors, f"line does not match the schema: {json.dumps(line)[:500]}\n{errors[0].message[:500]}"
    for text in sent:
        try:
            frame = json.loads(text)
        except ValueError:
            continue
        if isinstance(frame, dict):
            errors = list(frame_validator.iter_errors(frame))
            assert not errors, f"sent frame does not match the schema: {text[:300]}\n{errors[0].message[:300]}"
