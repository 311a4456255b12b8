"""What ``import anyagent`` and loading the plugins pull in (modules, not timings: the figures are
``benchmarks/bench_import.py``'s). Each check runs in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# what a user of Runtime / Session / Events does not need until they use it
NOT_AT_IMPORT = (
    # anyagent's own modules for adapters, tests, the JSON form, the CLI, plugins and discovery
    "anyagent.toolkit",
    "anyagent.wire",
    "anyagent.process",
    "anyagent.mock",
    "anyagent.serialize",
    "anyagent.cli",
    "anyagent.hookspecs",
    "anyagent._plugins",
    "anyagent._discovery",
    "anyagent._builtin",
    "anyagent._codec",
    # third-party and standard modules they bring
    "pluggy",
    "importlib.metadata",
    "msgspec",
    "cattrs",
    "httpx",
    "httpx_sse",
    "prompt_toolkit",
    "rich",
    "subprocess",
    "email",
)

# loading a plugin registers its adapter; the adapter's module loads when a session opens
NOT_AT_PLUGIN_LOAD = (
    "anyagent.toolkit",
    "anyagent.wire",
    "anyagent.process",
    "anyagent.mock",
    "anyagent.serialize",
    "anyagent._codec",
    "msgspec",
    "cattrs",
    "httpx",
    "httpx_sse",
)


def _run(code: str) -> object:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_import_anyagent_loads_none_of_the_heavy_modules() -> None:
    imported = _run(
        f"import sys, json, anyagent\nprint(json.dumps([m for m in {NOT_AT_IMPORT!r} if m in sys.modules]))"
    )
    assert imported == []


def test_the_public_names_still_resolve_and_pluggy_comes_with_hookimpl() -> None:
    code = (
        "import sys, json\nfrom anyagent import *\n"
        "print(json.dumps([callable(hookimpl), 'pluggy' in sys.modules, Runtime.__module__]))"
    )
    assert _run(code) == [True, True, "anyagent"]


def test_loading_every_plugin_imports_no_adapter_module_and_each_factory_still_makes_its_adapter() -> None:
    code = f"""
import json, sys
import anyagent
registry = anyagent.Runtime().registry()
after_load = sorted(m for m in sys.modules if m.endswith(".adapter") or m in {NOT_AT_PLUGIN_LOAD!r})
made = {{wire: getattr(factory(), "wire", None) for wire, factory in registry.adapters.items()}}
print(json.dumps([after_load, made, [d.message for d in registry.diagnostics]]))
"""
    after_load, made, diagnostics = _run(code)  # type: ignore[misc]
    assert after_load == []
    assert diagnostics == []
    assert made["mock"] == "mock"
    assert all(wire == made_wire for wire, made_wire in made.items()), made
    if len(made) == 1:
        pytest.skip("no adapter package installed beside core")


def test_the_shared_repr_writes_what_attrs_would_generate() -> None:
    import attrs

    from anyagent._frozen import _attrs_repr, _shared_reprs

    @attrs.frozen
    class Generated:
        value: object
        hidden: int = attrs.field(default=0, repr=False)
        custom: str = attrs.field(default="", repr=lambda text: f"<{len(text)} chars>")

    @attrs.frozen(repr=False)
    class Shared:
        value: object
        hidden: int = attrs.field(default=0, repr=False)
        custom: str = attrs.field(default="", repr=lambda text: f"<{len(text)} chars>")

    _shared_reprs({"__name__": Shared.__module__, "Shared": Shared})
    assert Shared.__repr__ is _attrs_repr
    for value in (None, "a'b", (1, 2.5), {"k": [1]}, Shared(Shared("inner")), Generated("x")):
        assert repr(Shared(value, 7, "abc")) == repr(Generated(value, 7, "abc")).replace("Generated", "Shared", 1)
    loops: tuple[list[object], list[object]] = ([], [])
    generated, shared = Generated(loops[0]), Shared(loops[1])
    loops[0].append(generated)
    loops[1].append(shared)
    assert repr(shared) == repr(generated).replace("Generated", "Shared") == "Shared(value=[...], custom=<0 chars>)"


def test_every_public_value_class_has_a_repr_naming_its_fields() -> None:
    import attrs

    import anyagent
    from anyagent import seam

    for module in (anyagent, seam):
        for value in vars(module).values():
            if isinstance(value, type) and attrs.has(value):
                assert value.__repr__ is not object.__repr__, value
    event = anyagent.TurnEnded(anyagent.Completed(), ["bg"])
    assert (
        repr(event) == "TurnEnded(stop=Completed(source=<CompletionSource.PROTOCOL: 'protocol'>), background=('bg',))"
    )


def test_lazy_exports_imports_a_name_once_and_refuses_unknown_ones() -> None:
    code = (
        "import json, sys, anyagent\n"
        "first = anyagent.hookimpl\n"
        "try:\n    anyagent.no_such_name\nexcept AttributeError as error:\n    refused = str(error)\n"
        "print(json.dumps([first is vars(anyagent)['hookimpl'], 'anyagent.hookspecs' in sys.modules, refused]))"
    )
    assert _run(code) == [True, True, "module 'anyagent' has no attribute 'no_such_name'"]


IMPORT_MODULES_BUDGET = 130  # modules `import anyagent` adds to a bare interpreter's (115 at this writing)
IMPORT_LOOPS_BUDGET = 4.8
"""`import anyagent`'s CPU time in units of a fixed pure-Python loop (1M additions) timed in the same
interpreter: 120 ms (issue 28, item 13) where that loop takes 25 ms. CPU time, not wall: a loaded
machine's waiting for a core is left out; and as a ratio: a loaded 2-core machine also runs every
instruction slower (shared caches; the loop took 28-50 ms at load 8-10), the loop and the import
alike. Measured at load 8-10: 115 modules, 2.8-4.5 loops (105-183 ms of CPU)."""

IMPORT_PROBE = """
import json, sys, time
def loop():
    started = time.process_time()
    total = 0
    for i in range(1_000_000):
        total += i
    return time.process_time() - started
before = loop()
modules = len(sys.modules)
started = time.process_time()
import anyagent
spent = time.process_time() - started
print(json.dumps([len(sys.modules) - modules, spent, min(before, loop())]))
"""


def _import_probe(env: dict[str, str]) -> tuple[int, float, float]:
    """(modules added, CPU seconds of ``import anyagent``, CPU seconds of the loop) in a fresh interpreter."""
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, timeout=120, check=True, env=env
    )
    added, spent, loop = json.loads(result.stdout.strip().splitlines()[-1])
    return int(added), float(spent), float(loop)


def test_import_anyagent_stays_within_its_budget() -> None:
    """The modules ``import anyagent`` adds (a count: the same at any load) and its CPU time against
    the loop's, the best of up to 15 fresh interpreters (one quiet moment is enough), with the
    bytecode a real install has (a checkout never run without ``PYTHONDONTWRITEBYTECODE`` has none,
    and every import compiles its source). Wall time and ``-X importtime`` (165-233 ms at load 7+
    for what is ~100 ms quiet) are ``benchmarks/bench_import.py``'s figures, not a test's."""
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPROFILEIMPORTTIME")}
    _import_probe(env)  # compiles and caches the bytecode (pip does this at install)
    ratios = []
    for _ in range(15):
        added, spent, loop = _import_probe(env)
        assert added <= IMPORT_MODULES_BUDGET, (
            f"import anyagent loaded {added} modules (budget {IMPORT_MODULES_BUDGET})"
        )
        ratios.append(spent / loop)
        if ratios[-1] <= IMPORT_LOOPS_BUDGET:
            return
    raise AssertionError(
        f"import anyagent took {min(ratios):.2f} loops of CPU at best (budget {IMPORT_LOOPS_BUDGET}; "
        f"{spent * 1000:.0f} ms against a {loop * 1000:.0f} ms loop in the last try)"
    )
