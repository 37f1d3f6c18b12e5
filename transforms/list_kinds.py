"""Which values of a normal form may be Python lists or tuples where they are read.

NumPy reads a list passed to ``np.var`` or ``-`` as one array, and so must its derivative: the
derivative of a list is a list of derivatives (each with the directions first in a batched
sweep), which the forward and reverse passes make one array where the value is read as one
(`sequences.lists_read_as_arrays`, `tangent_rules.TangentContext.as_array`). A name that is a
list wherever it is assigned is found by `sequences.sequence_names`; this analysis finds every
name that *may* be one, so that the conversion (which leaves an array as it is) is written for
it too. A value may be a list when it is a parameter given one or given a value its caller
could not tell from one, a user function's result of unknown kind, an item read out of such a
value or out of a container some of whose items may be lists (``rows[0]``, ``items.pop()``,
``p.W``), a primitive's list of arrays (``np.split``), or a copy, join or repeat of one.

It is an abstract interpretation over the operations in order, repeated until nothing
changes. Each name has a kind: `ARRAY` (an array or a number, never a list), `UNSEEN` (may be
anything), or `Items` (a list, tuple, dict or record, with the kinds of its items by key where
it was built from a literal, and the join of them all for any other read). Without it, every
item of every container would have to be taken for a possible list: the generated code would
convert values a reader can see are arrays (the arrays a reverse loop saves and pops)."""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Iterable, Mapping

import libcst as cst
import numpy as np

from s2sgrad import runtime

from .operations import (
    APPEND,
    COPY,
    NO_DERIVATIVE,
    PACK,
    POP,
    SETITEM,
    Operation,
    evaluate_spelling,
)

ARRAY = "array"
UNSEEN = "unseen"
_MAX_DEPTH = 4  # containers nested deeper are `UNSEEN` (bounds the walk's lattice)


@dataclasses.dataclass(frozen=True)
class Items:
    """A container's kind: `keys` maps each key's spelling (``0``, ``"W"``) to its item's kind
    when it was built from a literal and not grown or written since (None otherwise); `each`
    is the join of every item's kind, what any other read gives (None: no item yet)."""

    keys: tuple[tuple[str, object], ...] | None
    each: object


# values with no derivative that are never lists (``.shape`` is a tuple)
_NO_DERIVATIVE_ARRAYS = frozenset(("comparison", ".astype", ".ndim", ".size", ".dtype"))
# primitives whose result is a list of arrays
_LISTS_OF_ARRAYS = frozenset(
    (np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit, np.atleast_1d, np.atleast_2d,
     np.atleast_3d, np.meshgrid, np.broadcast_arrays)
)  # fmt: skip
# primitives that may give back one of their arguments, a list as well as an array
_MAY_GIVE_AN_ARGUMENT = frozenset((max, min, sum))


def join(a, b):
    """The kind of a value that is of kind `a` or of kind `b` (None: not assigned yet)."""
    if a is None or a == b:
        return b
    if b is None:
        return a
    if isinstance(a, Items) and isinstance(b, Items):
        keys = None
        if a.keys is not None and b.keys is not None:
            if [k for k, _ in a.keys] == [k for k, _ in b.keys]:
                keys = tuple((k, join(v, w)) for (k, v), (_, w) in zip(a.keys, b.keys, strict=True))
        return _bounded(Items(keys, join(a.each, b.each)))
    return UNSEEN


def _bounded(kind, depth: int = 0):
    if not isinstance(kind, Items):
        return kind
    if depth >= _MAX_DEPTH:
        return UNSEEN
    keys = kind.keys
    if keys is not None:
        keys = tuple((k, _bounded(v, depth + 1)) for k, v in keys)
    return Items(keys, _bounded(kind.each, depth + 1))


def may_be_lists(
    operations: Iterable[Operation],
    params: Iterable[str],
    containers: frozenset[str],
    unseen_params: frozenset[str] | None,
    ndim: Callable[[str], int | None],
    namespace: Mapping[str, object],
) -> frozenset[str]:
    """The names that may hold a list or tuple (or another container) where they are read.

    `containers`: the parameters given a list, tuple or dict (their items are of any kind);
    `unseen_params`: those given a value the caller could not tell from a list (None: every
    parameter but `containers`); `ndim`: the rank shape analysis knows for a name (a user
    function's result of known rank is an array)."""
    operations = list(operations)
    kinds: dict[str, object] = {}
    for param in params:
        if param in containers:
            kinds[param] = Items(None, UNSEEN)
        elif unseen_params is None or param in unseen_params:
            kinds[param] = UNSEEN
        else:
            kinds[param] = ARRAY
    for _ in range(len(operations) + 2):
        changed = False
        for op in operations:
            for target, kind in _results(op, kinds, ndim, namespace):
                new = join(kinds.get(target), kind)
                if new != kinds.get(target):
                    kinds[target] = new
                    changed = True
        if not changed:
            break
    else:  # (not reached: the lattice is finite; any name still changing may be anything)
        return frozenset(kinds)
    return frozenset(name for name, kind in kinds.items() if kind is not ARRAY)


def _results(op: Operation, kinds, ndim, namespace) -> list[tuple[str, object]]:
    """``(target, kind)`` for what `op` assigns, given the kinds so far."""

    def of(expr, unknown=None):
        """The kind of an argument; a name not assigned yet is `unknown` (None: the walk
        comes back to it once it is; a loop counter or a global's name never is)."""
        if isinstance(expr, cst.Name):
            if expr.value in kinds:
                return kinds[expr.value]
            if isinstance(namespace.get(expr.value), (list, tuple, dict)):
                return Items(None, UNSEEN)  # a global's list (its items: of any kind)
            return unknown
        if isinstance(expr, (cst.List, cst.Tuple)):  # (normal form's literals hold atoms)
            each = None
            for element in expr.elements:
                inner = element.value
                constant = isinstance(inner, cst.Name) and inner.value in ("None", "True", "False")
                each = join(each, ARRAY if constant else of(inner, ARRAY))
            return _bounded(Items(None, each))
        if isinstance(expr, cst.Dict):
            return Items(None, UNSEEN)
        return ARRAY

    primitive = op.primitive
    if primitive is SETITEM or primitive is APPEND:
        base = of(op.args[0], ARRAY)
        if base is ARRAY:
            return []  # a write into an array
        return [(op.targets[0], join(base, Items(None, of(op.args[1]))))]
    if len(op.targets) != 1:  # unpacked: a primitive's arrays, or anything else's values
        if op.rule is not None and not op.user:
            return [(t, ARRAY) for t in op.targets]
        return [(t, ARRAY if ndim(t) is not None else UNSEEN) for t in op.targets]
    target = op.targets[0]
    if primitive is COPY:
        return [(target, of(op.args[0]))]
    if primitive is PACK:
        keys = tuple(
            (cst.Module(()).code_for_node(key), of(arg))
            for key, arg in zip(op.kwargs.values(), op.args, strict=True)
        )
        each = None
        for _, kind in keys:
            each = join(each, kind)
        return [(target, _bounded(Items(keys, each)))]
    if primitive is POP:
        return [(target, _item(of(op.args[0]), None))]
    if primitive is operator.getitem and op.index is not None:
        return [(target, _item(of(op.args[0]), op.index))]
    if op.user or primitive is None:  # a user function's result, an unknown method's
        return [(target, ARRAY if ndim(target) is not None else UNSEEN)]
    if primitive is NO_DERIVATIVE and op.name in _NO_DERIVATIVE_ARRAYS:
        return [(target, ARRAY)]  # ``x > 0``, ``x.ndim``: a mask or a number
    if op.name == "constant" and op.args:
        spelled = op.args[0]
        if not isinstance(spelled, (cst.Name, cst.Attribute, cst.Subscript)):
            return [(target, of(spelled, ARRAY))]  # a literal
        found, value = evaluate_spelling(spelled, namespace)
        return [(target, UNSEEN if not found or isinstance(value, (list, tuple, dict)) else ARRAY)]
    if primitive in _LISTS_OF_ARRAYS:
        return [(target, Items(None, ARRAY))]
    operands = [of(arg, ARRAY) for arg in op.args]
    if primitive in _MAY_GIVE_AN_ARGUMENT and operands:
        # max(items), sum(items, start): an item, or the start; max(a, b): an argument
        whole = len(operands) == 1 or primitive is sum
        found = _item(operands[0], None) if whole else operands[0]
        for kind in operands[1:]:
            found = join(found, kind)
        return [(target, ARRAY if found in (None, ARRAY) else UNSEEN)]
    if not _gives_an_array(op):
        return [(target, UNSEEN)]  # a helper of generated code: a list, a container adjoint
    if primitive in (operator.add, operator.mul) and any(k is not ARRAY for k in operands):
        if primitive is operator.add and ARRAY in operands:
            return [(target, ARRAY)]  # an array plus a list: NumPy's sum
        if primitive is operator.add and all(isinstance(k, Items) for k in operands):
            each = None
            for kind in operands:
                each = join(each, kind.each)
            return [(target, _bounded(Items(None, each)))]  # a join: the items of both
        product = primitive is operator.mul and len(op.args) == 2
        if product and op.args[0].deep_equals(op.args[1]):
            return [(target, ARRAY)]  # ``v * v``: a list times a list is no repeat
        if product:  # ``3 * [None]``: a list repeated by an integer literal
            for count, items in ((op.args[0], operands[1]), (op.args[1], operands[0])):
                if isinstance(count, cst.Integer) and isinstance(items, Items):
                    return [(target, Items(None, items.each))]
        return [(target, UNSEEN)]  # a join or a repeat (``L * n``), or an array
    return [(target, ARRAY)]


def _gives_an_array(op: Operation) -> bool:
    """A primitive with a rule whose result is an array or a number (`_LISTS_OF_ARRAYS`
    aside): a NumPy, SciPy, ``math`` or operator function, a builtin, a user's primitive, a
    helper of generated code that computes arrays. Other helpers of generated code (that
    second order differentiates again) may give a list or a container adjoint (``unstack``,
    ``part``, ``match_shape`` of a list's adjoint)."""
    rule = op.rule
    if rule is None:
        return False
    module = rule.name.rpartition(".")[0]
    if module.startswith("s2sgrad.runtime"):
        return module in _NUMERIC_RUNTIME or op.primitive in _ARRAY_HELPERS
    return True


_NUMERIC_RUNTIME = frozenset(
    "s2sgrad.runtime." + module
    for module in ("activations", "fft_helpers", "matrix_helpers", "cumulative_products")
)
# the helpers of generated code (that second order differentiates again) whose result is
# always one array or a number, whatever their arguments
_ARRAY_HELPERS = frozenset(
    (
        runtime.unbroadcast,
        runtime.unreduce,
        runtime.matmul_left,
        runtime.matmul_right,
        runtime.reduced_count,
        runtime.safe_divide,
        runtime.reverse_cumsum,
        runtime.extremum_weights,
        runtime.sort_order,
        runtime.element_numbers,
        runtime.tensordot_adjoint_a,
        runtime.tensordot_adjoint_b,
        runtime.cross_adjoint_a,
        runtime.cross_adjoint_b,
        runtime.kron_adjoint_a,
        runtime.kron_adjoint_b,
        runtime.cumprod_adjoint,
        runtime.trace_adjoint,
        runtime.lift_tangent,
        runtime.batch_unbroadcast,
        runtime.batch_matmul_left,
        runtime.batch_matmul_right,
        runtime.matmul_tangent,
        runtime.tangent_sum,
        runtime.batch_array,
        runtime.batch_sum,
    )
)


def _item(kind, index: tuple | None):
    """The kind of an item read out of a value of kind `kind` with the subscript elements
    `index` (None: an item it is not known which, as ``pop()`` gives)."""
    if kind is ARRAY or kind is None:
        return kind
    if not isinstance(kind, Items):
        return UNSEEN
    if index is not None and len(index) == 1 and isinstance(index[0].slice, cst.Slice):
        return kind if kind.keys is None else Items(None, kind.each)  # a slice of a list
    if index is not None and len(index) == 1 and kind.keys is not None:
        spelled = cst.Module(()).code_for_node(index[0].slice.value)
        for key, item in kind.keys:
            if key == spelled:
                return item
    return kind.each  # (None: the container is filled later in the walk)
