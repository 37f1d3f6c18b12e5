"""A persistent cache of generated source, so a second process pays (almost) no transform cost.

What is stored is only text this package generated, as JSON: per transform, the entry name, the
parameters and a description of every free name the function and the user functions it calls
read (globals, closure variables); per specialization, the generated module and the modules of
the callees' forward/backward halves (`transforms.calls`), with which module calls which.
Nothing is pickled: a cache entry is compiled again with `compile`, exactly like freshly
generated code. It is still code that runs, hence a directory only the user can write.

The key of a transform hashes: the source text, file, first line and qualified name of the
function and of every user function reachable from it through the global and closure names
its code reads (its possible callees, and theirs), which name leads to which; the transform's
options (`GradSpec`); the Python version, s2sgrad's version, the compiler's own files (name,
size, modification time: editing the compiler invalidates everything) and the rule registry (a
custom rule registered differently gives a different key). A hit is also checked against the
current values of the free names of the function and of its callees: a global that became an
array of another rank, a constant whose value changed, a callee name bound to another function,
is a miss. Functions reading values that cannot be described (objects, user modules, custom
gradients, constants of custom rules) are never cached.

The hit path (`lookup`, `load`) imports neither libcst nor the compiler's passes: only
`transforms.spec`, `transforms.source` and `transforms.spelling`. Writing an entry (`store`)
happens after generating code, when the compiler is loaded anyway.

A callee's forward half compiled from disk takes the callee's own default values, as when it
is generated (`transforms.calls`): defaults that are not literals (an array, a global's value)
are not in the generated text.

The files (`s2sgrad.cache_files`): ``$S2SGRAD_CACHE_DIR``, else ``~/.cache/s2sgrad``, created
0700 and refused with a warning if another user owns or can write it; at most
``$S2SGRAD_CACHE_MAX_SIZE`` bytes (default 100M; the least recently used entries are evicted);
atomic writes, so concurrent writers never leave a torn entry (the last one wins; a
specialization names the transform description it was generated under, so a mix of two writers'
files is a miss, not wrong code). Any entry that does not read, check, compile and run cleanly
(whatever it raises: SyntaxError, RecursionError, SystemExit, ...) is a miss.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import keyword
import os
import sys
import types

import numpy as np

from s2sgrad import cache_files
from s2sgrad.cache_files import entry_path, read_json, touch, usable_directory, write_json
from s2sgrad.runtime import registry
from s2sgrad.transforms import spec as _spec_module
from s2sgrad.transforms.source import run_module, source_lines
from s2sgrad.transforms.spec import Generated, GradSpec, inlining
from s2sgrad.transforms.spelling import canonical_spelling

_FORMAT = 3
ENVIRONMENT_VARIABLE = cache_files.ENVIRONMENT_VARIABLE  # (named here too, as before)
directory = cache_files.directory
_MAX_FUNCTIONS = 64  # a call graph larger than this (a library's functions) is not cached
_ORIGIN = " (from the disk cache)"  # in the file names tracebacks show
_APPENDED = "\n\n# {forward} and {backward}, called above:\n\n{source}"  # as pipeline writes it

# whatever a malformed entry may raise while it is read, checked, compiled or run (its module
# text runs on load: `raise SystemExit`, endless recursion, ...); not KeyboardInterrupt
_MALFORMED = (Exception, SystemExit)


class _Uncacheable(Exception):
    """A value the cache cannot describe (a function, an object of unknown meaning)."""


_fingerprints: dict[int, str] = {}


def _fingerprint() -> str:
    """What, besides the function, decides generated code: versions, compiler files, rules."""
    cached = _fingerprints.get(registry.version)
    if cached is not None:
        return cached
    import s2sgrad
    import s2sgrad.runtime as runtime

    digest = hashlib.sha256(f"{_FORMAT} {sys.version_info[:2]} {s2sgrad.__version__}".encode())
    runtime_dir = os.path.dirname(os.path.abspath(runtime.__file__))
    folders = (
        os.path.dirname(os.path.abspath(_spec_module.__file__)),
        runtime_dir,
        os.path.join(runtime_dir, "rules"),
    )
    for folder in folders:
        if not os.path.isdir(folder):
            continue
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if entry.name.endswith(".py"):
                stat = entry.stat()
                digest.update(f"{folder}/{entry.name} {stat.st_size} {stat.st_mtime_ns}\n".encode())
    texts = []
    for rule in registry:
        texts.append(
            f"{rule.name} {rule.differentiable} {rule.elementwise} {rule.reduction} "
            f"{rule.broadcast_g} {rule.output} {rule.linear}"
        )
        texts += [_template_text(t) for t in (rule.vjp, rule.jvp, rule.batched_jvp)]
    digest.update("\n".join(texts).encode())
    _fingerprints.clear()
    _fingerprints[registry.version] = result = digest.hexdigest()
    return result


def _template_text(template) -> str:
    """A rule template's identity: the built-in ones by name (their files are hashed above),
    the user's by their code."""
    if template is None:
        return "-"
    module = getattr(template, "__module__", None) or ""
    code = getattr(template, "__code__", None)
    name = f"{module}.{getattr(template, '__qualname__', '')}"
    if module.startswith("s2sgrad.runtime") or code is None:
        return name
    return f"{name} {code.co_code.hex()} {code.co_consts!r}"


# -- the key: the function and every user function it may call ---------------------------------


def _call_graph(fn: types.FunctionType) -> tuple[list, list] | None:
    """`fn` and the user functions reachable from it through the global and closure names its
    code reads (a superset of its callees), with the (name, index) edges of each; None if
    there are too many of them."""
    functions = [fn]
    index = {id(fn): 0}
    edges: list[list[tuple[str, int]]] = []
    position = 0
    while position < len(functions):
        function = functions[position]
        closure = _closure(function)
        found = []
        for name in sorted(_names_read(function.__code__)):
            value = closure[name] if name in closure else function.__globals__.get(name)
            if not isinstance(value, types.FunctionType) or canonical_spelling(value) is not None:
                continue
            target = index.get(id(value))
            if target is None:
                if len(functions) >= _MAX_FUNCTIONS:
                    return None
                target = index[id(value)] = len(functions)
                functions.append(value)
            found.append((name, target))
        edges.append(found)
        position += 1
    return functions, edges


def _names_read(code: types.CodeType) -> set[str]:
    names = set(code.co_names) | set(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_read(const)
    return names


def _closure(fn: types.FunctionType) -> dict:
    values = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True):
        try:
            values[name] = cell.cell_contents
        except ValueError:  # an empty cell: assigned after the def
            pass
    return values


def transform_key(fn: types.FunctionType, spec: GradSpec) -> str | None:
    """The hash naming `fn`'s transform by `spec`, or None if a source cannot be read."""
    graph = _call_graph(fn)
    if graph is None:
        return None
    parts = [_fingerprint(), repr(spec), f"inlining={inlining()}"]
    for function, found in zip(*graph, strict=True):
        filename = function.__code__.co_filename
        if filename.startswith("<"):  # generated code, an exec string: not a file we can trust
            return None
        try:
            lines, first = source_lines(function.__code__)
        except (OSError, TypeError, IndexError):
            return None
        parts += [filename, str(first), function.__qualname__, "".join(lines), repr(found)]
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


def _identity(fn: types.FunctionType) -> list:
    return [fn.__qualname__, fn.__code__.co_filename, fn.__code__.co_firstlineno]


# -- reading and writing ----------------------------------------------------------------------


def _read(path: str):
    data = read_json(path)
    return data if isinstance(data, dict) and data.get("format") == _FORMAT else None


def _kinds_suffix(kinds: tuple) -> str:
    text = json.dumps([sorted(kind) for kind in kinds])  # (scalars, ndims, containers[, complex])
    return "-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def _digest(meta: dict) -> str:
    """Names a transform description; a specialization records the one it was made under."""
    fields = {k: v for k, v in meta.items() if k != "format"}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


# -- the hit path ------------------------------------------------------------------------------


class CachedAnalysis:
    """Stands in for an `Analysis` found on disk: what the dispatcher needs to compile cached
    specializations (entry name, parameters, the namespaces of captured values of the function
    and of its callees) is here; any other attribute runs the real analysis (parse, resolve,
    ...) the first time it is asked for, which happens only when a specialization is not on
    disk and must be generated."""

    def __init__(self, fn, spec, key: str, meta: dict, functions: list, namespaces: list, free):
        self.fn = fn
        self.spec = spec
        self.cache_key = key
        self.meta_digest = _digest(meta)
        self.entry = meta["entry"]
        self.param_kinds = [tuple(p) for p in meta["params"]]
        self.functions = functions  # the function, then the user functions it calls
        self.namespaces = namespaces  # the captured values of each, as generated code names them
        self.namespace = namespaces[0]
        self.free_values = free
        self._analysis = None

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        if self._analysis is None:
            from s2sgrad.transforms.pipeline import analyze

            self._analysis = analyze(self.fn, self.spec)
        return getattr(self._analysis, name)


def lookup(fn: types.FunctionType, spec: GradSpec) -> CachedAnalysis | None:
    """The transform of `fn` by `spec` as stored on disk, if its free values (and those of its
    callees) still match; None for a miss, whatever is wrong with the entry."""
    root = usable_directory(create=False)
    if root is None:
        return None
    key = transform_key(fn, spec)
    if key is None:
        return None
    path = entry_path(root, key, "")
    meta = _read(path)
    if meta is None:
        return None
    try:
        if not _describes(meta, fn):
            return None
        bound = _bind(fn, meta["functions"])
        if bound is None:
            return None
        functions, namespaces, free = bound
        found = CachedAnalysis(fn, spec, key, meta, functions, namespaces, free)
    except _MALFORMED:
        return None
    touch(path)
    return found


def _describes(meta: dict, fn: types.FunctionType) -> bool:
    """The parts of a description that go into generated text outside the stored modules (the
    dispatcher's signature, its entry name) are exactly what `fn` would give."""
    entry = meta["entry"]
    if not isinstance(entry, str) or not entry.isidentifier() or keyword.iskeyword(entry):
        return False
    return [tuple(p) for p in meta["params"]] == _parameter_kinds(fn.__code__)


def _parameter_kinds(code: types.CodeType) -> list[tuple[str, str]]:
    """What `dispatch` reads from the parsed definition, from the code object."""
    positional = code.co_argcount
    names = code.co_varnames[: positional + code.co_kwonlyargcount]
    kinds = ["posonly"] * code.co_posonlyargcount + ["normal"] * (
        positional - code.co_posonlyargcount
    )
    kinds += ["kwonly"] * code.co_kwonlyargcount
    return list(zip(names, kinds, strict=True))


def _bind(fn: types.FunctionType, records: list):
    """The current function behind every record (the entry first, then the callees as the
    free names lead to them), each record's namespace, and the entry's free values; None
    when a value no longer matches its description."""
    functions: list = [fn] + [None] * (len(records) - 1)
    namespaces: list = [None] * len(records)
    frees: list = [None] * len(records)
    pending = [0]
    while pending:
        position = pending.pop()
        function, record = functions[position], records[position]
        if _identity(function) != record["identity"]:
            return None
        free = {}
        for name, description in record["free"]:
            value = _current_value(function, name)
            if description[0] == "callee":
                target = description[1]
                if not isinstance(value, types.FunctionType) or not 0 <= target < len(records):
                    return None
                if functions[target] is None:
                    functions[target] = value
                    pending.append(target)
                elif functions[target] is not value:
                    return None
            elif describe(value) != description:
                return None
            free[name] = value
        frees[position] = free
    for position, record in enumerate(records):
        namespace = namespaces[position] = {}
        for spelled, name, *callee in record["namespace"]:
            if not callee:  # the function's own free name
                namespace[spelled] = frees[position][name]
                continue
            if not 0 <= callee[0] < len(records) or frees[callee[0]] is None:
                return None
            if len(callee) == 1:  # an inlined callee's free name
                namespace[spelled] = frees[callee[0]][name]
                continue
            value = _default_of(functions[callee[0]], name)  # an inlined callee's default
            if describe(value) != callee[1]:
                return None
            namespace[spelled] = value
    return functions, namespaces, frees[0]


def load(analysis, kinds: tuple) -> Generated | None:
    """A specialization of `analysis` from disk, compiled and linked to its callees; None for a
    miss, whatever is wrong with the entry (its text is compiled and run here)."""
    root = usable_directory(create=False)
    key = None if root is None else _key_of(analysis)
    if key is None:
        return None
    path = entry_path(root, key, _kinds_suffix(kinds))
    data = _read(path)
    if data is None or data.get("entry") != analysis.entry:
        return None
    cached = analysis
    if not isinstance(cached, CachedAnalysis):  # analyzed here: are the values still these?
        cached = lookup(analysis.fn, analysis.spec)
    if cached is None or data.get("meta") != cached.meta_digest:
        return None
    try:
        generated = _compile(data, analysis.entry, analysis.namespace, cached)
    except _MALFORMED:
        return None  # text that does not compile or run against this runtime: a miss
    touch(path)
    return generated


def _compile(data: dict, entry: str, namespace: dict, cached: CachedAnalysis) -> Generated:
    """Run the stored modules and link them as `transforms.calls` did; a forward half takes
    its function's current default values, which need not be literals (so are not in its
    text)."""
    halves = []
    for split in data["splits"]:
        names = [split["forward"], split["backward"]]
        constants = cached.namespaces[split["function"]]
        functions = run_module(split["source"], names, constants, _ORIGIN)
        _check_functions(functions)
        callee = cached.functions[split["function"]]
        functions[0].__defaults__ = callee.__defaults__
        functions[0].__kwdefaults__ = callee.__kwdefaults__
        halves.append(dict(zip(names, functions, strict=True)))
    (function,) = _check_functions(run_module(data["module"], [entry], namespace, _ORIGIN))
    modules = [(function.__globals__, data["links"])]
    for functions, split in zip(halves, data["splits"], strict=True):
        modules.append((functions[split["forward"]].__globals__, split["links"]))
    for globals_, links in modules:
        for link in links:  # what `transforms.calls.link` did when the code was generated
            globals_.update(halves[link])
    source = data["module"] + "".join(
        _APPENDED.format(**data["splits"][link]) for link in data["links"]
    )
    return Generated(source, function, entry)


def _check_functions(functions: list) -> list:
    if not all(isinstance(function, types.FunctionType) for function in functions):
        raise TypeError("a stored module does not define its functions")
    return functions


# -- the miss path: writing entries (the compiler is loaded by then) ----------------------------


def store(analysis, kinds: tuple, generated: Generated, param_kinds: list) -> None:
    """Save a freshly generated specialization (and its transform's description)."""
    key = None if directory() is None else _key_of(analysis)
    if key is None:
        return
    meta = None
    if isinstance(analysis, CachedAnalysis):
        functions, namespaces = analysis.functions, analysis.namespaces
        digest = analysis.meta_digest
    else:
        try:
            meta, functions, namespaces = _describe_transform(analysis, param_kinds)
        except _Uncacheable:
            _uncacheable.add(key)
            return
        digest = _digest(meta)
    try:
        specialization = _describe_specialization(generated, functions, namespaces)
    except _Uncacheable:
        return
    root = None if specialization is None else usable_directory(create=True)
    if root is None:
        return
    if meta is not None:
        write_json(root, entry_path(root, key, ""), {"format": _FORMAT, **meta})
    specialization = {"format": _FORMAT, "meta": digest, **specialization}
    write_json(root, entry_path(root, key, _kinds_suffix(kinds)), specialization)


_keys: dict[int, tuple] = {}
_uncacheable: set[str] = set()


def _key_of(analysis) -> str | None:
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


def _describe_transform(analysis, param_kinds: list) -> tuple[dict, list, list]:
    """The description of a transform `lookup` checks, with the functions it describes (the
    entry, then every user function reachable through its free names) and their namespaces.

    Raises:
        _Uncacheable: a value that cannot be described, a callee the key does not cover.
    """
    from s2sgrad.transforms.parse import parse_function
    from s2sgrad.transforms.resolve import resolve

    graph = _call_graph(analysis.fn)
    if graph is None:
        raise _Uncacheable
    in_key = {id(function) for function in graph[0]}
    functions = [analysis.fn]
    index = {id(analysis.fn): 0}
    records, namespaces = [], []
    while len(records) < len(functions):
        function = functions[len(records)]
        if len(records) == 0:
            resolution, namespace = analysis.resolution, analysis.namespace
        else:
            if hasattr(function, "__sg_custom_gradient__"):
                raise _Uncacheable
            try:
                resolution = resolve(parse_function(function), function)
            except Exception as error:  # a function the compiler never needed to transform
                raise _Uncacheable from error
            namespace = resolution.namespace()
        free = []
        for name, value in resolution.free.items():
            if isinstance(value, types.FunctionType) and canonical_spelling(value) is None:
                if hasattr(value, "__sg_custom_gradient__") or id(value) not in in_key:
                    raise _Uncacheable  # a custom gradient, or a function the key misses
                if id(value) not in index:
                    index[id(value)] = len(functions)
                    functions.append(value)
                free.append([name, ["callee", index[id(value)]]])
            else:
                free.append([name, describe(value)])
        spelled_names = {spelled: name for name, spelled in resolution.spelling.items()}
        own = [spelled for spelled in namespace if spelled in spelled_names]
        if len(records) and len(own) < len(namespace):
            raise _Uncacheable  # constants a custom rule reads: not the function's own
        records.append(
            {
                "identity": _identity(function),
                "free": free,
                "namespace": [[spelled, spelled_names[spelled]] for spelled in own],
            }
        )
        namespaces.append(dict(namespace))
    records[0]["namespace"] += _inlined_constants(analysis, index)
    meta = {"entry": analysis.entry, "params": [list(p) for p in param_kinds], "functions": records}
    return meta, functions, namespaces


def _inlined_constants(analysis, index: dict) -> list:
    """The namespace entries of the values the entry's inlined callees read
    (`transforms/anf_inline.py`): ``[spelled, free name, callee]`` for a callee's global or
    closure value, ``[spelled, parameter, callee, description]`` for a parameter's default
    (checked on load like a free value: code is specialized for its kind).

    Raises:
        _Uncacheable: a constant of no inlined callee's (a custom rule's), a callee the
            description does not reach, a default that cannot be described.
    """
    sources = analysis.nf.constant_sources
    own = {spelled for name, spelled in analysis.resolution.spelling.items()}
    entries = []
    for spelled in analysis.namespace:
        if spelled in own:
            continue
        source = sources.get(spelled)
        if source is None or id(source[0]) not in index:
            raise _Uncacheable
        callee = index[id(source[0])]
        if len(source) == 3:  # a parameter's default
            value = analysis.namespace[spelled]
            entries.append([spelled, source[1], callee, describe(value)])
        else:
            entries.append([spelled, source[1], callee])
    return entries


def _default_of(fn: types.FunctionType, param: str):
    """The default `fn` has now for `param` (KeyError: none)."""
    code = fn.__code__
    positional = code.co_varnames[: code.co_argcount]
    defaults = fn.__defaults__ or ()
    if param in positional[len(positional) - len(defaults) :]:
        return defaults[positional.index(param) - (len(positional) - len(defaults))]
    return (fn.__kwdefaults__ or {})[param]


def _describe_specialization(generated: Generated, functions: list, namespaces: list):
    """The generated module and its callees' modules (`transforms.calls` splits), with which
    module links which, as `_compile` rebuilds them; None when the generated code is not
    exactly that (a forward-mode callee, a custom gradient, ...).

    Raises:
        _Uncacheable: a callee's split that does not belong to a described function.
    """
    from s2sgrad.transforms import calls

    module = getattr(generated.function, "__s2sgrad_source__", None)
    if module is None:
        return None
    owners = {
        id(function): split
        for split in list(calls._splits.values())
        for function in split.functions.values()
    }
    index = {id(function): position for position, function in enumerate(functions)}
    found: list = []

    def links_of(globals_: dict, expected: dict) -> list[int]:
        links: list[int] = []
        for name, value in globals_.items():
            split = owners.get(id(value))
            if split is not None and split.functions.get(name) is value:
                if hasattr(value, "__sg_custom_gradient__") or id(split.fn) not in index:
                    raise _Uncacheable
                if value.__globals__ is globals_:
                    continue  # the split's own module
                if split not in found:
                    found.append(split)
                if found.index(split) not in links:
                    links.append(found.index(split))
            elif not _explained(name, value, globals_, expected):
                raise _Uncacheable
        return links

    entry_links = links_of(generated.function.__globals__, namespaces[0])
    splits = []
    while len(splits) < len(found):
        split = found[len(splits)]
        position = index[id(split.fn)]
        forward = split.functions[split.forward]
        if getattr(forward, "__s2sgrad_source__", None) != split.source:
            return None
        splits.append(
            {
                "function": position,
                "forward": split.forward,
                "backward": split.backward,
                "source": split.source,
                "links": links_of(forward.__globals__, namespaces[position]),
            }
        )
    appended = "".join(_APPENDED.format(**splits[link]) for link in entry_links)
    if generated.source != module + appended:
        return None
    return {"entry": generated.entry, "module": module, "links": entry_links, "splits": splits}


def _explained(name: str, value, globals_: dict, expected: dict) -> bool:
    """A global of a generated module that `_compile` puts back: a captured value, an import
    (numpy, math, a runtime helper), a function the module defines, a dunder."""
    if name.startswith("__"):
        return True
    if name in expected:
        return expected[name] is value
    if isinstance(value, types.FunctionType) and value.__globals__ is globals_:
        return True
    return canonical_spelling(value) == name
