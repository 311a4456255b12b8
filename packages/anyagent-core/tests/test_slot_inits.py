"""The hand-written ``__init__`` of the classes built once per streamed delta (``_slot_setters``)
does what attrs' generated one would: same parameters and defaults, same values (converters
included), same refusals."""

from __future__ import annotations

import inspect
from datetime import datetime, timezone
from types import MappingProxyType
from typing import Any

import attrs
import pytest

from anyagent import Event, ReasoningDelta, TextDelta, TurnInfo, seam
from anyagent._frozen import _EMPTY, _slot_setters
from anyagent.http import SseEvent
from anyagent.wire import Notification

FAST = [TextDelta, ReasoningDelta, Event, seam.Content, Notification, SseEvent]


def _attrs_twin(cls: type[Any]) -> type[Any]:
    """The same fields in a class whose ``__init__`` attrs generates."""
    fields = {field.name: attrs.field(default=field.default, converter=field.converter) for field in attrs.fields(cls)}
    return attrs.make_class(f"{cls.__name__}Twin", fields, frozen=True, slots=True)


def _values(obj: object) -> dict[str, Any]:
    return {field.name: getattr(obj, field.name) for field in attrs.fields(type(obj))}


@pytest.mark.parametrize("cls", FAST, ids=lambda cls: cls.__name__)
def test_the_fast_init_has_the_generated_signature(cls: type[Any]) -> None:
    assert cls.__init__.__module__ == cls.__module__  # the hand-written one is in place
    twin = inspect.signature(_attrs_twin(cls).__init__).parameters
    ours = inspect.signature(cls.__init__).parameters
    assert [(p.name, p.default, p.kind) for p in ours.values()] == [(p.name, p.default, p.kind) for p in twin.values()]


ARGS: dict[type[Any], tuple[Any, ...]] = {
    TextDelta: ("m1", "hello"),
    ReasoningDelta: ("m1", "hmm"),
    Event: (7, datetime(2026, 1, 1, tzinfo=timezone.utc), "s1", TextDelta("m", "x"), TurnInfo("t1")),
    seam.Content: (TextDelta("m", "x"), "tool-1"),
    Notification: ("session/update", {"a": 1}),
    SseEvent: ("message", {"a": 1}, '{"a": 1}', "evt-1"),
}


@pytest.mark.parametrize("cls", FAST, ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("extensions", ["default", None, {}, {"x/y": [1, 2]}, MappingProxyType({"x/z": 3})])
def test_the_fast_init_builds_what_attrs_builds(cls: type[Any], extensions: object) -> None:
    twin = _attrs_twin(cls)
    args = ARGS[cls]
    names = [field.name for field in attrs.fields(cls)]
    kwargs: dict[str, Any] = {}
    if extensions != "default":
        if "extensions" not in names:
            pytest.skip("no extensions field")
        kwargs["extensions"] = extensions
    for made, reference in [
        (cls(*args, **kwargs), twin(*args, **kwargs)),
        (cls(**dict(zip(names, args, strict=False)), **kwargs), twin(**dict(zip(names, args, strict=False)), **kwargs)),
        (cls(*args[:1], **dict(zip(names[1:], args[1:], strict=False)), **kwargs), twin(*args, **kwargs)),
    ]:
        assert _values(made) == _values(reference)
        if "extensions" in names:
            assert type(made.extensions) is MappingProxyType
            if not made.extensions:
                assert made.extensions is _EMPTY
    assert attrs.evolve(cls(*args, **kwargs)) == cls(*args, **kwargs)
    with pytest.raises(TypeError):
        cls(*args[:-1]) if len(args) > 1 and names[len(args) - 1] not in _defaults(cls) else cls()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        setattr(cls(*args), names[0], args[0])


def _defaults(cls: type[Any]) -> set[str]:
    return {field.name for field in attrs.fields(cls) if field.default is not attrs.NOTHING}


def test_slot_setters_refuse_a_field_list_that_is_not_the_class_s() -> None:
    with pytest.raises(AssertionError):
        _slot_setters(TextDelta, "text", "message_id")
    with pytest.raises(AssertionError):
        _slot_setters(Event, "sequence", "occurred_at", "session_id", "kind", "turn_info")
