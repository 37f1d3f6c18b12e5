"""The files of the disk cache (`s2sgrad.disk_cache` decides what goes in them): where they
live, whether that place can be trusted, atomic writes, the size bound, and what
``s2sgrad cache info|clear`` show and remove.

Location: ``$S2SGRAD_CACHE_DIR`` if set (``off``, ``0`` or empty turns the cache off), else
``$XDG_CACHE_HOME/s2sgrad`` or ``~/.cache/s2sgrad``. Layout: ``DIR/XX/KEY.json`` (a
transform's description) and ``DIR/XX/KEY-KINDS.json`` (one specialization), ``XX`` the key's
first two hex digits. Eviction and `clear` remove only files of that form (and writers'
temporary files), never anything else a mistyped ``S2SGRAD_CACHE_DIR`` may hold.

Trust. Entries are source text that is compiled and run, so only the user may be able to write
them: the directory is created with mode 0700 (its folders too), and an existing one that is
not a directory, not owned by the current user, or writable by its group or others is refused:
a `UserWarning` (once per directory and process) and no disk cache at all, as if it were off.
Entries are then as trustworthy as the user's own files; a malformed one is a miss
(`disk_cache`).

Size: at most ``$S2SGRAD_CACHE_MAX_SIZE`` bytes (a number, with an optional suffix ``k``,
``M`` or ``G`` for KiB, MiB, GiB; default 100M). A hit refreshes its files' modification times,
so the least recently used entries are the ones evicted, down to 75% of the bound. Measuring the
whole directory on every write would cost a scan per transform (a second for a full 100M
cache); instead, after a write, the folder written to is measured: keys are hashes, so each of
the 256 folders holds about 1/256 of the cache, and only when 256 times that folder's size
exceeds the bound may the whole directory be scanned. That estimate is noisy (a folder holds a
few hundred entries), so a process that has scanned remembers the total it left and counts what
it wrote since: it scans again only when that sum could exceed the bound, or when its memory is
older than `_RESCAN_SECONDS` (other processes write too). Evicting to 75% rather than just
under the bound means a scan is paid for by a quarter of the cache's worth of writes.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
import time
import warnings
from typing import NamedTuple

ENVIRONMENT_VARIABLE = "S2SGRAD_CACHE_DIR"
SIZE_VARIABLE = "S2SGRAD_CACHE_MAX_SIZE"
DEFAULT_MAX_BYTES = 100 * 2**20
_OFF = ("", "0", "off", "none", "false")
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}
_HEX = frozenset("0123456789abcdef")  # (no regular expressions compiled on the hit path)
_STALE_SECONDS = 3600  # a temporary file this old belongs to a writer that died
_LOW_WATERMARK = 0.75  # eviction leaves the cache at this share of its bound
_RESCAN_SECONDS = 600
_warned: set[str] = set()


def directory() -> str | None:
    """Where entries live, or None when the cache is turned off (nothing is checked here)."""
    configured = os.environ.get(ENVIRONMENT_VARIABLE)
    if configured is not None:
        return None if configured.strip().lower() in _OFF else configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "s2sgrad")


_MISSING = "does not exist"


def refusal(path: str) -> str | None:
    """Why `path` cannot hold the cache (`_MISSING` if it does not exist), or None if it can."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return _MISSING
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    if not hasattr(os, "geteuid"):  # Windows: no owner or mode bits to check
        return None
    if info.st_uid != os.geteuid():
        return f"is owned by user id {info.st_uid}, not by you (user id {os.geteuid()})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"is writable by its group or others (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def usable_directory(create: bool) -> str | None:
    """The cache directory if it is on and may be trusted (created 0700 first if `create`),
    else None; a refused directory warns once."""
    root = directory()
    if root is None:
        return None
    problem = refusal(root)  # (one stat: this is on the hit path)
    if problem == _MISSING and create:
        try:
            os.makedirs(root, mode=0o700)
        except FileExistsError:
            pass  # another process made it: checked below like any existing directory
        except OSError:
            return None  # a read-only disk: the cache is an optimization, never an error
        problem = refusal(root)
    if problem is None:
        return root
    if problem == _MISSING:
        return None
    _warn_once(f"s2sgrad: not using the disk cache: {_explain(root, problem)}")
    return None


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, stacklevel=3)


def _explain(root: str, problem: str) -> str:
    instead = f"set {ENVIRONMENT_VARIABLE} to a directory of your own, or to off"
    if "owned by" in problem:
        return f"{root} {problem}: code planted there would run as you ({instead})"
    if "writable" in problem:
        risk = "another user could plant code that would run as you"
        return f"{root} {problem}: {risk} (chmod 700 it, or {instead})"
    return f"{root} {problem} ({instead})"


def max_bytes() -> int:
    """The size bound, from ``$S2SGRAD_CACHE_MAX_SIZE`` (a malformed value warns)."""
    text = os.environ.get(SIZE_VARIABLE, "").strip()
    if not text:
        return DEFAULT_MAX_BYTES
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmg]?)i?b?", text.lower())
    if match is None:
        _warn_once(
            f"s2sgrad: {SIZE_VARIABLE}={text!r} is not a size such as 500M or 2G; "
            f"using {DEFAULT_MAX_BYTES // 2**20}M"
        )
        return DEFAULT_MAX_BYTES
    return int(float(match.group(1)) * _UNITS[match.group(2)])


# -- reading and writing entries -----------------------------------------------------------------


def _hex(text: str, length: int) -> bool:
    return len(text) == length and set(text) <= _HEX


def _is_entry(name: str) -> bool:
    """``KEY.json`` or ``KEY-KINDS.json``, as `entry_path` names them."""
    key, dash, kinds = name.removesuffix(".json").partition("-")
    return name.endswith(".json") and _hex(key, 64) and (not dash or _hex(kinds, 16))


def entry_path(root: str, key: str, suffix: str) -> str:
    return os.path.join(root, key[:2], f"{key}{suffix}.json")


def read_json(path: str):
    """The JSON in `path`, or None when it is missing or not JSON at all."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError, RecursionError, MemoryError):
        return None


def touch(path: str) -> None:
    """Mark an entry used (eviction removes the least recently used)."""
    try:
        os.utime(path)
    except OSError:
        pass


def write_json(root: str, path: str, data: dict) -> None:
    """Write `data` to `path` atomically (a temporary file moved into place), then keep the
    cache within its bound. A read-only or full disk is silently skipped."""
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=folder)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(data, out)
            os.replace(temporary, path)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise
        _scans.written += os.path.getsize(path)
        limit = max_bytes()
        if sum(size for _, size, _ in _folder_entries(folder)) * 256 > limit and _scans.due(
            root, limit
        ):
            evict(root, limit)
    except OSError:
        return


class _Scans:
    """What this process knows of the cache's size since it last scanned it (module docstring)."""

    def __init__(self):
        self.root = None
        self.total = 0  # bytes the cache held after the last scan
        self.written = 0  # bytes this process wrote since
        self.at = 0.0

    def due(self, root: str, limit: int) -> bool:
        return (
            root != self.root
            or self.total + self.written > limit
            or time.monotonic() - self.at > _RESCAN_SECONDS
        )

    def scanned(self, root: str, total: int) -> None:
        self.root, self.total, self.written, self.at = root, total, 0, time.monotonic()


_scans = _Scans()


# -- the size bound, info and clear --------------------------------------------------------------


def _folder_entries(folder: str) -> list[tuple[str, int, int]]:
    """(path, size, modification time) of the entries in one folder, and of temporary files
    left there by writers that died."""
    found = []
    stale = time.time() - _STALE_SECONDS
    with os.scandir(folder) as listing:
        for item in listing:
            if not item.is_file(follow_symlinks=False):
                continue
            entry = _is_entry(item.name)
            if not entry and not (item.name.startswith(".tmp-") and item.name.endswith(".json")):
                continue
            info = item.stat(follow_symlinks=False)
            if not entry and info.st_mtime > stale:
                continue  # another process is writing it
            found.append((item.path, info.st_size, info.st_mtime_ns))
    return found


def _entries(root: str) -> list[tuple[str, int, int]]:
    found = []
    with os.scandir(root) as listing:
        for item in listing:
            if _hex(item.name, 2) and item.is_dir(follow_symlinks=False):
                found += _folder_entries(item.path)
    return found


def evict(root: str, limit: int) -> None:
    """Remove the least recently used entries until the cache holds at most `_LOW_WATERMARK`
    of `limit` (nothing when it is within `limit`)."""
    entries = sorted(_entries(root), key=lambda entry: entry[2])
    total = sum(size for _, size, _ in entries)
    if total > limit:
        for path, size, _ in entries:
            if total <= limit * _LOW_WATERMARK:
                break
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass  # another process evicted it
            total -= size
    _scans.scanned(root, total)


class CacheInfo(NamedTuple):
    directory: str | None  # None: the cache is turned off
    entries: int
    bytes: int
    max_bytes: int


class CacheError(Exception):
    """The cache directory cannot be used (``s2sgrad cache`` exits 2 with this message)."""


def _checked_root() -> str | None:
    root = directory()
    problem = None if root is None else refusal(root)
    if problem not in (None, _MISSING):
        raise CacheError(_explain(root, problem))
    return root


def info() -> CacheInfo:
    """What the cache holds.

    Raises:
        CacheError: the directory is refused (see the module docstring).
    """
    root = _checked_root()
    if root is None or not os.path.exists(root):
        return CacheInfo(root, 0, 0, max_bytes())
    entries = _entries(root)
    return CacheInfo(root, len(entries), sum(size for _, size, _ in entries), max_bytes())


def clear() -> int:
    """Remove every entry (and the folders left empty); the number of entries removed.

    Raises:
        CacheError: the directory is refused, or an entry cannot be removed.
    """
    root = _checked_root()
    if root is None or not os.path.exists(root):
        return 0
    removed = 0
    for path, _, _ in _entries(root):
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue
        except OSError as error:
            raise CacheError(f"{path}: cannot be removed ({error.strerror})") from None
        removed += 1
    with os.scandir(root) as listing:
        for item in listing:
            if _hex(item.name, 2) and item.is_dir(follow_symlinks=False):
                try:
                    os.rmdir(item.path)
                except OSError:
                    pass  # not empty: something that is not ours
    return removed
