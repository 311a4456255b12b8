"""The helpers the value classes share: frozen containers for their converters and one ``repr``
written once for every attrs class (``_shared_reprs``)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if not value:
        return _EMPTY
    if isinstance(value, MappingProxyType):
        return value
    return MappingProxyType(dict(value))


def _tuple(value: Iterable[Any]) -> tuple[Any, ...]:
    return value if isinstance(value, tuple) else tuple(value)


def _slot_setters(cls: type[Any], *names: str) -> tuple[Any, ...]:
    """The slot setters of the frozen, slotted attrs class ``cls``, one per field, ``names`` being
    every field in order (checked). A class built once per streamed delta gets a hand-written
    ``__init__`` that fills its slots through these (attrs' own calls ``object.__setattr__`` by
    name, a type lookup each, and runs a mapping converter even for the empty default): 25–35%
    less time per construction, same signature and values (``test_slot_inits.py`` compares them)."""
    fields = attrs.fields(cls)
    assert tuple(field.name for field in fields) == names, (cls, names)
    assert all(field.validator is None and field.init and not field.kw_only for field in fields), cls
    return tuple(cls.__dict__[name].__set__ for name in names)


_repring = threading.local()


def _attrs_repr(self: object) -> str:
    """``Name(field=value!r, ...)`` as attrs writes it (``...`` for a value inside itself, a field's
    own ``repr=`` callable honoured), written once here instead of compiled for every class: the
    value classes are declared ``repr=False`` and get this from ``_shared_reprs``, which halves the
    source attrs compiles at import (measured: ~40% less CPU in class creation)."""
    active: set[int] = _repring.__dict__.setdefault("active", set())
    if id(self) in active:
        return "..."
    active.add(id(self))
    try:
        cls = type(self)
        fields = ", ".join(
            f"{field.name}={(field.repr if callable(field.repr) else repr)(getattr(self, field.name))}"
            for field in attrs.fields(cls)  # type: ignore[arg-type]
            if field.repr
        )
        return f"{cls.__qualname__.rsplit('>.', 1)[-1]}({fields})"
    finally:
        active.discard(id(self))


def _shared_reprs(namespace: Mapping[str, Any]) -> None:
    """Give every attrs class defined in the module ``namespace`` that has no ``__repr__`` of its
    own the shared ``_attrs_repr`` (call it at the end of a module whose classes say ``repr=False``)."""
    for value in list(namespace.values()):
        if (
            isinstance(value, type)
            and value.__module__ == namespace["__name__"]
            and attrs.has(value)
            and "__repr__" not in vars(value)
        ):
            value.__repr__ = _attrs_repr  # type: ignore[method-assign]
