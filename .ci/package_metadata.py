"""Give every package under ``packages/`` what a package index shows of it: the repository's
LICENSE (copied beside its ``pyproject.toml``, so every sdist and wheel carries it),
``license-files``, authors, project URLs, the Python-version classifiers, the core pinned to its 0.x
series, one anyio floor, and the version written once (``__version__`` in the source, read by hatch).

Idempotent; run it after adding a package: ``python .ci/package_metadata.py [PACKAGE_DIR ...]``.
``tests/test_packaging.py`` (core) checks the sources, ``nox -s dist`` the built artifacts.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPOSITORY = "https://github.com/spotta85/anyagent-python"  # the one place to change it (and the READMEs)
AUTHORS = 'authors = [{ name = "The anyagent for Python authors" }]'
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
CORE_PIN = ">=0.1,<0.2"  # every package on the core's 0.x series
ANYIO_FLOOR = ">=4.7"  # one anyio floor everywhere
CLASSIFIERS = [
    "Development Status :: 3 - Alpha",
    "Intended Audience :: Developers",
    "Operating System :: POSIX",
    "Operating System :: MacOS",
    "Operating System :: Microsoft :: Windows",
    "Programming Language :: Python :: 3",
    "Programming Language :: Python :: 3 :: Only",
    *(f"Programming Language :: Python :: {version}" for version in PYTHONS),
    "Framework :: AnyIO",
    "Framework :: Trio",
    "Topic :: Software Development",
    "Typing :: Typed",
]


def apply(package: Path) -> bool:
    """Bring ``package``'s metadata up to the standard; True when something changed."""
    path = package / "pyproject.toml"
    text = original = path.read_text(encoding="utf-8")
    name = package.name
    text = re.sub(r'"hatchling>=[\d.]+"', '"hatchling>=1.27"', text)
    if "license-files" not in text:
        text = re.sub(r'(?m)^license = "MIT"\n', 'license = "MIT"\nlicense-files = ["LICENSE"]\n', text, count=1)
    if not re.search(r"(?m)^authors = ", text):
        text = re.sub(r"(?m)^(license-files = .*\n)", lambda m: m[1] + AUTHORS + "\n", text, count=1)
    found = re.search(r"(?ms)^classifiers = \[\n(.*?)^\]\n", text)
    existing = re.findall(r'"([^"]+)"', found[1]) if found else []
    wanted = [*CLASSIFIERS, *(c for c in existing if c not in CLASSIFIERS)]
    block = "classifiers = [\n" + "".join(f'    "{c}",\n' for c in wanted) + "]\n"
    if found:
        text = text[: found.start()] + block + text[found.end() :]
    else:
        text = re.sub(r"(?m)^(dependencies = .*?\n(?:    .*\n)*(?:\]\n)?)", lambda m: m[1] + block, text, count=1)
    if "[project.urls]" not in text:
        urls = (
            "[project.urls]\n"
            f'Homepage = "{REPOSITORY}"\n'
            f'Documentation = "{REPOSITORY}/tree/main/packages/{name}#readme"\n'
            f'Source = "{REPOSITORY}/tree/main/packages/{name}"\n'
            f'Issues = "{REPOSITORY}/issues"\n'
            f'Changelog = "{REPOSITORY}/blob/main/packages/{name}/CHANGELOG.md"\n\n'
        )
        anchor = text.find("[tool.")
        text = text[:anchor] + urls + text[anchor:] if anchor != -1 else text.rstrip("\n") + "\n\n" + urls
    # the 0.x series of the core, one anyio floor, and the version written once, in the source
    if name != "anyagent-core":
        text = re.sub(r'"anyagent-core(?:[<>=!~][^"\[]*)?"', f'"anyagent-core{CORE_PIN}"', text)
    text = re.sub(r'"anyio(\[trio\])?>=[\d.]+"', lambda m: f'"anyio{m[1] or ""}{ANYIO_FLOOR}"', text)
    written = re.search(r'(?m)^version = "([^"]+)"\n', text)
    module = re.search(r'packages = \["(src/[A-Za-z0-9_]+)"\]', text)
    if written and module:
        init = package / module[1] / "__init__.py"
        source = init.read_text(encoding="utf-8") if init.exists() else ""
        if not re.search(r'(?m)^__version__ = "', source):
            init.parent.mkdir(parents=True, exist_ok=True)
            init.write_text(source.rstrip("\n") + ("\n\n" if source else "") + f'__version__ = "{written[1]}"\n')
        text = text.replace(written[0], 'dynamic = ["version"]\n', 1)
        if "[tool.hatch.version]" not in text:
            text = text.rstrip("\n") + f'\n\n[tool.hatch.version]\npath = "{module[1]}/__init__.py"\n'
    changed = text != original
    if changed:
        path.write_text(text, encoding="utf-8")
    license_copy = package / "LICENSE"
    if not license_copy.exists() or license_copy.read_bytes() != (ROOT / "LICENSE").read_bytes():
        shutil.copyfile(ROOT / "LICENSE", license_copy)
        changed = True
    return changed


def main(argv: list[str]) -> int:
    packages = [Path(a) for a in argv] or sorted(
        p for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists()
    )
    for package in packages:
        if apply(package):
            print(f"updated {package.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
