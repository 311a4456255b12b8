"""Every Python block of every package README runs, the way tests/test_docs.py runs docs/: against
the real engine with a scripted agent standing in for each agent the README names (no CLI, no
account). A block that needs something else says so with ``<!-- docs-agent: VARIANT -->``; an
``excerpt`` (a few lines of a test the package runs in full, with its fixtures) must compile and
its imports must resolve."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_docs import BLOCK, PREAMBLE, run_block

ROOT = Path(__file__).resolve().parents[3]
# core's README runs in test_docs.py
READMES = sorted(p for p in (ROOT / "packages").glob("*/README.md") if p.parent.name != "anyagent-core")

# every agent id and wire the package READMEs name stand for the docs' scripted agent
STAND_INS = """
_WIRES = ("claude", "acp", "codex", "opencode", "pi", "agy")
_IDS = {"codex": "codex", "opencode": "opencode", "pi": "pi", "antigravity": "agy", "gemini": "acp",
        "claude-acp": "acp", "qwen": "acp"}
_SCRIPT = Script(
    options=(
        select_option("model", ["sonnet", "opus", "anthropic/claude-sonnet-4-5"]),
        select_option("effort", ["low", "high"]),
        select_option("sandbox", ["read-only", "workspace-write", "danger-full-access"]),
        anyagent.ConfigOption(id="permission_gate", name="Permission gate", kind=anyagent.BooleanKind(), current=False),
    ),
    capabilities=(Capability.RESUME,),
    history=(_KEPT,),
)
for _ in range(20):
    _SCRIPT = _SCRIPT.turn(_turn())


class _StandIns:
    @anyagent.hookimpl
    def anyagent_adapters(self, register):
        for wire in _WIRES:
            register.adapter(lambda: MockAdapter(_SCRIPT), wire=wire)

    @anyagent.hookimpl
    def anyagent_agents(self, register):
        for agent_id, wire in _IDS.items():
            register.profile(anyagent.AgentProfile(id=agent_id, name=agent_id, wire=wire, executables=()))


_builtins_of_docs = DocsRuntime.__init__


def _init(self, plugins=None, *, _builtins=None):
    if plugins is None and _builtins is None:
        Runtime.__init__(self, plugins=[], _builtins=[_DocsAgent(), _StandIns()])
    else:
        _builtins_of_docs(self, plugins, _builtins=_builtins)


DocsRuntime.__init__ = _init
"""


def _blocks() -> list[tuple[str, str, str]]:
    found = []
    for readme in READMES:
        for index, match in enumerate(BLOCK.finditer(readme.read_text(encoding="utf-8")), 1):
            found.append((f"{readme.parent.name}#{index}", match["agent"] or "text", match["code"]))
    return found


BLOCKS = _blocks()


@pytest.mark.skipif(not BLOCKS, reason="the package READMEs are not beside this package (installed alone)")
@pytest.mark.parametrize(("variant", "code"), [(v, c) for _, v, c in BLOCKS], ids=[name for name, _, _ in BLOCKS])
def test_package_readme_block_runs(tmp_path: Path, variant: str, code: str) -> None:
    if variant == "excerpt":
        import ast

        tree = compile(code, "<excerpt>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
        code = ast.unparse(ast.Module(body=imports, type_ignores=[]))
    run_block(tmp_path, PREAMBLE.format(variant=variant) + STAND_INS + "\n" + code)


def test_every_package_readme_has_runnable_code() -> None:
    named = {name.split("#")[0] for name, variant, _ in BLOCKS if variant != "excerpt"}
    assert named == {readme.parent.name for readme in READMES}
    excerpts = [name for name, variant, _ in BLOCKS if variant == "excerpt"]
    assert all(name.startswith("anyagent-testkit#") for name in excerpts), excerpts  # adapters' READMEs run whole
