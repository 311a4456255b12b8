"""Discovery: find each profile's executable without launching an agent or touching the network.

Per profile, in this order, the first hit wins:

1. the env override ``ANYAGENT_<ID>_BIN`` (an executable file; anything else is a warning and is skipped);
2. ``PATH``;
3. the login-shell ``PATH`` (GUI apps often miss the user's PATH), captured once per process in the
   background by ``LoginShellPath`` (never on Windows; off with ``ANYAGENT_NO_LOGIN_SHELL=1``);
4. known install dirs: the npm global prefix, ``~/.local/bin``, Homebrew, node version managers;
5. the profile's own ``extra_dirs`` for ``"any"`` and the current OS.

A profile's ``upgrade`` (a richer runtime of the same agent, with its own wire) wins when found; otherwise
the base CLI is returned carrying ``upgrade=MissingAgent(...)``. Profiles without executables are
in-process agents (the mock) and are always installed. Per-location problems become diagnostics; a scan
never fails. The OS rules are small pure functions taking an ``os_key`` (``"linux"``, ``"darwin"``,
``"windows"``) so they can be exercised on any OS.
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import re
import secrets
import selectors
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType

import anyio
import attrs

from .installation import AgentInstallation, AgentProfile, DiscoveryReport, InstallationSource, MissingAgent
from .types import DiagnosticInfo, DiagnosticLevel

__all__ = [
    "IN_PROCESS",
    "LOGIN_SHELL_TIMEOUT",
    "WINDOWS_SUFFIXES",
    "Discovery",
    "LoginShellPath",
    "candidate_names",
    "dedup_key",
    "expand_dir",
    "find_executable",
    "home_dir",
    "is_executable_mode",
    "known_dirs",
    "newest_first",
    "os_key",
    "parse_marked_path",
    "npmrc_prefix_line",
    "parse_npmrc_prefix",
    "split_path_var",
]

IN_PROCESS = Path("<in-process>")
LOGIN_SHELL_TIMEOUT = 5.0
NO_LOGIN_SHELL_ENV = "ANYAGENT_NO_LOGIN_SHELL"
WINDOWS_SUFFIXES = (".exe", ".cmd", ".bat")

_MAX_SHELL_OUTPUT = 1 << 20  # bytes of login-shell stdout kept; the rest is drained and dropped
_MAX_NPMRC = 1 << 20  # bytes of ~/.npmrc scanned for its prefix line
_NPMRC_LINE = 4096  # longest .npmrc line read; a longer one is skipped unread
_TRUE = frozenset({"1", "true", "yes", "on"})
_SEPARATORS = (os.sep, os.altsep) if os.altsep else (os.sep,)

_Dir = tuple[str, str, InstallationSource]  # (dir as shown, dedup key, where it came from)


# ---------------------------------------------------------------------------------------------
# OS rules (pure)


def os_key(platform: str | None = None) -> str:
    """``"windows"``, ``"darwin"`` or ``"linux"`` (any other POSIX) for ``platform`` (default ``sys.platform``)."""
    platform = sys.platform if platform is None else platform
    if platform.startswith("win"):
        return "windows"
    return "darwin" if platform == "darwin" else "linux"


def _pathmod(os_name: str) -> ModuleType:
    return ntpath if os_name == "windows" else posixpath


def _is_absolute(entry: str, os_name: str) -> bool:
    if os_name == "windows":
        return bool(ntpath.splitdrive(entry)[0]) or entry.startswith(("\\", "/"))
    return entry.startswith("/")


def split_path_var(value: str, os_name: str) -> list[str]:
    """A ``PATH`` value -> its absolute directory entries, in order.

    Windows separates with ``;`` and may quote entries; POSIX separates with ``:``. Empty and relative
    entries (which would mean "the current directory") are dropped: discovery never searches the cwd.
    """
    entries: list[str] = []
    for raw in value.split(";" if os_name == "windows" else ":"):
        entry = raw.strip().strip('"') if os_name == "windows" else raw
        if entry and _is_absolute(entry, os_name):
            entries.append(entry)
    return entries


def dedup_key(directory: str, os_name: str) -> str:
    """The identity of ``directory`` for deduplication (normalized; case-folded on Windows)."""
    if os_name == "windows":
        return ntpath.normcase(ntpath.normpath(directory))
    return posixpath.normpath(directory)


def candidate_names(name: str, os_name: str) -> tuple[str, ...]:
    """The file names that may hold executable ``name``.

    POSIX: the name itself. Windows: ``name.exe``, ``name.cmd``, ``name.bat`` in that order, never the bare
    name (npm puts an unspawnable bash shim there beside the ``.cmd``), unless ``name`` already has one of
    those suffixes.
    """
    if os_name != "windows":
        return (name,)
    if name.lower().endswith(WINDOWS_SUFFIXES):
        return (name,)
    return tuple(name + suffix for suffix in WINDOWS_SUFFIXES)


def is_executable_mode(mode: int, os_name: str) -> bool:
    """Whether a file with ``st_mode`` ``mode`` can be launched: a regular file, with an exec bit on POSIX."""
    if not stat.S_ISREG(mode):
        return False
    return os_name == "windows" or bool(mode & 0o111)


def find_executable(directory: str, candidates: Sequence[str], os_name: str) -> str | None:
    """The first of ``candidates`` (file names, see ``candidate_names``) in ``directory`` that is executable."""
    prefix = directory if directory.endswith(_SEPARATORS) else directory + os.sep
    for candidate in candidates:
        path = prefix + candidate
        try:
            mode = os.stat(path).st_mode
        except (OSError, ValueError):
            continue
        if is_executable_mode(mode, os_name):
            return path
    return None


def home_dir(environ: Mapping[str, str], os_name: str) -> str | None:
    """The user's home: ``USERPROFILE`` (or ``HOMEDRIVE``+``HOMEPATH``) on Windows, ``HOME`` (or the
    password database) on POSIX; None when unknown."""
    if os_name == "windows":
        if environ.get("USERPROFILE"):
            return environ["USERPROFILE"]
        drive, rest = environ.get("HOMEDRIVE", ""), environ.get("HOMEPATH", "")
        return drive + rest if drive and rest else None
    if environ.get("HOME"):
        return environ["HOME"]
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_dir or None
    except (ImportError, KeyError, OSError):
        return None


_WINDOWS_VAR = re.compile(r"%([^%]+)%")


def expand_dir(entry: str, home: str | None, environ: Mapping[str, str], os_name: str) -> str | None:
    """A catalog dir -> an absolute path, or None when it cannot be resolved.

    ``~`` is the home dir; on Windows ``%VAR%`` is an environment variable (undefined -> None). Components
    are folded one by one with the OS separator, so ``~/.local/bin`` never mixes ``/`` and ``\\``.
    """
    if os_name == "windows":
        unresolved = [name for name in _WINDOWS_VAR.findall(entry) if not environ.get(name)]
        if unresolved:
            return None
        entry = _WINDOWS_VAR.sub(lambda m: environ[m.group(1)], entry)
    mod = _pathmod(os_name)
    parts = re.split(r"[\\/]" if os_name == "windows" else "/", entry)
    if parts and parts[0] == "~":
        if not home:
            return None
        result: str = mod.join(home, *[p for p in parts[1:] if p])
    else:
        result = mod.normpath(entry)
    return result if _is_absolute(result, os_name) else None


def _version_key(name: str) -> tuple[bool, tuple[int, ...], str]:
    numbers = tuple(int(n) for n in re.findall(r"\d+", name))
    return (bool(numbers), numbers, name)


def newest_first(names: Iterable[str]) -> list[str]:
    """Version dir names sorted newest first by numeric key (``v20.10.0`` before ``v20.9.1``); names
    without digits go last."""
    return sorted(names, key=_version_key, reverse=True)


def npmrc_prefix_line(line: str) -> str | None:
    """The value of one ``.npmrc`` line when it sets ``prefix``, else None (a comment, another key)."""
    line = line.strip()
    if not line.startswith("prefix") or line[0] in ";#":
        return None
    key, sep, value = line.partition("=")
    if not sep or key.strip() != "prefix":
        return None
    return value.strip().strip("\"'") or None


def parse_npmrc_prefix(text: str) -> str | None:
    """The ``prefix`` set in an ``.npmrc`` text (the last one wins), or None."""
    prefix: str | None = None
    for line in text.splitlines():
        if line.strip().startswith("prefix"):
            prefix = npmrc_prefix_line(line) or prefix
    return prefix


def parse_marked_path(output: str, marker: str) -> str | None:
    """The text between the first complete pair of ``marker`` s in ``output`` (noise around it ignored).

    A pair enclosing the unexpanded ``$PATH`` (a shell that echoes its command) or a newline is skipped.
    """
    parts = output.split(marker)
    for index in range(1, len(parts) - 1, 2):
        segment = parts[index]
        if "$PATH" not in segment and "\n" not in segment:
            return segment.rstrip("\r")
    return None


# ---------------------------------------------------------------------------------------------
# Known install dirs


@attrs.define
class _Problems:
    """Diagnostics collected during one scan (each directory reported once)."""

    items: list[DiagnosticInfo] = attrs.Factory(list)

    def add(self, message: str, code: str, raw: dict[str, str] | None = None) -> None:
        self.items.append(DiagnosticInfo(message, DiagnosticLevel.WARNING, code, raw))


def _subdirs_newest_first(root: str, problems: _Problems) -> list[str]:
    try:
        with os.scandir(root) as entries:
            names = [entry.name for entry in entries if entry.is_dir()]
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        problems.add(f"cannot list {root}: {exc.strerror}", "unreadable_dir", {"dir": root})
        return []
    return newest_first(names)


def _read_npmrc(home: str, problems: _Problems) -> str | None:
    """The ``prefix`` of ``~/.npmrc``. The file can hold registry tokens, so it is read one bounded
    line at a time and only a ``prefix`` line is decoded and kept; no other line outlives its read,
    and nothing of the file's content ever reaches a diagnostic."""
    path = os.path.join(home, ".npmrc")
    prefix: str | None = None
    try:
        with open(path, "rb", buffering=_NPMRC_LINE) as handle:
            remaining = _MAX_NPMRC
            while remaining > 0:
                limit = min(_NPMRC_LINE, remaining)
                line = handle.readline(limit)
                if not line:
                    break
                remaining -= len(line)
                if len(line) == limit and not line.endswith(b"\n"):
                    # longer than any prefix line: skip the rest of it unkept
                    while remaining > 0:
                        rest = handle.readline(min(_NPMRC_LINE, remaining))
                        remaining -= len(rest)
                        if not rest or rest.endswith(b"\n"):
                            break
                    continue
                if line.lstrip().startswith(b"prefix"):
                    prefix = npmrc_prefix_line(line.decode("utf-8", "replace")) or prefix
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        problems.add(f"cannot read {path}: {exc.strerror}", "unreadable_file", {"file": path})
        return None
    return prefix


def _npm_dirs(home: str | None, environ: Mapping[str, str], os_name: str, problems: _Problems) -> list[str]:
    """The npm global bin dirs: ``NPM_CONFIG_PREFIX``, ``~/.npmrc`` ``prefix=``, then the usual default."""
    prefixes = [environ.get("NPM_CONFIG_PREFIX") or environ.get("npm_config_prefix")]
    if home:
        prefixes.append(_read_npmrc(home, problems))
    dirs: list[str] = []
    for prefix in prefixes:
        if prefix:
            prefix = re.sub(r"\$\{([^}]+)\}", lambda m: environ.get(m.group(1), ""), prefix)
            expanded = expand_dir(prefix, home, environ, os_name)
            if expanded:
                dirs.append(expanded if os_name == "windows" else posixpath.join(expanded, "bin"))
    dirs.append("%APPDATA%\\npm" if os_name == "windows" else "~/.npm-global/bin")
    return dirs


def _version_manager_dirs(home: str | None, environ: Mapping[str, str], os_name: str, problems: _Problems) -> list[str]:
    """nvm, fnm (newest node first), volta, asdf, bun and pnpm bin dirs (unexpanded where ``~``-relative)."""
    if os_name == "windows":
        return ["~/.bun/bin", "%LOCALAPPDATA%\\pnpm"]
    nvm = expand_dir(environ.get("NVM_DIR") or "~/.nvm", home, environ, os_name)
    fnm_roots = [environ.get("FNM_DIR", ""), "~/.local/share/fnm"]
    if os_name == "darwin":
        fnm_roots.insert(1, "~/Library/Application Support/fnm")
    dirs: list[str] = []
    if nvm:
        root = posixpath.join(nvm, "versions", "node")
        dirs += [posixpath.join(root, v, "bin") for v in _subdirs_newest_first(root, problems)]
    for fnm in filter(None, (expand_dir(r, home, environ, os_name) for r in fnm_roots if r)):
        root = posixpath.join(fnm, "node-versions")
        dirs += [posixpath.join(root, v, "installation", "bin") for v in _subdirs_newest_first(root, problems)]
    dirs += [
        (environ.get("VOLTA_HOME") or "~/.volta") + "/bin",
        (environ.get("ASDF_DATA_DIR") or "~/.asdf") + "/shims",
        (environ.get("BUN_INSTALL") or "~/.bun") + "/bin",
        environ.get("PNPM_HOME") or ("~/Library/pnpm" if os_name == "darwin" else "~/.local/share/pnpm"),
    ]
    return dirs


_HOMEBREW = {
    "darwin": ("/opt/homebrew/bin", "/usr/local/bin"),
    "linux": ("/home/linuxbrew/.linuxbrew/bin", "/usr/local/bin"),
    "windows": (),
}


def known_dirs(
    home: str | None, environ: Mapping[str, str], os_name: str, problems: _Problems | None = None
) -> list[tuple[str, InstallationSource]]:
    """Step 4's dirs, in search order, expanded and tagged (not deduplicated): npm global prefix,
    ``~/.local/bin``, Homebrew, then version managers. Lists version dirs on disk; runs nothing."""
    problems = problems if problems is not None else _Problems()
    known = InstallationSource.KNOWN_LOCATION
    tagged = [(d, known) for d in _npm_dirs(home, environ, os_name, problems)]
    tagged.append(("~/.local/bin", known))
    tagged += [(d, known) for d in _HOMEBREW[os_name]]
    managed = InstallationSource.VERSION_MANAGER
    tagged += [(d, managed) for d in _version_manager_dirs(home, environ, os_name, problems)]
    result: list[tuple[str, InstallationSource]] = []
    for entry, source in tagged:
        expanded = expand_dir(entry, home, environ, os_name)
        if expanded:
            result.append((expanded, source))
    return result


# ---------------------------------------------------------------------------------------------
# Login-shell PATH


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in _TRUE


def _user_shell(environ: Mapping[str, str]) -> str | None:
    shell = environ.get("SHELL", "")
    if shell and os.path.isabs(shell):
        return shell
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_shell or None
    except (ImportError, KeyError, OSError):
        return None


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the shell's whole process group (rc scripts may have started children); reaping follows."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        try:
            process.kill()
        except OSError:
            pass


class _ShellRun:
    """One ``shell -lic|-lc 'echo <marker>"$PATH"<marker>'`` run, read until the marker pair or the deadline."""

    def __init__(self, argv: list[str], marker: str, deadline: float, environ: Mapping[str, str]) -> None:
        self.argv, self.marker, self.deadline, self.environ = argv, marker, deadline, environ
        self.timed_out = False

    def run(self, publish: Callable[[str], None]) -> str | None:
        """Run the shell: the PATH it printed (handed to ``publish`` at once), or None. Always reaps."""
        try:
            process = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=dict(self.environ),
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            raise _ShellFailed(f"cannot start {self.argv[0]}: {exc.strerror or exc}") from None
        assert process.stdout is not None
        try:
            value = self._read(process.stdout.fileno())
            if value is not None:
                publish(value)
        finally:
            self._reap(process)
            process.stdout.close()
        return value

    def _read(self, fd: int) -> str | None:
        buffer = bytearray()
        marker = os.fsencode(self.marker)
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while True:
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    self.timed_out = True
                    return None
                if not selector.select(remaining):
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    return parse_marked_path(os.fsdecode(bytes(buffer)), self.marker)
                start = max(0, len(buffer) - len(marker))
                if len(buffer) < _MAX_SHELL_OUTPUT:
                    buffer += chunk[: _MAX_SHELL_OUTPUT - len(buffer)]
                if buffer.find(marker, start) != -1:
                    value = parse_marked_path(os.fsdecode(bytes(buffer)), self.marker)
                    if value is not None:
                        return value

    def _reap(self, process: subprocess.Popen[bytes]) -> None:
        try:
            process.wait(timeout=max(0.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.timed_out = True
            _kill_group(process)
            process.wait()


class _ShellFailed(Exception):
    """The login shell could not be run (its message goes into the diagnostic)."""


class LoginShellPath:
    """The user's login-shell ``PATH`` entries, captured once in a background thread and cached.

    ``start(environ)`` (idempotent, returns at once) runs ``$SHELL -lic 'echo <m>"$PATH"<m>'`` and, when
    that prints no marker, ``$SHELL -lc ...``; stdin is null, stderr discarded, both attempts share a hard
    bound of ``timeout`` seconds, after which the shell's process group is killed and reaped.
    ``result()`` -> (dirs, diagnostic or None), waiting at most until that bound.
    """

    def __init__(self, timeout: float = LOGIN_SHELL_TIMEOUT) -> None:
        self.timeout = timeout
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._started_at: float | None = None
        self._dirs: tuple[str, ...] = ()
        self._problem: DiagnosticInfo | None = None
        self._thread: threading.Thread | None = None

    @property
    def started(self) -> bool:
        """Whether a capture was started (it is never started twice)."""
        return self._started_at is not None

    def start(self, environ: Mapping[str, str]) -> None:
        """Begin the capture in a daemon thread with ``environ`` as the shell's environment."""
        with self._lock:
            if self._started_at is not None:
                return
            self._started_at = time.monotonic()
            self._thread = threading.Thread(
                target=self._capture, args=(dict(environ),), name="anyagent-login-shell-path", daemon=True
            )
            self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the capture thread to finish (its shell reaped); for tests and orderly shutdown."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def result(self) -> tuple[tuple[str, ...], DiagnosticInfo | None]:
        """The captured dirs and the capture's problem, waiting only until the bound; ((), None) if never started."""
        started = self._started_at
        if started is None:
            return (), None
        if not self._done.wait(max(0.0, started + self.timeout - time.monotonic())):
            message = f"the login shell did not print its PATH within {self.timeout:g} s; its directories were skipped"
            return (), DiagnosticInfo(message, DiagnosticLevel.WARNING, "login_shell_path")
        return self._dirs, self._problem

    def _publish(self, value: str) -> None:
        self._finish(tuple(split_path_var(value, "linux")), None)

    def _finish(self, dirs: tuple[str, ...], problem: DiagnosticInfo | None) -> None:
        with self._lock:
            if self._done.is_set():
                return
            self._dirs, self._problem = dirs, problem
            self._done.set()

    def _capture(self, environ: dict[str, str]) -> None:
        assert self._started_at is not None
        deadline = self._started_at + self.timeout
        try:
            problem = self._attempts(environ, deadline)
        except Exception as exc:  # the capture must never take the process down
            problem = f"unexpected error: {exc!r}"
        if problem is not None:
            self._finish(
                (),
                DiagnosticInfo(f"login shell PATH unavailable: {problem}", DiagnosticLevel.WARNING, "login_shell_path"),
            )

    def _attempts(self, environ: dict[str, str], deadline: float) -> str | None:
        """Run ``-lic`` then ``-lc``; None on success, else why both failed."""
        shell = _user_shell(environ)
        if shell is None:
            return "no login shell ($SHELL is unset)"
        marker = f"__ANYAGENT_PATH_{secrets.token_hex(8)}__"
        command = f'echo {marker}"$PATH"{marker}'
        for flags in ("-lic", "-lc"):
            run = _ShellRun([shell, flags, command], marker, deadline, environ)
            try:
                if run.run(self._publish) is not None:
                    return None
            except _ShellFailed as exc:
                return str(exc)
            if run.timed_out:
                return f"{shell} did not answer within {self.timeout:g} s"
        return f"{shell} printed no PATH"


_PROCESS_LOGIN_SHELL = LoginShellPath()


# ---------------------------------------------------------------------------------------------
# The scan


class _Scan:
    """One scan's state: the shared dirs (PATH, login-shell PATH, known dirs), a per-dir usability cache,
    and the diagnostics. Runs in a worker thread; touches only the filesystem."""

    def __init__(self, os_name: str, environ: Mapping[str, str], login_dirs: Sequence[str]) -> None:
        self.os = os_name
        self.environ = environ
        self.home = home_dir(environ, os_name)
        self.problems = _Problems()
        self._usable: dict[str, bool] = {}
        shared: list[tuple[str, InstallationSource]] = [
            (d, InstallationSource.PATH) for d in split_path_var(environ.get("PATH", ""), os_name)
        ]
        shared += [(d, InstallationSource.LOGIN_SHELL_PATH) for d in login_dirs]
        shared += known_dirs(self.home, environ, os_name, self.problems)
        self.shared: list[_Dir] = []
        self.shared_keys: set[str] = set()
        self._extend(self.shared, self.shared_keys, shared)

    def _extend(self, into: list[_Dir], keys: set[str], dirs: Iterable[tuple[str, InstallationSource]]) -> None:
        for directory, source in dirs:
            key = dedup_key(directory, self.os)
            if key not in keys:
                keys.add(key)
                into.append((directory, key, source))

    def dirs_for(self, profile: AgentProfile) -> list[_Dir]:
        """The shared dirs followed by ``profile``'s own extra dirs (expanded, deduplicated)."""
        extras = [
            expanded
            for os_name in ("any", self.os)
            for entry in profile.extra_dirs.get(os_name, ())
            if (expanded := expand_dir(entry, self.home, self.environ, self.os))
        ]
        if not extras:
            return self.shared
        dirs = list(self.shared)
        self._extend(dirs, set(self.shared_keys), ((d, InstallationSource.KNOWN_LOCATION) for d in extras))
        return dirs

    def usable(self, directory: str, key: str, source: InstallationSource) -> bool:
        """Whether ``directory`` exists and can be searched; unreadable ones are reported once."""
        known = self._usable.get(key)
        if known is None:
            known = self._usable[key] = self._check_dir(directory, source)
        return known

    def _check_dir(self, directory: str, source: InstallationSource) -> bool:
        raw = {"dir": directory, "source": source.value}
        try:
            mode = os.stat(directory).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return False
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.problems.add(f"cannot search {directory}: {reason}", "unreadable_dir", raw)
            return False
        if not stat.S_ISDIR(mode):
            return False
        if self.os != "windows" and not os.access(directory, os.X_OK):
            self.problems.add(f"cannot search {directory}: permission denied", "unreadable_dir", raw)
            return False
        return True

    def search(self, profile: AgentProfile) -> tuple[str | None, InstallationSource, list[str]]:
        """(executable path or None, where it was found, every dir checked up to the hit)."""
        candidates = [c for name in profile.executables if name for c in candidate_names(name, self.os)]
        searched: list[str] = []
        for directory, key, source in self.dirs_for(profile):
            searched.append(directory)
            if self.usable(directory, key, source):
                hit = find_executable(directory, candidates, self.os)
                if hit is not None:
                    return hit, source, searched
        return None, InstallationSource.PATH, searched

    def override(self, variable: str) -> str | None:
        """The executable the env var ``variable`` names, or None (a warning when it names no executable)."""
        value = self.environ.get(variable, "")
        if not value.strip():
            return None
        path = expand_dir(value.strip(), self.home, self.environ, self.os)
        if path is not None:
            directory, name = os.path.split(path)
            hit = find_executable(directory, candidate_names(name, self.os), self.os)
            if hit is not None:
                return hit
        message = f"{variable}={value} is not an executable file; searching elsewhere"
        self.problems.add(message, "env_override", {"variable": variable, "value": value})
        return None


def _named(path: str, executables: Iterable[str], os_name: str) -> bool:
    name = os.path.basename(path)
    return any(name in candidate_names(exe, os_name) or name == exe for exe in executables)


def _pins_upgrade(pinned: str, base: AgentProfile, upgrade: AgentProfile, os_name: str) -> bool:
    """Whether the base's env override names the upgrade's executable (and not the base CLI's)."""
    return _named(pinned, upgrade.executables, os_name) and not _named(pinned, base.executables, os_name)


class Discovery:
    """Finds installed agents from catalog profiles; never launches an agent, never touches the network.

    ``prewarm()`` starts the once-per-process login-shell ``PATH`` capture in the background; after it,
    ``scan`` runs no subprocess. ``platform`` (``"linux"``, ``"darwin"``, ``"windows"``) overrides the OS
    rules; ``login_shell`` replaces the process-wide capture (tests).
    """

    def __init__(self, *, platform: str | None = None, login_shell: LoginShellPath | None = None) -> None:
        self._os = os_key(platform)
        self._login_shell = login_shell if login_shell is not None else _PROCESS_LOGIN_SHELL

    def _login_shell_enabled(self, environ: Mapping[str, str]) -> bool:
        return self._os != "windows" and os.name == "posix" and not _truthy(environ.get(NO_LOGIN_SHELL_ENV))

    def prewarm(self) -> None:
        """Start the login-shell ``PATH`` capture in a background thread; returns immediately."""
        if self._login_shell_enabled(os.environ):
            self._login_shell.start(os.environ)

    async def scan(self, profiles: Iterable[AgentProfile]) -> DiscoveryReport:
        """Profiles -> report: installed agents and missing ones (in profile order), plus diagnostics.

        The filesystem work runs in a worker thread; if the login-shell capture is still running, it is
        waited for only until its bound.
        """
        profiles = tuple(profiles)
        environ = dict(os.environ)
        if not any(p.executables for p in profiles):
            return self._scan_sync(profiles, environ)
        return await anyio.to_thread.run_sync(self._scan_sync, profiles, environ, abandon_on_cancel=True)

    def _scan_sync(self, profiles: Sequence[AgentProfile], environ: Mapping[str, str]) -> DiscoveryReport:
        login_dirs: tuple[str, ...] = ()
        login_problem: DiagnosticInfo | None = None
        if any(p.executables for p in profiles) and self._login_shell_enabled(environ):
            self._login_shell.start(environ)
            login_dirs, login_problem = self._login_shell.result()
        scan = _Scan(self._os, environ, login_dirs)
        agents: list[AgentInstallation] = []
        missing: list[MissingAgent] = []
        for profile in profiles:
            found = self._find(profile, scan)
            if isinstance(found, AgentInstallation):
                agents.append(found)
            else:
                missing.append(found)
        diagnostics = ([login_problem] if login_problem else []) + scan.problems.items
        return DiscoveryReport(tuple(agents), tuple(missing), tuple(diagnostics))

    def _find(self, profile: AgentProfile, scan: _Scan) -> AgentInstallation | MissingAgent:
        """One profile -> its installation (upgrade preferred) or a MissingAgent listing every dir checked."""
        if not profile.executables:
            return _installation(profile, profile, IN_PROCESS, InstallationSource.PINNED)
        upgrade = profile.upgrade
        pinned = scan.override(profile.env_override)
        if pinned is not None:
            if upgrade is not None and _pins_upgrade(pinned, profile, upgrade, scan.os):
                return _installation(profile, upgrade, pinned, InstallationSource.ENV_OVERRIDE)
            upgrade_missing = self._missing_upgrade(profile, upgrade, scan) if upgrade is not None else None
            return _installation(profile, profile, pinned, InstallationSource.ENV_OVERRIDE, upgrade_missing)
        searched: list[str] = []
        upgrade_missing = None
        if upgrade is not None:
            found = self._locate(profile, upgrade, scan)
            if isinstance(found, AgentInstallation):
                return found
            upgrade_missing, searched = found, list(found.searched)
        path, source, base_searched = scan.search(profile)
        if path is not None:
            return _installation(profile, profile, path, source, upgrade_missing)
        seen = set(searched)
        searched += [d for d in base_searched if d not in seen]
        return MissingAgent(profile.id, profile.name, profile.install_hint, tuple(searched))

    def _locate(self, base: AgentProfile, upgrade: AgentProfile, scan: _Scan) -> AgentInstallation | MissingAgent:
        """The upgrade runtime as ``base``'s installation, or the MissingAgent naming it."""
        if not upgrade.executables:
            return _installation(base, upgrade, IN_PROCESS, InstallationSource.PINNED)
        if upgrade.env_override != base.env_override:
            pinned = scan.override(upgrade.env_override)
            if pinned is not None:
                return _installation(base, upgrade, pinned, InstallationSource.ENV_OVERRIDE)
        path, source, searched = scan.search(upgrade)
        if path is not None:
            return _installation(base, upgrade, path, source)
        return MissingAgent(upgrade.id, upgrade.name, upgrade.install_hint, tuple(searched))

    def _missing_upgrade(self, base: AgentProfile, upgrade: AgentProfile, scan: _Scan) -> MissingAgent | None:
        found = self._locate(base, upgrade, scan)
        return found if isinstance(found, MissingAgent) else None


def _installation(
    base: AgentProfile,
    runtime: AgentProfile,
    path: str | Path,
    source: InstallationSource,
    upgrade: MissingAgent | None = None,
) -> AgentInstallation:
    """``base``'s installation launched the way ``runtime`` (``base`` itself or its upgrade) says."""
    return AgentInstallation(
        id=base.id,
        name=base.name,
        executable_path=Path(path),
        wire=runtime.wire,
        args=runtime.args,
        source=source,
        upgrade=upgrade,
    )
