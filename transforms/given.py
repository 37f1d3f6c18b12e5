"""Given values: a gradient that reads intermediates it is handed instead of recomputing them.

A GradientTape has already computed every intermediate value of what it recorded, so the
adjoint it compiles needs a backward sweep only (DESIGN.md, "The tape path"). With
``GradSpec.given`` naming some intermediates of the function, two passes around `optimize`
make that so:

- `supply` (after `reverse`): every assignment to a given name is removed and the given names
  become parameters, appended after the function's own, in the order given. The primal sweep
  then computes only what those values do not already provide, and `optimize`'s dead-code
  elimination removes whatever the adjoint sweep does not read.
- `drop_unread` (after `optimize`): parameters the body never reads are removed, so the caller
  passes only what the backward sweep uses. The caller reads the remaining parameters from the
  compiled function (``__code__.co_varnames``): the signature is no longer the user's.

Output of `supply`: the reverse pass's form, with the given names as parameters and never
assigned. A given value is the caller's array and must not be written to: a given name that is
assigned more than once, inside a branch or loop, or updated in place is a `ValueError`.
"""

from __future__ import annotations

import libcst as cst

from .lines import COMPOUND, blocks, usage
from .walk import read_names

__all__ = ["drop_unread", "supply"]


def supply(funcdef: cst.FunctionDef, given: tuple[str, ...], namer) -> cst.FunctionDef:
    """Make the `given` names parameters of `funcdef` and remove their assignments.

    A line that assigns a given name beside values the backward sweep needs (a user
    function's forward half, ``(t0, _t1) = _fwd_g(c0)``, returns its value and what its
    backward half reads) stays, with a fresh name (from `namer`) where the given one was: the
    given value is never rebound to a recomputed one. (Rebound, it differed from the recorded
    values in its last bits, and an adjoint choosing by equality, ``np.maximum``'s
    ``tie_weights(t0, c2, t1)``, found no tie: a zero gradient.)"""
    wanted = frozenset(given)
    _check_single_assignment(funcdef.body.body, wanted)
    kept = []
    carried: tuple = ()  # the source comments of removed lines go to the next kept line
    for line in funcdef.body.body:
        if not isinstance(line, COMPOUND) and _assigns_only_given(line, wanted):
            carried += tuple(line.leading_lines)
            continue
        if not isinstance(line, COMPOUND) and wanted.intersection(usage(line).writes):
            line = _unbind_given(line, wanted, namer)
        if carried:
            line = line.with_changes(leading_lines=(*carried, *line.leading_lines))
            carried = ()
        kept.append(line)
    existing = {p.name.value for p in _all_params(funcdef.params)}
    extra = tuple(cst.Param(cst.Name(name)) for name in given if name not in existing)
    params = funcdef.params.with_changes(params=(*funcdef.params.params, *extra))
    return funcdef.with_changes(params=params, body=funcdef.body.with_changes(body=tuple(kept)))


def drop_unread(funcdef: cst.FunctionDef) -> cst.FunctionDef:
    """Remove the parameters (positional or keyword) that `funcdef`'s body never reads."""
    reads: list[str] = []
    for line in funcdef.body.body:
        read_names(line, reads)
    read = frozenset(reads)

    def kept(params) -> tuple:  # commas as libcst's default: between parameters only
        return tuple(
            p.with_changes(comma=cst.MaybeSentinel.DEFAULT) for p in params if p.name.value in read
        )

    params = funcdef.params
    return funcdef.with_changes(
        params=params.with_changes(
            posonly_params=kept(params.posonly_params),
            params=kept(params.params),
            kwonly_params=kept(params.kwonly_params),
        )
    )


def _all_params(params: cst.Parameters) -> tuple:
    return (*params.posonly_params, *params.params, *params.kwonly_params)


def _unbind_given(line, wanted: frozenset[str], namer):
    """`line` (an assignment to a tuple of targets) with each given name among its targets
    replaced by a fresh name nothing reads."""

    class Unbind(cst.CSTTransformer):
        def leave_AssignTarget(self, original, updated):
            return updated.with_changes(target=_renamed(updated.target))

    def _renamed(target):
        if isinstance(target, cst.Name) and target.value in wanted:
            return target.with_changes(value=namer.temp())
        if isinstance(target, (cst.Tuple, cst.List)):
            return target.with_changes(
                elements=[e.with_changes(value=_renamed(e.value)) for e in target.elements]
            )
        return target

    return line.visit(Unbind())


def _assigns_only_given(line, wanted: frozenset[str]) -> bool:
    statement = line.body[0] if len(line.body) == 1 else None
    if not isinstance(statement, cst.Assign):
        return False
    names = usage(line).writes
    return bool(names) and all(name in wanted for name in names) and not usage(line).mutates


def _check_single_assignment(lines, wanted: frozenset[str]) -> None:
    counts: dict[str, int] = {}

    def scan(block, nested: bool) -> None:
        for line in block:
            if isinstance(line, COMPOUND):
                for inner in blocks(line):
                    scan(inner, True)
                continue
            found = usage(line)
            for name in found.mutates:
                if name in wanted:
                    raise ValueError(f"given value {name!r} is updated in place")
            for name in found.writes:
                if name in wanted:
                    if nested:
                        raise ValueError(f"given value {name!r} is assigned in a branch or loop")
                    counts[name] = counts.get(name, 0) + 1

    scan(lines, False)
    for name, count in counts.items():
        if count > 1:
            raise ValueError(f"given value {name!r} is assigned {count} times; at most once")
