"""The two edges of a transformed function: what it is given and what it returns.

A transformed function never changes its inputs and never returns them (API.md, section 1):

- `fresh_containers` gives the generated code its own copy of every container argument (the
  lists, dicts and tuples, nested; the arrays and numbers in them are shared), so that code
  appending to a list or updating a dict it was given (``xs.append``, ``p.update``, which the
  primal sweep runs as written) changes the copy, not the caller's;
- `unaliased` copies every array of a result that shares memory with an argument or a
  captured constant (``sg.grad`` of ``np.sum(x * w)`` with respect to ``x`` is ``w`` itself,
  and ``g *= lr`` must not rescale the caller's weights). A Python function among the sources
  stands for every value it (and the functions it calls) may read from its globals and
  closure: a user function called as written (``return h()``, or ``f`` itself in `sg.vjp`)
  may return one of its own globals, which the caller cannot name.

Generated code calls them only where the compiler cannot tell that they have nothing to do.
Both are linear in their first argument (rules in ``rules/helpers.py``), so code calling them
can be differentiated again.

A module `sg.export` writes has no dispatcher choosing the code for its arguments' kinds, so its
entry starts with `check_kinds`: called with arguments of kinds the code was not generated for
(an array where it was specialized for Python numbers, a NamedTuple where it assumed arrays) it
would compute something else without a word.
"""

from __future__ import annotations

import numbers
import types

import numpy as np

from .containers import ContainerAdjoint, elements, is_container, is_record, rebuilt

__all__ = ["check_kinds", "fresh_containers", "unaliased"]

# what an exported entry's code assumes of an argument (an int: an array of that many dimensions)
NUMBER, CONTAINER, NUMBER_OR_ARRAY = (
    "a number",
    "a dict, list, tuple or record",
    "a number or array",
)


def check_kinds(kinds: tuple, values: tuple) -> None:
    """A TypeError naming the first argument of `values` that is not of its kind in `kinds`
    (``(name, kind)`` pairs, in parameter order)."""
    for (name, kind), value in zip(kinds, values, strict=True):
        if _is_kind(value, kind):
            continue
        wanted = f"an array of {kind} dimensions" if isinstance(kind, int) else kind
        raise TypeError(
            f"argument {name!r} is {_describe(value)}, but this module was exported for "
            f"{wanted}: export it again with example arguments like the ones you call it with "
            f"(sg.export(fn, path, *args)), or call the function sg.grad returned"
        )


def _is_kind(value, kind) -> bool:
    if kind == NUMBER:
        return (isinstance(value, numbers.Number) and not hasattr(value, "shape")) or (
            isinstance(value, (np.ndarray, np.generic)) and np.ndim(value) == 0
        )
    if kind == CONTAINER:
        return is_container(value)
    if isinstance(kind, int):
        return isinstance(value, np.ndarray) and value.ndim == kind
    return not is_container(value)


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of {value.ndim} dimensions"
    return f"a {type(value).__name__}"


def fresh_containers(value):
    """`value` with its lists, dicts and tuples rebuilt (nested), their leaves shared."""
    if isinstance(value, list):
        return [fresh_containers(item) for item in value]
    if isinstance(value, ContainerAdjoint):
        copied = value.copy()
        for key, item in value.items():
            copied[key] = fresh_containers(item)
        return copied
    if isinstance(value, dict):
        copied = value.copy()  # keeps a dict subclass (OrderedDict, defaultdict)
        for key, item in value.items():
            copied[key] = fresh_containers(item)
        return copied
    if isinstance(value, tuple):
        items = [fresh_containers(item) for item in value]
        if type(value) is tuple:
            return tuple(items)
        make = getattr(type(value), "_make", None)  # a NamedTuple
        return make(items) if make is not None else value
    return value


def unaliased(value, sources: tuple):
    """`value` with each array sharing memory with one of `sources` (arrays, nested in lists,
    dicts and tuples) replaced by a copy, and its lists and dicts rebuilt."""
    if value.__class__ is float or (
        value.__class__ is tuple and all(item.__class__ is float for item in value)
    ):
        return value  # numbers share no memory (a gradient of Python floats: the common case)
    roots: set[int] = set()
    _collect_roots(sources, roots)
    return _unshare(value, roots)


def _root(array: np.ndarray) -> np.ndarray:
    """The array owning `array`'s memory (itself, or the base of the view it is)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _collect_roots(value, roots: set[int]) -> None:
    pending = [value]
    functions: set[int] = set()
    while pending:
        item = pending.pop()
        if isinstance(item, np.ndarray):
            roots.add(id(_root(item)))
        elif isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, (list, tuple)):
            pending.extend(item)
        elif is_record(item):  # a dataclass's fields
            pending.extend(element for _, element in elements(item))
        elif isinstance(item, types.FunctionType) and id(item) not in functions:
            functions.add(id(item))
            pending.extend(_captured(item))


def _captured(function: types.FunctionType) -> list:
    """The values `function` may read from its closure and globals (by the names its code
    mentions, so a superset), a module's containers and arrays of those names included (not
    its functions: library code returns no user's global)."""
    names = _names(function.__code__)
    found = []
    for cell in function.__closure__ or ():
        try:
            found.append(cell.cell_contents)
        except ValueError:  # an empty cell: the name is assigned after the def
            pass
    space = function.__globals__
    for name in names:
        value = space.get(name)
        if isinstance(value, types.ModuleType):
            members = vars(value)
            found.extend(
                members[n]
                for n in names
                if isinstance(members.get(n), (np.ndarray, list, tuple, dict))
            )
        elif value is not None:
            found.append(value)
    return found


def _names(code: types.CodeType) -> set[str]:
    """The global and attribute names `code` and the code nested in it mention."""
    names = set(code.co_names)
    pending = [code]
    while pending:
        for const in pending.pop().co_consts:
            if isinstance(const, types.CodeType):
                names.update(const.co_names)
                pending.append(const)
    return names


def _unshare(value, roots: set[int]):
    if isinstance(value, np.ndarray):
        return value.copy() if id(_root(value)) in roots else value
    if isinstance(value, list):
        return [_unshare(item, roots) for item in value]
    if isinstance(value, dict):
        copied = value.copy()
        for key, item in value.items():
            copied[key] = _unshare(item, roots)
        return copied
    if isinstance(value, tuple):
        items = [_unshare(item, roots) for item in value]
        if type(value) is tuple:
            return tuple(items)
        make = getattr(type(value), "_make", None)
        return make(items) if make is not None else value
    if is_record(value):  # a dataclass (a gradient of one: its fields may be arguments)
        return rebuilt(value, {key: _unshare(item, roots) for key, item in elements(value)})
    return value
