"""A persistent cache of generated source, so a second process pays (almost) no transform cost.

What is stored is only text this package generated, as JSON: the generated module of each
specialization, and per transform the entry name, the parameters and a description of every
free name the function read (globals, closure variables). Nothing is pickled: a cache entry is
compiled again with `compile`, exactly like freshly generated code, so a cache directory holds
nothing more dangerous than the functions' own source would.

The key of a transform hashes: the function's source text, its file and first line, the
transform's options (`GradSpec`), the Python version, s2sgrad's version, the compiler's own
files (name, size, modification time: editing the compiler invalidates everything) and the
rule registry (each rule's name and template code: a custom rule registered differently gives
a different key). A hit is also checked against the current values of the free names: a
global that became an array of another rank, a constant whose value changed, is a miss.
Functions that call other user functions (their callees are compiled separately, in modules
of their own) and functions reading values that cannot be described are never cached.

Location: ``$S2SGRAD_CACHE_DIR`` if set (``off``, ``0`` or empty turns the cache off), else
``$XDG_CACHE_HOME/s2sgrad`` or ``~/.cache/s2sgrad``. Writes go to a temporary file in the
same directory and are moved into place with `os.replace`, so concurrent writers never leave
a torn entry (the last one wins, and they write the same text). Unreadable or corrupt entries
are misses; a cache that cannot be written is silently skipped.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import sys
import tempfile
import types

import numpy as np

from s2sgrad.runtime import registry
from s2sgrad.transforms import codegen
from s2sgrad.transforms.parse import source_lines
from s2sgrad.transforms.pipeline import Analysis, Generated, GradSpec, analyze
from s2sgrad.transforms.resolve import canonical_spelling

ENVIRONMENT_VARIABLE = "S2SGRAD_CACHE_DIR"
_FORMAT = 1
_OFF = ("", "0", "off", "none", "false")
_PACKAGE_DIRS = ("transforms", "runtime")


class _Uncacheable(Exception):
    """A value the cache cannot describe (a function, an object of unknown meaning)."""


def directory() -> str | None:
    """Where entries live, or None when the cache is turned off."""
    configured = os.environ.get(ENVIRONMENT_VARIABLE)
    if configured is not None:
        return None if configured.strip().lower() in _OFF else configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "s2sgrad")


_fingerprints: dict[int, str] = {}


def _fingerprint() -> str:
    """What, besides the function, decides generated code: versions, compiler files, rules."""
    cached = _fingerprints.get(registry.version)
    if cached is not None:
        return cached
    import s2sgrad

    digest = hashlib.sha256(f"{_FORMAT} {sys.version_info[:2]} {s2sgrad.__version__}".encode())
    root = os.path.dirname(os.path.dirname(os.path.abspath(codegen.__file__)))
    for folder in (os.path.dirname(os.path.abspath(codegen.__file__)), *_runtime_dirs(root)):
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                stat = os.stat(os.path.join(folder, name))
                digest.update(f"{folder}/{name} {stat.st_size} {stat.st_mtime_ns}\n".encode())
    for rule in registry:
        digest.update(rule.name.encode())
        for template in (rule.vjp, rule.jvp):
            code = getattr(template, "__code__", None)
            if code is not None:
                digest.update(code.co_code + repr(code.co_consts).encode())
    _fingerprints.clear()
    _fingerprints[registry.version] = result = digest.hexdigest()
    return result


def _runtime_dirs(root: str) -> list[str]:
    import s2sgrad.runtime as runtime

    top = os.path.dirname(os.path.abspath(runtime.__file__))
    return [top, *(os.path.join(top, d) for d in sorted(os.listdir(top)) if d == "rules")]


def transform_key(fn: types.FunctionType, spec: GradSpec) -> str | None:
    """The hash naming `fn`'s transform by `spec`, or None if its source cannot be read."""
    try:
        lines, first = source_lines(fn.__code__)
    except (OSError, TypeError):
        return None
    filename = fn.__code__.co_filename
    if filename.startswith("<"):  # generated code, an exec string: not a file we can trust
        return None
    text = "".join(lines)
    parts = (_fingerprint(), repr(spec), filename, str(first), fn.__qualname__, text)
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


# -- describing the values of free names -----------------------------------------------------


def describe(value, depth: int = 0):
    """A JSON-able description of everything about `value` generated code may depend on."""
    canonical = canonical_spelling(value)
    if canonical is not None:
        return ["canonical", canonical]
    if value is None or isinstance(value, (bool, int, float, str)):
        return [type(value).__name__, repr(value)]
    if isinstance(value, complex):
        return ["complex", repr(value)]
    if isinstance(value, np.ndarray):
        return ["array", value.dtype.str, list(value.shape)]
    if isinstance(value, np.generic):
        return ["scalar", value.dtype.str, repr(value.item())]
    if isinstance(value, (tuple, list, dict)) and depth < 4 and len(value) <= 64:
        if isinstance(value, dict):
            if not all(isinstance(k, (str, int)) for k in value):
                raise _Uncacheable
            items = [[repr(k), describe(v, depth + 1)] for k, v in value.items()]
        else:
            items = [describe(v, depth + 1) for v in value]
        return [type(value).__name__, items]
    raise _Uncacheable


def _current_value(fn: types.FunctionType, name: str):
    if fn.__closure__:
        for free, cell in zip(fn.__code__.co_freevars, fn.__closure__, strict=True):
            if free == name:
                return cell.cell_contents  # ValueError for an empty cell: the caller's miss
    if name in fn.__globals__:
        return fn.__globals__[name]
    return getattr(builtins, name)  # AttributeError: a miss


# -- reading and writing ----------------------------------------------------------------------


def _path(key: str, suffix: str) -> str | None:
    root = directory()
    return None if root is None else os.path.join(root, key[:2], f"{key}{suffix}.json")


def _read(path: str | None):
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == _FORMAT else None


def _write(path: str | None, data: dict) -> None:
    if path is None:
        return
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=folder)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump({"format": _FORMAT, **data}, out)
            os.replace(temporary, path)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise
    except OSError:
        return  # a read-only or full disk: the cache is an optimization, never an error


def _kinds_suffix(kinds: tuple) -> str:
    scalars, ndims, containers = kinds
    text = json.dumps([sorted(scalars), sorted(ndims), sorted(containers)])
    return "-" + hashlib.sha256(text.encode()).hexdigest()[:16]


class CachedAnalysis:
    """Stands in for an `Analysis` found on disk: what the dispatcher needs to compile cached
    specializations (entry name, parameters, the namespace of captured values) is here; any
    other attribute runs the real analysis (parse, resolve, ...) the first time it is asked
    for, which happens only when a specialization is not on disk and must be generated."""

    def __init__(self, fn, spec, key: str, meta: dict, namespace: dict, free: dict):
        self.fn = fn
        self.spec = spec
        self.cache_key = key
        self.entry = meta["entry"]
        self.param_kinds = [tuple(p) for p in meta["params"]]
        self.namespace = namespace
        self.free_values = free
        self._analysis: Analysis | None = None

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        if self._analysis is None:
            self._analysis = analyze(self.fn, self.spec)
        return getattr(self._analysis, name)


def lookup(fn: types.FunctionType, spec: GradSpec) -> CachedAnalysis | None:
    """The transform of `fn` by `spec` as stored on disk, if its free values still match."""
    if directory() is None:
        return None
    key = transform_key(fn, spec)
    if key is None:
        return None
    meta = _read(_path(key, ""))
    if meta is None:
        return None
    namespace: dict = {}
    free: dict = {}
    try:
        for name, description in meta["free"]:
            value = _current_value(fn, name)
            if describe(value) != description:
                return None
            free[name] = value
        for spelled, name in meta["namespace"]:
            namespace[spelled] = free[name]
    except (_Uncacheable, ValueError, AttributeError, KeyError, TypeError):
        return None
    return CachedAnalysis(fn, spec, key, meta, namespace, free)


def load(analysis, kinds: tuple) -> Generated | None:
    """A specialization of `analysis` from disk, compiled, or None."""
    key = _key_of(analysis)
    if key is None:
        return None
    data = _read(_path(key, _kinds_suffix(kinds)))
    if data is None or data.get("entry") != analysis.entry:
        return None
    try:
        function = codegen.compile_module(data["source"], analysis.entry, analysis.namespace)
    except (SyntaxError, KeyError, TypeError, ValueError):
        return None
    return Generated(data["source"], function, analysis.entry)


def store(analysis, kinds: tuple, generated: Generated, param_kinds: list) -> None:
    """Save a freshly generated specialization (and its transform's description)."""
    if getattr(generated.function, "__s2sgrad_source__", None) != generated.source:
        return  # callees' modules appended: they are compiled separately, not cached here
    key = _key_of(analysis)
    if key is None:
        return
    if not isinstance(analysis, CachedAnalysis):
        try:
            meta = _describe_transform(analysis, param_kinds)
        except _Uncacheable:
            _uncacheable.add(key)
            return
        _write(_path(key, ""), meta)
    _write(_path(key, _kinds_suffix(kinds)), {"entry": generated.entry, "source": generated.source})


_keys: dict[int, tuple] = {}
_uncacheable: set[str] = set()


def _key_of(analysis) -> str | None:
    if directory() is None:
        return None
    key = getattr(analysis, "cache_key", None)
    if key is None:
        remembered = _keys.get(id(analysis))
        if remembered is not None and remembered[0] is analysis:
            key = remembered[1]
        else:
            key = transform_key(analysis.fn, analysis.spec)
            if len(_keys) > 1024:
                _keys.clear()
            _keys[id(analysis)] = (analysis, key)
    return None if key in _uncacheable else key


def _describe_transform(analysis: Analysis, param_kinds: list) -> dict:
    resolution = analysis.resolution
    free = []
    for name, value in resolution.free.items():
        description = describe(value)
        if isinstance(value, types.FunctionType) and description[0] != "canonical":
            raise _Uncacheable  # a user function or custom rule: its code is not in the key
        free.append([name, description])
    spelled_names = {spelled: name for name, spelled in resolution.spelling.items()}
    namespace = [[spelled, spelled_names[spelled]] for spelled in analysis.namespace]
    return {
        "entry": analysis.entry,
        "params": [list(p) for p in param_kinds],
        "free": free,
        "namespace": namespace,
    }
