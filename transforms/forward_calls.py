"""Calls to user functions in forward mode: each callee gets its own generated JVP function.

For a user function ``g(a, b)`` called by a function being differentiated in forward mode,
this module builds ``_jvp_g(a, b, *, ta=0.0, tb=0.0)`` returning ``(result, tangent)``, with
the same passes as `sg.jvp`, compiled once per specialization (cached) and shared by every call
site asking for it. As in reverse mode, it is specialized for what the call site knows of its
arguments (`CallKinds`): numbers and ranks, and the parameters whose arguments carry a tangent,
which are the only tangent parameters it has (``g(x, dt)`` with a constant ``dt`` gets ``tx``
only). As in reverse mode (`transforms/calls.py`), the function is registered before it is
compiled, so a recursive call finds it and recursion depth is decided by the values.
"""

from __future__ import annotations

import dataclasses
import types

import libcst as cst

from . import codegen, transform_cache
from .call_kinds import GENERIC, CallKinds, callee_shapes, parameters
from .calls import TIGHT_EQUAL, link, literal_defaults, publish, split_base
from .edges import unalias_constants
from .optimize import optimize


@dataclasses.dataclass(eq=False)
class ForwardSplit:
    """The generated forward-mode function of one user function."""

    fn: types.FunctionType
    name: str
    params: tuple[str, ...]
    wrt: tuple[str, ...]  # the parameters it takes tangents of (keyword-only), in order
    tangent_names: dict = dataclasses.field(default_factory=dict)  # param -> tangent param
    batch_param: str | None = None  # batched: the keyword the caller passes its batch size by
    functions: dict = dataclasses.field(default_factory=dict)
    waiting: list = dataclasses.field(default_factory=list)
    source: str = ""

    @property
    def description(self) -> str:
        return self.name


def forward_split_of(
    fn: types.FunctionType, batched: bool = False, kinds: CallKinds = GENERIC
) -> ForwardSplit:
    """The (cached) forward-mode function of `fn` specialized for `kinds`, compiling it on
    first use."""
    custom = getattr(fn, "__sg_custom_gradient__", None)
    if custom is not None:
        raise LookupError(
            f"no forward-mode rule for {custom.__qualname__}: a @custom_gradient function "
            f"defines its reverse-mode derivative only, so forward mode (sg.jvp, Hessians, "
            f"derivatives of its gradient) cannot go through it; make it an sg.primitive with "
            f"sg.register_vjp and sg.register_jvp rules instead"
        )
    what = ("forward split", batched, kinds)
    split = transform_cache.find(fn, what)
    if split is not None:
        return split
    from .pipeline import GradSpec, analyze  # the pipeline imports this module

    params = parameters(fn)
    name = f"_jvp_{split_base(fn, kinds)}" + ("_batched" if batched else "")
    split = ForwardSplit(fn, name, params, kinds.wrt(params))
    transform_cache.store(fn, what, split)  # before compiling: a recursive call finds it
    try:
        analysis = analyze(fn, GradSpec(wrt=split.wrt, mode="forward", batched=batched))
        _compile(split, analysis, batched, kinds)
    except BaseException:
        transform_cache.discard(fn, what)
        raise
    return split


def _compile(split: ForwardSplit, analysis, batched: bool, kinds: CallKinds) -> None:
    from .forward import ForwardSpec, forward

    namer = analysis.namer.copy()
    shapes = callee_shapes(analysis, kinds)
    spec = ForwardSpec(split.name, split.wrt, batched)
    split.tangent_names.update({p: namer.tangent(p) for p in split.wrt})
    funcdef, callees = forward(
        analysis.nf, analysis.activity, shapes, spec, namer, forward_split_of, split.tangent_names
    )
    # tangent parameters become keyword-only with a zero default (a caller passes the
    # tangents of the arguments it has; an argument left to its default is a constant)
    params = funcdef.params
    primal = params.params[: len(params.params) - len(split.wrt)]
    tangents = params.params[len(primal) :]
    original = analysis.nf.funcdef.params
    # a parameter left to its default value gets None, then the zero tangent of that value
    defaulted = {
        p.name.value for p in (*original.params, *original.kwonly_params) if p.default is not None
    }
    kwonly = tuple(
        t.with_changes(
            default=cst.Name("None") if p in defaulted else cst.Float("0.0"),
            equal=cst.AssignEqual(),
        )
        for p, t in zip(split.wrt, tangents, strict=True)
    )
    kept = literal_defaults(original)  # (other defaults are values, set after compiling)
    star = original.star_arg if isinstance(original.star_arg, cst.Param) else cst.ParamStar()
    funcdef = funcdef.with_changes(
        params=params.with_changes(
            params=kept.params,
            kwonly_params=(*kept.kwonly_params, *kwonly),
            star_arg=star,  # (*args, or a bare * before the tangents)
            star_kwarg=original.star_kwarg,
        )
    )
    if batched:
        funcdef = _batch_from_the_caller(funcdef, split)
    funcdef = _zero_default_tangents(funcdef, split, [p for p in split.wrt if p in defaulted])
    funcdef = unalias_constants(optimize(funcdef), analysis.namespace)  # never return a global
    docstring = (
        f"Generated by s2sgrad from {analysis.parsed.name} ({analysis.parsed.filename}, line "
        f"{analysis.parsed.first_line}): its value and tangent (forward mode).\n"
    )
    source = codegen.render_module([funcdef], docstring, analysis.namespace)
    functions = codegen.compile_functions(source, [split.name], analysis.namespace)
    # the function's own default values (its source may hold only the literal ones, or none:
    # the forward half of a split takes them at run time, see calls.py)
    if split.fn.__defaults__ is not None:
        functions[0].__defaults__ = split.fn.__defaults__
    if split.fn.__kwdefaults__:
        functions[0].__kwdefaults__ = {
            **(functions[0].__kwdefaults__ or {}),
            **split.fn.__kwdefaults__,
        }
    split.source = source
    split.functions = {split.name: functions[0]}
    link(functions[0].__globals__, callees)
    publish(split)


def _zero_default_tangents(funcdef: cst.FunctionDef, split: ForwardSplit, params):
    """``tA = zero_tangent(A) if tA is None else tA`` for each parameter with a default (a
    caller that leaves it to its default passes no tangent: its value is a constant), with
    the batch axis in a batched callee."""
    if not params:
        return funcdef
    body = list(funcdef.body.body)
    batch = split.batch_param
    lines = []
    for p in params:
        t = split.tangent_names[p]
        zero = f"zero_tangent({p}, {batch})" if batch else f"zero_tangent({p})"
        lines.append(cst.parse_statement(f"{t} = {zero} if {t} is None else {t}"))
    at = 1 if batch else 0  # (after the batch size)
    body = [*body[:at], *lines, *body[at:]]
    return funcdef.with_changes(body=funcdef.body.with_changes(body=tuple(body)))


def _batch_from_the_caller(funcdef: cst.FunctionDef, split: ForwardSplit) -> cst.FunctionDef:
    """In a batched callee, the number of directions (``_batch``, as the forward pass named
    it) is a keyword-only parameter its callers pass: no tangent it is given need hold an
    array (the tangent of an empty tuple, or of a number left out) to tell it. A recursive
    call, generated before the callee's parameter is known, leaves it out: then it comes
    from whichever tangents it was given."""
    batch = next((_assigns_batch(s) for s in funcdef.body.body if _assigns_batch(s)), None)
    if batch is None:  # no parameters: nothing varies
        return funcdef
    split.batch_param = batch
    names = ", ".join(split.tangent_names[p] for p in split.wrt)
    given = f"{batch} = batch_size({names}) if {batch} is None else {batch}"
    statement = cst.parse_statement(given)
    body = [statement, *[s for s in funcdef.body.body if not _assigns_batch(s)]]
    params = funcdef.params
    keyword = cst.Param(cst.Name(batch), default=cst.Name("None"), equal=TIGHT_EQUAL)
    params = params.with_changes(kwonly_params=(*params.kwonly_params, keyword))
    return funcdef.with_changes(params=params, body=funcdef.body.with_changes(body=tuple(body)))


def _assigns_batch(line) -> str | None:
    """The name `line` assigns the batch size to (``_batch = batch_size(tx)``), or None."""
    if not (isinstance(line, cst.SimpleStatementLine) and isinstance(line.body[0], cst.Assign)):
        return None
    target, value = line.body[0].targets[0].target, line.body[0].value
    if (
        isinstance(target, cst.Name)
        and isinstance(value, cst.Call)
        and isinstance(value.func, cst.Name)
        and value.func.value == "batch_size"
    ):
        return target.value
    return None
