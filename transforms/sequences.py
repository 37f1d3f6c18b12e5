"""Which names of a normal form hold a Python list or tuple wherever they are assigned.

``+`` and ``*`` mean different things for lists and arrays: ``xs + [v]`` joins and
``xs * 2`` repeats, where ``x + v`` and ``x * 2`` work elementwise. Their derivatives differ
as much (a joined list's adjoint is split between its operands, a repeated one's is summed
over its repeats; a tangent is joined or repeated), so the forward and reverse passes must
know which operations join or repeat. This analysis finds them from what the normal form
shows: a name is a *sequence* when every assignment to it (a loop header's back edge
included) is a list or tuple literal (a comprehension's ``_items = []`` too), a copy of a
sequence, a join of two sequences or a sequence repeated by an integer literal, or when it is
a parameter the specialization was called with a list or tuple for. What it cannot tell (a
callee's result, a generic specialization) is not a sequence: there, reverse mode's runtime
helpers raise a clear error for a join or a repeat rather than treat it as arithmetic, and
forward mode decides at run time for the names that *may* be sequences (`maybe`: a user
function's result and what is computed from it), padding a joined tangent with zeros."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping

import libcst as cst

from .templates import takes_one_array

# ``+`` and ``*``: on lists and tuples they join and repeat, or read a list as one array,
# by the other operand
LIST_OPERATORS = (operator.add, operator.mul)


def sequence_names(
    statements: Iterable[cst.BaseSmallStatement],
    containers: frozenset[str] = frozenset(),
    maybe: bool = False,
) -> frozenset[str]:
    """The sequences among the names `statements` assign, given the parameters that are
    `containers` (lists, tuples or dicts: only those assigned nowhere else count). With
    `maybe`, the names that may be ones, given `containers` that may be (a user function's
    results): a name some assignment of which may be a sequence."""
    assignments: dict[str, list[cst.BaseExpression]] = {}
    for statement in statements:
        if not isinstance(statement, cst.Assign):
            continue
        for target in statement.targets:
            if isinstance(target.target, cst.Name):
                assignments.setdefault(target.target.value, []).append(statement.value)
    if maybe:  # the least set closed under the rules, from the names that may be
        found = set(containers)
        changed = True
        while changed:
            before = len(found)
            found.update(
                name
                for name, values in assignments.items()
                if any(_is_sequence(value, found) for value in values)
            )
            changed = len(found) > before
        return frozenset(found)
    # the greatest set closed under the rules: start from every candidate, drop the names
    # with an assignment that is not a sequence, until nothing changes (so a loop header
    # assigned ``hs = []`` before the loop and ``hs = hs + [h]`` in it stays in)
    found = {name for name, values in assignments.items() if values} | (
        set(containers) - set(assignments)
    )
    changed = True
    while changed:
        changed = False
        for name in list(found):
            if name in assignments and not all(
                _is_sequence(value, found) for value in assignments[name]
            ):
                found.discard(name)
                changed = True
    return frozenset(found)


def _is_sequence(value: cst.BaseExpression, found: set[str]) -> bool:
    if isinstance(value, (cst.List, cst.Tuple)):
        return True
    if isinstance(value, cst.Name):
        return value.value in found
    return joins(value, found) or repeats(value, found) is not None


def joins(value: cst.BaseExpression, sequences) -> bool:
    """``a + b`` with both operands sequences: a join."""
    return (
        isinstance(value, cst.BinaryOperation)
        and isinstance(value.operator, cst.Add)
        and all(_names_sequence(side, sequences) for side in (value.left, value.right))
    )


def repeats(value: cst.BaseExpression, sequences) -> int | None:
    """For ``items * n`` or ``n * items`` with `items` a sequence and `n` an integer literal,
    the position of `items` (0 or 1); None for anything else."""
    if not (isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply)):
        return None
    for position, (side, other) in enumerate(
        ((value.left, value.right), (value.right, value.left))
    ):
        if _names_sequence(side, sequences) and isinstance(other, cst.Integer):
            return position
    return None


def _names_sequence(expr: cst.BaseExpression, sequences) -> bool:
    return isinstance(expr, (cst.List, cst.Tuple)) or (
        isinstance(expr, cst.Name) and expr.value in sequences
    )


def lists_read_as_arrays(bound: Mapping[str, cst.BaseExpression], op, shapes) -> dict:
    """The arguments a rule template of `op` is instantiated with, each list or tuple operand
    of an elementwise operation made one array as NumPy made it (``v * L`` is an array): the
    template's own arithmetic (``g * y``) would otherwise join, repeat, or fail on a list.
    So is each operand that may be a list (`ShapeTokens.maybe_sequences`), by
    ``list_as_array``, which leaves anything else as it is.

    The same holds for a list local passed where a NumPy function reads one array
    (``np.dot(rows, x)``: `templates.takes_one_array`), or as an entry of a sequence of
    arrays (each of ``np.einsum``'s operands, ``np.concatenate([rows, x])``): the rule's
    helpers (``dot_adjoint_b(g, rows, x)``) get the array. Differentiated again, the
    derivative code then hands helpers the tangent of an array, directions first, never a
    list of batched tangents, which a helper reading it as one array would put the
    directions of in the wrong axis (``sg.hessian``, ``sg.jacobian(sg.grad(f))``)."""
    rule = op.rule
    if rule is None or op.targets[0] in shapes.sequences:
        return dict(bound)
    if rule.elementwise:
        return {param: as_array_if_list(arg, shapes) for param, arg in bound.items()}
    arrays = dict(bound)
    for param, arg in bound.items():
        if takes_one_array(rule.primitive, None, param):
            arrays[param] = as_array_if_list(arg, shapes)
        elif _entries_are_arrays(rule, param) and isinstance(arg, (cst.Tuple, cst.List)):
            entries = tuple(
                e.with_changes(value=as_array_if_list(e.value, shapes)) for e in arg.elements
            )
            arrays[param] = arg.with_changes(elements=entries)
    return arrays


def _entries_are_arrays(rule, param: str) -> bool:
    """`param` of a NumPy function takes a sequence of arrays (``*operands``, ``arrays``):
    each entry of it is read as one array."""
    return param in rule.sequences and rule.name.startswith("numpy.")


def as_array_if_list(arg: cst.BaseExpression, shapes) -> cst.BaseExpression:
    """`arg` as NumPy reads it where it takes one array: `arg` converted when it is a name
    that may hold a list or tuple (`ShapeTokens.maybe_sequences`), else as it is."""
    if isinstance(arg, cst.Name) and arg.value in shapes.maybe_sequences:
        return _read_as_array(arg, shapes)
    return arg


def _read_as_array(name: cst.Name, shapes) -> cst.Call:
    """``np.asarray(L)`` for a list, ``list_as_array(v)`` for a value that may be one."""
    if name.value in shapes.sequences:
        return cst.Call(cst.Attribute(cst.Name("np"), cst.Name("asarray")), (cst.Arg(name),))
    return cst.Call(cst.Name("list_as_array"), (cst.Arg(name),))
