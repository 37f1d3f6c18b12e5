"""Pass 6, shapes: which values provably have the same shape.

An analysis over a `NormalForm`, used only to leave out shape bookkeeping: the reverse pass
reduces an adjoint to its argument's shape (``unbroadcast``) unless this analysis proves the
argument already has the result's shape. Each value gets a *shape token*: `SCALAR` for Python
numbers (shape ``()``), ``("shape", s)`` for constants whose shape is known, or a symbol
standing for "some shape" (two values with the same symbol have the same shape). Elementwise
primitives give their operands' common token, full reductions give `SCALAR`, anything else
gets a fresh symbol. Parameters are `SCALAR` when the function is specialized for Python
numbers, symbols otherwise.
"""

from __future__ import annotations

import itertools
import numbers
import operator
from collections.abc import Mapping

import libcst as cst
import numpy as np
from s2sgrad.runtime import match_shape, matmul_left, matmul_right

from .activity import Activity
from .anf import NormalForm, is_literal
from .list_kinds import may_be_lists
from .operations import APPEND, COPY, SETITEM, Operation, evaluate_spelling
from .sequences import LIST_OPERATORS, sequence_names

SCALAR = ("shape", ())
NONE = ("none",)  # ``None``, as a name is bound before a loop that first assigns it


class ShapeTokens:
    """Shape tokens of every name in one normal form (see the module docstring)."""

    def __init__(
        self,
        tokens: dict[str, object],
        namespace: Mapping[str, object],
        ndims: Mapping[str, int] | None = None,
    ):
        self.ndims = dict(ndims or {})
        self._tokens = tokens  # filled in by infer_shapes as it walks the statements
        self._first: dict[object, str] = {}
        self._namespace = namespace
        self._fresh = itertools.count()
        self._token_ndims: dict[object, int] = {}  # symbols whose rank is known
        # names that are lists or tuples wherever assigned (`sequences`): ``+`` and ``*``
        # of them join and repeat
        self.sequences: frozenset[str] = frozenset()
        # and those that may be: a user function's result, a parameter or an item read out
        # of a value whose kind this function cannot see, and copies, joins and repeats of one
        self.maybe_sequences: frozenset[str] = frozenset()

    def of(self, expr: cst.BaseExpression) -> object:
        if isinstance(expr, cst.Name) and expr.value in self._tokens:
            return self._tokens[expr.value]
        if _is_none(expr):
            return NONE  # not a number: a name bound to None first has no shape yet
        if is_literal(expr):
            return SCALAR
        found, value = evaluate_spelling(expr, self._namespace)
        if found and isinstance(value, numbers.Number):
            return SCALAR
        if found and isinstance(value, np.ndarray):
            return ("shape", value.shape)
        return ("symbol", next(self._fresh), id(self))

    def representative(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        """The first-defined name with `expr`'s shape: helpers that read only a shape use it,
        so they keep no later (larger, or otherwise dead) value alive."""
        if isinstance(expr, cst.Name):
            first = self._first.get(self._tokens.get(expr.value))
            if first is not None:
                return cst.Name(first)
        return expr

    def ndim(self, expr: cst.BaseExpression) -> int | None:
        """The number of dimensions of `expr` when known (array parameters, numbers, NumPy
        constants, and values computed from them by the primitives `_result_ndim` knows)."""
        token = self.of(expr)
        if token[0] == "shape":
            return len(token[1])
        if isinstance(expr, cst.Name) and expr.value in self.ndims:
            return self.ndims[expr.value]
        return self._token_ndims.get(token)

    def is_integer_index(self, element: cst.SubscriptElement) -> bool:
        """A subscript element that picks one position: an integer literal or a number."""
        inner = element.slice
        if not isinstance(inner, cst.Index):
            return False
        value = inner.value
        if isinstance(value, cst.UnaryOperation):
            value = value.expression
        if isinstance(value, cst.Integer):
            return True
        return (
            isinstance(value, cst.Name) and value.value not in ("None",) and self.is_scalar(value)
        )

    def same(self, a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
        return self.of(a) == self.of(b)

    def is_scalar(self, expr: cst.BaseExpression) -> bool:
        return self.of(expr) == SCALAR


def infer_shapes(
    nf: NormalForm,
    activity: Activity,
    namespace: Mapping[str, object],
    scalar_params: frozenset[str] | None = None,
    array_ndims: Mapping[str, int] | None = None,
    shaped_like: Mapping[str, str] | None = None,
    array_shapes: Mapping[str, tuple] | None = None,
    given: frozenset[str] = frozenset(),
    containers: frozenset[str] = frozenset(),
    results=None,
    maybe_params: frozenset[str] | None = frozenset(),
) -> ShapeTokens:
    """Shape tokens for `nf`; `scalar_params` are parameters known to be Python numbers
    (None: a callee, compiled once for every call site, whose callers' mutation walks check
    each call with the kinds of its arguments: see `mutation`);
    `shaped_like` maps parameters to the name of a value they have the shape of (the
    parameter takes that value's token from its assignment on); `array_shapes` gives the
    exact shapes of array parameters in a specialization for shapes (a tape's recording), so
    that elementwise results and products of them get exact shapes too; `given` names values
    the caller hands over (`GradSpec.given`): after the parameters, they are the preferred
    representatives of their shapes; `containers` are the parameters called with a list,
    tuple or dict, from which `ShapeTokens.sequences` starts (see `sequences`), and
    `maybe_params` those that may have been (None: every other parameter, for a callee
    compiled for any call), from which `ShapeTokens.maybe_sequences` starts; `results`
    gives what a call of a user function returns, from the call (its statement's value) and
    the shapes so far: a `ResultKind`, a tuple of them for a tuple, or None when not known
    (`call_kinds.callee_result`).

    A name assigned in several places (both branches of an ``if``, before a loop and around
    its back edge) keeps a token only if every assignment gives it the same one; this is
    found by repeating the walk until the tokens of such names stop changing."""
    if scalar_params is not None:  # the first moment the arguments' types are known
        for check in nf.number_checks:
            check.verify(scalar_params, array_ndims or {})
    scalar_params = scalar_params or frozenset()
    counts: dict[str, int] = {}
    for _, op in activity.operations:
        for target in op.targets:
            counts[target] = counts.get(target, 0) + 1
    varying = {name for name, count in counts.items() if count > 1}
    unknown: set[str] = set()
    ndims = dict(array_ndims or {})
    exact = dict(array_shapes or {})
    ndims.update((name, len(shape)) for name, shape in exact.items())
    sequences = sequence_names(nf.statements, containers)
    calls = {target for _, op in activity.operations if op.user for target in op.targets}
    operations = [op for _, op in activity.operations]
    maybe_sequences = sequences | sequence_names(nf.statements, calls, maybe=True)
    user_calls = {}  # id(op) -> the call, for `results`
    if results is not None:
        for statement in nf.statements:
            op = activity.by_statement.get(id(statement))
            if op is not None and op.user and isinstance(statement.value, cst.Call):
                user_calls[id(op)] = statement.value
    callees = _CalleeResults(results, user_calls)
    for _ in range(len(varying) + 4):
        shapes, disagreeing = _walk(
            nf,
            activity,
            namespace,
            scalar_params,
            unknown,
            ndims,
            shaped_like or {},
            exact,
            maybe_sequences,
            callees,
        )
        maybe = sequences | may_be_lists(
            operations,
            nf.params,
            containers,
            maybe_params,
            lambda name, shapes=shapes: shapes.ndim(cst.Name(name)),
            namespace,
        )
        if maybe != maybe_sequences:  # (their joins have no elementwise token: walk again)
            maybe_sequences = maybe
            continue
        if disagreeing <= unknown:
            break
        # a name whose assignments disagree (``s = 0.0`` before a loop, ``s = s + v`` in it)
        # has some shape from its first use on: walk again with a symbol for it throughout
        unknown |= disagreeing
    # representatives must be defined on every path: parameters and top-level assignments
    everywhere = set(nf.params) | {
        name
        for line in nf.funcdef.body.body
        if isinstance(line, cst.SimpleStatementLine) and isinstance(line.body[0], cst.Assign)
        for target in line.body[0].targets
        if isinstance(target.target, cst.Name)
        for name in [target.target.value]
    }
    # dicts keep definition order: parameters first; values the caller hands over (`given`)
    # come before the rest, which a backward sweep would have to recompute to read
    for preferred in (set(nf.params), given, everywhere):
        for name, token in shapes._tokens.items():
            if name in preferred:
                shapes._first.setdefault(token, name)
    shapes.sequences = sequences
    shapes.maybe_sequences = maybe_sequences
    return shapes


def _walk(
    nf,
    activity,
    namespace,
    scalar_params,
    unknown,
    array_ndims,
    shaped_like,
    exact,
    sequences,
    callees,
):
    """One pass over the statements: the tokens, and the names assigned disagreeing ones."""
    alike = {name: param for param, name in shaped_like.items() if param in nf.params}
    symbols = itertools.count()
    tokens: dict[str, object] = {}
    ranks: dict[object, int] = {}
    for param in nf.params:
        scalar = param in scalar_params or array_ndims.get(param) == 0
        if scalar:
            tokens[param] = SCALAR
        elif param in exact:
            tokens[param] = ("shape", tuple(exact[param]))
        else:
            tokens[param] = ("symbol", next(symbols))
        if param in array_ndims:
            ranks[tokens[param]] = array_ndims[param]
    for target in _loop_targets(nf.funcdef.body.body):
        tokens[target] = SCALAR  # loops run over ranges
    for name in unknown:
        tokens[name] = ("symbol", next(symbols))
    shapes = ShapeTokens(tokens, namespace, array_ndims)
    shapes._token_ndims = ranks
    disagreeing: set[str] = set()
    for _, op in activity.operations:
        if op.primitive in (SETITEM, APPEND) or op.name == "list.pop":
            continue  # writing into an array keeps its shape
        token = _result_token(op, shapes)
        if op.user:
            token = callees.token(op, shapes, symbols, ranks)
        if op.primitive in LIST_OPERATORS and set(op.targets) & sequences:
            token = None  # a list joined or repeated: not its operands' length
        for target in op.targets:
            if target in unknown:
                continue
            single = len(op.targets) == 1 and token is not None
            new = token if single else ("symbol", next(symbols))
            if target in tokens and tokens[target] != new:
                new = ("symbol", next(symbols))  # assignments disagree
                disagreeing.add(target)
            elif len(op.targets) == 1 and new[0] == "symbol" and new not in ranks:
                rank = _result_ndim(op, shapes)
                if rank is not None:
                    ranks[new] = rank
            tokens[target] = new
            if target in alike and target not in disagreeing:
                tokens[alike[target]] = new
    return shapes, disagreeing


def _loop_targets(lines) -> list[str]:
    targets = []
    for line in lines:
        if isinstance(line, cst.For):
            targets.append(line.target.value)
        if isinstance(line, (cst.For, cst.While, cst.If)):
            targets += _loop_targets(line.body.body)
        if isinstance(line, cst.If) and line.orelse is not None:
            targets += _loop_targets(line.orelse.body.body)
    return targets


_MATMUL = (operator.matmul, np.matmul, np.dot)


def _result_ndim(op: Operation, shapes: ShapeTokens) -> int | None:
    """The rank of `op`'s result when its arguments' ranks are known: elementwise primitives
    (the largest), ``@``/``matmul``/``dot`` of vectors and matrices."""
    rule = op.rule
    if rule is None or op.index is not None:
        return None
    ranks = [shapes.ndim(arg) for arg in op.args if not _is_none(arg)]
    if None in ranks or not ranks:
        return None
    if rule.elementwise:
        return max(ranks)
    if op.primitive in _MATMUL and len(ranks) == 2 and max(ranks) <= 2:
        return max(ranks) + min(ranks) - 2 if min(ranks) == 1 else 2 if ranks == [2, 2] else None
    return None


# helpers whose result has exactly the shape of one argument (their adjoint argument arrives
# with the exact shape of the result it belongs to): helper -> that argument's position
_SHAPED_LIKE = {match_shape: 1, matmul_left: 1, matmul_right: 2}


def _result_token(op: Operation, shapes: ShapeTokens) -> object | None:
    if op.primitive is COPY or (op.name == "constant" and op.args):
        return shapes.of(op.args[0])
    position = _SHAPED_LIKE.get(op.primitive) if callable(op.primitive) else None
    if position is not None and len(op.args) > position:
        return shapes.of(op.args[position])
    if op.index is not None:
        element = _element_token(shapes.of(op.args[0]), op.index)
        if element is not None:
            return element
        ndim = shapes.ndim(op.args[0])
        picks = all(shapes.is_integer_index(element) for element in op.index)
        if picks and ndim is not None and ndim == len(op.index):
            return SCALAR  # one element of an array
        return None
    rule = op.rule
    if rule is None:
        return None
    if rule.elementwise:
        operands = {shapes.of(arg) for arg in op.args if not _is_none(arg)}
        if any(token[0] == "tuple" for token in operands):
            return None  # a tuple's elements as one array: not the tuple's token
        operands.discard(SCALAR)
        if not operands:
            return SCALAR
        if len(operands) == 1:
            return operands.pop()
        if all(token[0] == "shape" for token in operands):
            return _exact(np.broadcast_shapes, *(token[1] for token in operands))
        return None
    if rule.reduction and _reduces_everything(op):
        return SCALAR
    if op.primitive in _MATMUL and _result_ndim(op, shapes) == 0:
        return SCALAR  # vector @ vector
    if op.primitive in _MATMUL and len(op.args) == 2 and not op.kwargs:
        a, b = (shapes.of(arg) for arg in op.args)
        if a[0] == "shape" and b[0] == "shape" and op.primitive is not np.dot:
            return _exact(_matmul_shape, a[1], b[1])
        # a product with a square constant matrix keeps the other operand's shape (a vector
        # or a stack of matrices it multiplies must match it, or the product fails)
        if _is_square_matrix(a) and shapes.ndim(op.args[1]):
            return b
        if _is_square_matrix(b) and shapes.ndim(op.args[0]):
            return a
    return None


class _CalleeResults:
    """The tokens of user functions' results (see `infer_shapes`'s `results`): a number,
    an exact shape or a rank for one value, and for a tuple a token ``("tuple", elements,
    n)`` that only its integer-indexed reads look into (``x, v = step(...)``; any other use
    of it is some value)."""

    def __init__(self, results, calls: dict):
        self.results = results
        self.calls = calls

    def token(self, op: Operation, shapes: ShapeTokens, symbols, ranks: dict) -> object | None:
        call = self.calls.get(id(op))
        if call is None:
            return None
        kind = self.results(op, call, shapes)
        if isinstance(kind, tuple):
            elements = tuple(self._single(k, symbols, ranks) for k in kind)
            return ("tuple", elements, next(symbols))
        return None if kind is None else self._single(kind, symbols, ranks)

    @staticmethod
    def _single(kind, symbols, ranks: dict) -> object:
        if kind is None:
            return ("symbol", next(symbols))
        if kind.shape is not None:
            return ("shape", kind.shape)
        symbol = ("symbol", next(symbols))
        ranks[symbol] = kind.ndim
        return symbol


def _element_token(token, index: tuple) -> object | None:
    """The token of ``t[k]`` for a tuple token and an integer literal ``k``, else None."""
    if token[0] != "tuple" or len(index) != 1 or not isinstance(index[0].slice, cst.Index):
        return None
    value = index[0].slice.value
    if not isinstance(value, cst.Integer):
        return None
    position = int(value.value)
    elements = token[1]
    return elements[position] if position < len(elements) else None


def _exact(shape_of, *shapes) -> object | None:
    """The token of an exact result shape, or None where the shapes do not combine (the call
    would fail: leave that to run time)."""
    try:
        return ("shape", tuple(shape_of(*shapes)))
    except ValueError:
        return None


def _matmul_shape(a: tuple, b: tuple) -> tuple:
    """The shape of ``x @ y`` for `x` of shape `a` and `y` of shape `b` (NumPy's rules)."""
    if not a or not b:
        raise ValueError("matmul of a scalar")
    left = a if len(a) > 1 else (1, *a)
    right = b if len(b) > 1 else (*b, 1)
    if left[-1] != right[-2]:
        raise ValueError("matmul: inner dimensions differ")
    shape = (*np.broadcast_shapes(left[:-2], right[:-2]), left[-2], right[-1])
    if len(a) == 1:
        shape = shape[:-2] + shape[-1:]
    if len(b) == 1:
        shape = shape[:-1]
    return shape


def _is_square_matrix(token) -> bool:
    return token[0] == "shape" and len(token[1]) == 2 and token[1][0] == token[1][1]


def _reduces_everything(op: Operation) -> bool:
    if len(op.args) > 1:
        return False
    axis = op.kwargs.get("axis")
    keepdims = op.kwargs.get("keepdims")
    no_axis = axis is None or (isinstance(axis, cst.Name) and axis.value == "None")
    no_keep = keepdims is None or (isinstance(keepdims, cst.Name) and keepdims.value == "False")
    return no_axis and no_keep


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"
