"""The one cache of compiled transforms, with one key and one validity check.

Every transform of a Python function -- `sg.grad`/`sg.value_and_grad`, `sg.jvp`, `sg.vjp`, the
sweeps under `sg.jacobian`/`sg.hessian`/`sg.hvp`, and the generated halves of every user function
they call (`calls.split_of`, `forward_calls.forward_split_of`) -- is found here. A second cache
with its own key is how stale derivatives happen: one that forgot the captured values kept a
global's old value, one that forgot the callees kept a callee's old definition.

Key: the function's code and globals dictionary, and what is built from it (a `GradSpec`, or a
tag such as ``("reverse split",)``). An entry is used only while it is still valid, which is
checked on every lookup:

- every value the function and the user functions it calls (transitively) may read from their
  globals and closures is the same object as when it was built: a global rebound, a callee
  redefined or a callee's own global changed is a miss (the names are those the code objects
  mention, a superset of what they read, so the check can only be too careful);
- its default values, and those of the user functions it calls (a call leaving a parameter out
  runs the callee's compiled half with the default it had when compiled), are the same objects;
- the gradient rules of the primitives it may call are the same `Rule` objects. Registering any
  rule bumps the registry's version; an entry remembers the version it was last checked at and
  compares its rules only when that moved, so registering a rule (importing ``s2sgrad.nn``
  registers several) invalidates only the code that may call the primitive concerned.

No libcst here: a process whose transforms all come from the on-disk cache never loads it.
"""

from __future__ import annotations

import builtins
import dataclasses
import operator
import types
from collections.abc import Callable

from s2sgrad.runtime import registry

from .spec import inlining

_ABSENT = object()  # a name a code object mentions that its globals do not hold
_TOP = object()  # a closure read of the cached function itself (checked against its cells)
_DEFAULTS = object()  # a read of a callee's default values: (callee, _DEFAULTS, its defaults)

# the functions operators stand for (``a * b`` is operator.mul): code mentions them by syntax,
# not by name, so every entry depends on their rules
_OPERATORS = tuple(value for name in dir(operator) if callable(value := getattr(operator, name)))


@dataclasses.dataclass
class _Entry:
    value: object
    reads: tuple  # (globals dict or closure cell or _TOP, name or index, value read), or
    # (callee, _DEFAULTS, its default values)
    defaults: tuple  # the function's default values and keyword defaults (compared by identity)
    rules: tuple  # (primitive, its Rule or None)
    version: int  # the registry version at which `rules` were last found unchanged

    def valid(self, fn: types.FunctionType) -> bool:
        if (fn.__defaults__ or fn.__kwdefaults__ or self.defaults) and not _same(
            _defaults(fn), self.defaults
        ):
            return False
        closure = fn.__closure__
        for holder, name, value in self.reads:
            if holder is _TOP:
                current = _cell_value(closure[name])
            elif isinstance(holder, dict):
                current = holder.get(name, _ABSENT)
            elif name is _DEFAULTS:  # a callee's defaults: `holder` is the callee
                if not _same(_defaults(holder), value):
                    return False
                continue
            else:
                current = _cell_value(holder)
            if current is not value:
                return False
        if registry.version != self.version:
            if any(registry.lookup(p) is not rule for p, rule in self.rules):
                return False
            self.version = registry.version
        return True


_entries: dict[tuple, _Entry] = {}


def _key(fn: types.FunctionType, what) -> tuple:
    return (fn.__code__, id(fn.__globals__), what, inlining())


def find(fn: types.FunctionType, what):
    """The value built for (`fn`, `what`) if there is one and it is still valid, else None."""
    entry = _entries.get(_key(fn, what))
    if entry is not None and entry.valid(fn):
        return entry.value
    return None


def store(fn: types.FunctionType, what, value) -> None:
    """Remember `value`, built from `fn` as it is now, for (`fn`, `what`)."""
    reads, rules = dependencies(fn)
    _entries[_key(fn, what)] = _Entry(value, reads, _defaults(fn), rules, registry.version)


def discard(fn: types.FunctionType, what) -> None:
    """Forget (`fn`, `what`) (its build failed)."""
    _entries.pop(_key(fn, what), None)


def clear() -> None:
    """Forget every entry (tests that compile the same functions under other settings)."""
    _entries.clear()


def cached(fn: types.FunctionType, what, build: Callable[[], object]):
    """The value for (`fn`, `what`): found if still valid, else ``build()`` and stored."""
    value = find(fn, what)
    if value is None:
        value = build()
        store(fn, what, value)
    return value


def dependencies(fn: types.FunctionType) -> tuple[tuple, tuple]:
    """What a transform of `fn` depends on: the (holder, name, value) reads of `fn` and of the
    user functions it may call, and the (primitive, rule) pairs of every callable they name."""
    reads: list = []
    rules: dict[int, tuple] = {id(p): (p, registry.lookup(p)) for p in _OPERATORS}
    pending = [(fn, True)]
    seen: set[int] = set()
    while pending:
        function, top = pending.pop()
        if id(function) in seen:
            continue
        seen.add(id(function))
        if not top:  # (none today is a read too: defaults given later are a change)
            reads.append((function, _DEFAULTS, _defaults(function)))
        names = _names(function.__code__)
        values = []
        cells = function.__closure__ or ()
        for index, cell in enumerate(cells):
            value = _cell_value(cell)
            reads.append((_TOP, index, value) if top else (cell, None, value))
            values.append(value)
        for name in names:
            value = function.__globals__.get(name, _ABSENT)
            reads.append((function.__globals__, name, value))
            values.append(getattr(builtins, name, _ABSENT) if value is _ABSENT else value)
        for value in values:
            _visit(value, names, rules, pending, seen)
    return tuple(reads), tuple(rules.values())


def _visit(value, names: frozenset[str], rules: dict, pending: list, seen: set) -> None:
    """Record the rule of a callable `value` (the callables a module reaches by one of
    `names`), and queue a user function for its own dependencies."""
    if isinstance(value, types.ModuleType):
        if id(value) in seen:
            return
        seen.add(id(value))
        members = vars(value)  # not getattr: that would run a lazy import (``sg.nn``)
        for name in names:
            attribute = members.get(name)
            if attribute is not None and attribute is not value:
                _visit(attribute, names, rules, pending, seen)
        return
    if not callable(value) or value is _ABSENT or isinstance(value, type):
        return
    rule = registry.lookup(value)
    rules.setdefault(id(value), (value, rule))
    if rule is None and isinstance(value, types.FunctionType):
        pending.append((value, False))  # a user function: transformed in turn


_names_of: dict[types.CodeType, frozenset[str]] = {}


def _names(code: types.CodeType) -> frozenset[str]:
    """The global and attribute names `code` and the code nested in it mention."""
    found = _names_of.get(code)
    if found is None:
        names = set(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                names |= _names(const)
        found = _names_of[code] = frozenset(names)
    return found


def _cell_value(cell) -> object:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell: the name is assigned after the def
        return _ABSENT


def _defaults(fn: types.FunctionType) -> tuple:
    kwdefaults = fn.__kwdefaults__ or {}
    return (*(fn.__defaults__ or ()), *kwdefaults, *kwdefaults.values())


def _same(values: tuple, others: tuple) -> bool:
    if len(values) != len(others):
        return False
    for a, b in zip(values, others, strict=True):
        if a is not b:
            return False
    return True
