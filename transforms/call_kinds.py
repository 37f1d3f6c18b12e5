"""What a call of a user function knows of its arguments: what its callee is specialized for.

The entry function is specialized for its arguments' kinds when it is called
(`s2sgrad/dispatch.py`); a callee is specialized for what the caller's own specialization knows
of the arguments at the call, when the caller is generated: which ones carry a derivative (so the
callee computes no adjoint or tangent for the others), which are numbers (shape ``()``: no shape
bookkeeping), the ranks of arrays (so that ``x[i]`` of a vector is known to be a number), and
which are lists or tuples, or may be (a list read as one array has a list of derivatives, made
one array where it is read: see `shapes.ShapeTokens.maybe_sequences`).
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing

import libcst as cst

from . import transform_cache
from .operations import Operation, names_in
from .shapes import SCALAR, ShapeTokens, infer_shapes


@dataclasses.dataclass(frozen=True)
class CallKinds:
    """What a call site knows of its arguments, which the callee is specialized for.

    `active`: the parameters whose arguments carry a derivative, in parameter order (the
    callee's ``wrt``; None: every parameter); `scalars`: those given values of shape ``()``
    (Python numbers in the caller's specialization); `ndims`: the ranks of the arrays given to
    others; `sequences`: those given a list or tuple; `unseen`: those given a value the caller
    cannot tell from a list (None: every parameter but `sequences`). `GENERIC` knows nothing:
    every parameter, any kind (a call whose arguments cannot be matched to parameters, a
    ``*args`` callee)."""

    active: tuple[str, ...] | None = None
    scalars: frozenset[str] = frozenset()
    ndims: tuple[tuple[str, int], ...] = ()
    sequences: frozenset[str] = frozenset()
    unseen: frozenset[str] | None = None

    def wrt(self, params: tuple[str, ...]) -> tuple[str, ...]:
        return params if self.active is None else self.active

    def shape_kinds(self) -> dict[str, int]:
        """The parameters of known rank, for `infer_shapes` (a number has rank 0)."""
        return {**dict(self.ndims), **dict.fromkeys(self.scalars, 0)}


GENERIC = CallKinds()


def call_kinds(
    fn: types.FunctionType,
    op: Operation,
    call_: cst.Call,
    shapes: ShapeTokens,
    carries: typing.Callable[[str], bool],
) -> CallKinds:
    """The `CallKinds` of the call `call_` (statement `op`) of the user function `fn`, in a
    caller whose shapes are `shapes` and where a name carries a derivative if `carries` says
    so. The arguments are matched to parameters as Python does; a call it cannot match
    (starred arguments, a ``*args`` or ``**kwargs`` callee, an unknown keyword) is `GENERIC`."""
    code = fn.__code__
    params = parameters(fn)
    variadic = code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    if variadic or any(arg.star for arg in call_.args) or len(op.args) > len(params):
        return GENERIC
    bound = dict(zip(params, op.args, strict=False))
    for keyword, value in op.kwargs.items():
        if keyword not in params or keyword in bound:
            return GENERIC
        bound[keyword] = value
    active = tuple(
        p for p in params if p in bound and any(carries(name) for name in names_in(bound[p]))
    )
    if not active:
        return GENERIC
    scalars = frozenset(p for p, arg in bound.items() if _is_number(arg, shapes))
    ndims = tuple(
        (p, rank)
        for p, arg in bound.items()
        if p not in scalars and isinstance(arg, cst.Name) and (rank := shapes.ndim(arg)) is not None
    )
    sequences = frozenset(p for p, arg in bound.items() if _is_sequence(arg, shapes))
    seen = scalars | sequences | {p for p, _ in ndims}
    unseen = frozenset(
        p for p in params if p not in seen and _may_be_sequence(bound.get(p), shapes)
    )
    return CallKinds(active, scalars, ndims, sequences, unseen)


def _is_sequence(arg: cst.BaseExpression, shapes: ShapeTokens) -> bool:
    return isinstance(arg, (cst.List, cst.Tuple)) or (
        isinstance(arg, cst.Name) and arg.value in shapes.sequences
    )


def _may_be_sequence(arg: cst.BaseExpression | None, shapes: ShapeTokens) -> bool:
    """An argument the caller cannot tell from a list: one it may be (a value read out of a
    container, a user function's result), or none given (the parameter's default)."""
    if arg is None:
        return True
    if isinstance(arg, cst.Name):
        return arg.value in shapes.maybe_sequences
    return not isinstance(arg, (cst.Integer, cst.Float, cst.Imaginary, cst.UnaryOperation))


def _is_number(arg: cst.BaseExpression, shapes: ShapeTokens) -> bool:
    """An argument of shape ``()``: a name or number literal the caller's shapes say so of."""
    plain = arg.expression if isinstance(arg, cst.UnaryOperation) else arg
    literal = isinstance(plain, (cst.Integer, cst.Float)) or (
        isinstance(plain, cst.Name) and plain.value in ("True", "False")
    )
    named = isinstance(arg, cst.Name) and arg.value not in ("None", "True", "False")
    return (literal or named) and shapes.is_scalar(arg)


def parameters(fn: types.FunctionType) -> tuple[str, ...]:
    """Every parameter of `fn`: the named ones, then ``*args``'s and ``**kwargs``'s names."""
    code = fn.__code__
    count = code.co_argcount + code.co_kwonlyargcount
    count += bool(code.co_flags & inspect.CO_VARARGS)
    count += bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return tuple(code.co_varnames[:count])


def bind_call(fn: types.FunctionType, args, kwargs: dict) -> list[tuple]:
    """``(parameter, argument, key)`` for each argument of a call of `fn` with positional
    `args` and keyword `kwargs`, as Python binds them: `key` is None for a named parameter,
    the position in the tuple for an argument ``*args`` takes, the keyword for one
    ``**kwargs`` takes."""
    code = fn.__code__
    positional = code.co_varnames[: code.co_argcount]
    count = code.co_argcount + code.co_kwonlyargcount
    named = code.co_varnames[:count]
    star = code.co_varnames[count] if code.co_flags & inspect.CO_VARARGS else None
    double = None
    if code.co_flags & inspect.CO_VARKEYWORDS:
        double = code.co_varnames[count + (star is not None)]
    bound = [(p, a, None) for p, a in zip(positional, args, strict=False)]
    bound += [(star, a, k) for k, a in enumerate(args[len(positional) :])]
    for keyword, value in kwargs.items():
        if keyword in named:
            bound.append((keyword, value, None))
        else:
            bound.append((double, value, keyword))
    return bound


def key_literal(key: int | str) -> cst.BaseExpression:
    """The key `bind_call` gave, as generated code writes it (``2``, ``"scale"``)."""
    return cst.Integer(str(key)) if isinstance(key, int) else cst.SimpleString(f'"{key}"')


@dataclasses.dataclass(frozen=True)
class ResultKind:
    """What is known of one value a user function returns: its exact shape (``()`` for a
    number), or only its number of dimensions."""

    shape: tuple | None = None
    ndim: int | None = None


_RESULT = ("result kinds",)  # what a callee's result kinds are, in the transform cache's key
_inferring: set = set()  # (code, kinds) whose result kinds are being found: a recursive call


def callee_result(op: Operation, call_: cst.Call, shapes: ShapeTokens):
    """What the call `call_` of a user function returns, in a caller whose shapes so far are
    `shapes` (`infer_shapes`'s `results`): the callee's own shape analysis for the arguments'
    kinds gives a `ResultKind`, a tuple of them (a ``return a, b``; None for an element not
    known), or None. A recursive call, whose result is being found, is not known."""
    fn = op.primitive
    if not isinstance(fn, types.FunctionType) or hasattr(fn, "__sg_custom_gradient__"):
        return None
    kinds = call_kinds(fn, op, call_, shapes, lambda name: True)
    if kinds is GENERIC:
        return None
    kinds = dataclasses.replace(kinds, active=None)  # (every parameter: the shapes are alike)
    what = (_RESULT, kinds)
    found = transform_cache.find(fn, what)
    if found is not None:
        return found[0]
    key = (fn.__code__, id(fn.__globals__), kinds)
    if key in _inferring:
        return None
    _inferring.add(key)
    try:
        result = _result_of(fn, kinds)
    finally:
        _inferring.discard(key)
    transform_cache.store(fn, what, (result,))
    return result


def callee_shapes(analysis, kinds: CallKinds) -> ShapeTokens:
    """The shapes of a callee's normal form in its specialization for `kinds` (no number
    checks: each caller's mutation walk checks its calls, see `mutation`)."""
    return infer_shapes(
        analysis.nf,
        analysis.activity,
        analysis.namespace,
        None,
        kinds.shape_kinds(),
        containers=kinds.sequences,
        results=callee_result,
        maybe_params=kinds.unseen,
    )


def _result_of(fn: types.FunctionType, kinds: CallKinds):
    from .pipeline import GradSpec, analyze  # the pipeline imports this module

    try:  # (nothing active: only the shapes are wanted, not the derivative's rules)
        analysis = analyze(fn, GradSpec(wrt=()))
    except Exception:  # (no source, a construct refused, ...): not known. A call that carries
        return None  # a derivative reports it where the callee is differentiated
    nf = analysis.nf
    shapes = callee_shapes(analysis, kinds)

    def kind(expr: cst.BaseExpression) -> ResultKind | None:
        token = shapes.of(expr)
        if token == SCALAR or token[0] == "shape":
            return ResultKind(shape=token[1], ndim=len(token[1]))
        ndim = shapes.ndim(expr)
        return None if ndim is None else ResultKind(ndim=ndim)

    output = _packed(nf, nf.output)
    if isinstance(output, cst.Tuple):  # (not a list: a caller may write into one)
        if any(isinstance(e, cst.StarredElement) for e in output.elements):
            return None
        return tuple(kind(element.value) for element in output.elements)
    return kind(output) if output is not None else None


def _packed(nf, output: cst.BaseExpression | None):
    """The tuple literal a returned name holds (``_t4 = (x, v)``, assigned once, as normal
    form writes ``return x, v``), else `output` itself."""
    if not isinstance(output, cst.Name):
        return output
    values = [
        statement.value
        for statement in nf.statements
        if isinstance(statement, cst.Assign)
        for target in statement.targets
        if isinstance(target.target, cst.Name) and target.target.value == output.value
    ]
    if len(values) == 1 and isinstance(values[0], cst.Tuple):
        return values[0]
    return output
