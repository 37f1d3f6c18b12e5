"""Pass 4, normalize: calls of small user functions written out where they are called.

A call of a user function that stays a call costs, in reverse mode, a call of its generated
forward half, a tuple of saved values and a call of its backward half (`calls`), and the
callee's code is specialized only for what the call site knows of its arguments. A small
function that changes nothing in place is instead inlined by normal form, the way a function
defined inside the one being transformed is: its parameters are the arguments (their names,
or a constant's: ``self.k`` of a captured instance reads as the caller's own ``self.k``),
its statements are normalized into the caller's body under names of their own (the one
`Namer` keeps them apart from the caller's), its free names keep what they mean in its own
module, and its returned value is the value of the call. The derivative is then that of
straight code: a time step in a helper costs what it costs written inline (issue 18).

Inlined (`inline_plan`): a plain ``def`` function of the user's, or an instance method called on
an instance the function captured (``self.step(x, v)`` in a bound method: ``step(self, x, v)``),
but not a lambda, partial, callable object, custom gradient or primitive with a rule, that

- may change nothing in place, nor may the functions it calls (`mutation_calls.may_change`):
  normal form of its body is then the truth whatever its arguments are;
- has no ``*args``/``**kwargs``, no function or lambda defined inside it, calls none of its
  parameters, and is at most `MAX_STATEMENTS` statements long;

at a call (`CalleeInlining.inline_call`) that binds every parameter (to an argument or a
default) and passes no function as a value, that is not a recursive call of a function being
inlined (recursion stays a call), within `MAX_DEPTH` nested inlinings and `BUDGET` inlined
statements per transformed function, and whose callee's captured constants mean the same in
the caller (a global of another module under a name the caller uses otherwise keeps the call).
Every other call stays a call.

``S2SGRAD_INLINE=0`` in the environment keeps every call a call (to read each callee's own
generated halves; the tests of those halves use it).

Generated code heads inlined statements ``# line 5 of step: a = -k * x``; their adjoints come
under the caller's line that made the call.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import types
from collections.abc import Mapping

import libcst as cst
from s2sgrad.runtime import registry

from . import transform_cache
from .errors import TransformError
from .fence import fence
from .library import is_user_function
from .mutation_calls import may_change
from .parse import ParsedFunction, parse_function
from .resolve import Resolution, resolve
from .spec import inlining

MAX_STATEMENTS = 40  # a larger function stays a call: its call costs little next to its body
MAX_DEPTH = 4  # inlined functions inlining others
BUDGET = 400  # statements inlined into one transformed function, in all

_PLAN = ("inline plan",)  # what an `InlinePlan` is, in the transform cache's key
_NOT_INLINED = False  # the cached answer for a function that is not inlined
_UNSUITABLE_FLAGS = (
    inspect.CO_VARARGS
    | inspect.CO_VARKEYWORDS
    | inspect.CO_GENERATOR
    | inspect.CO_COROUTINE
    | inspect.CO_ASYNC_GENERATOR
)


@dataclasses.dataclass(frozen=True)
class InlinePlan:
    """What normal form needs to write a user function out at a call."""

    parsed: ParsedFunction
    resolution: Resolution
    positional: tuple[str, ...]  # the parameters a positional argument may fill, in order
    keyword_only: tuple[str, ...]
    by_keyword: frozenset[str]  # the parameters a keyword argument may fill
    defaults: Mapping[str, object]
    size: int  # its statements
    assigned: frozenset[str]  # the names it assigns (a parameter among them is rebound)


def inline_plan(fn: object) -> InlinePlan | None:
    """The plan for inlining `fn` at its calls, or None if it stays a call (see the module
    docstring); found once per function in the transform cache."""
    if not isinstance(fn, types.FunctionType) or fn.__code__.co_name == "<lambda>":
        return None
    plan = transform_cache.cached(fn, _PLAN, lambda: _plan(fn) or _NOT_INLINED)
    return plan or None


def _plan(fn: types.FunctionType) -> InlinePlan | None:
    code = fn.__code__
    if code.co_flags & _UNSUITABLE_FLAGS or hasattr(fn, "__sg_custom_gradient__"):
        return None
    if not is_user_function(fn):
        return None
    try:
        parsed = parse_function(fn)
        fence(parsed)
        resolution = resolve(parsed, fn)
    except (TypeError, TransformError):
        return None  # (the call stays a call, whose compilation says what is wrong)
    if parsed.tree is None:
        return None
    nodes = list(ast.walk(parsed.tree))
    size = sum(isinstance(node, ast.stmt) for node in nodes) - 1  # (the def itself)
    if size > MAX_STATEMENTS:
        return None
    definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    if sum(isinstance(node, definitions) for node in nodes) != 1:
        return None
    params = set(resolution.params)
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in params:
                return None  # it calls a function it is given: a call keeps that
    if may_change(parsed, resolution, set()):
        return None
    positional = code.co_varnames[: code.co_argcount]
    keyword_only = code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]
    defaults = dict(
        zip(
            positional[len(positional) - len(fn.__defaults__ or ()) :],
            fn.__defaults__ or (),
            strict=True,
        )
    )
    defaults.update(fn.__kwdefaults__ or {})
    return InlinePlan(
        parsed,
        resolution,
        tuple(positional),
        tuple(keyword_only),
        frozenset(positional[code.co_posonlyargcount :]) | frozenset(keyword_only),
        types.MappingProxyType(defaults),
        size,
        frozenset(
            node.id
            for node in nodes
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
        ),
    )


class CalleeInlining:
    """The inlining of user functions by `anf._Normalizer` (a mixin: it uses ``self.parsed``,
    ``self.resolution``, ``self.namer``, ``self.nested``, ``self.current``, ``self.constants``
    and the methods ``atom`` and ``inline_body``)."""

    def start_inlining(self) -> None:
        parsed = self.parsed
        self.inline_stack: list[tuple] = [(parsed.filename, parsed.first_line, parsed.name)]
        self.inline_budget = BUDGET if inlining() else 0
        self.inlined_from: str | None = None  # the inlined function whose body is normalized
        self.constants: dict[str, object] = {}  # the inlined functions' captured values
        # where each came from, for the on-disk cache: (function, its free name), or
        # (function, parameter, True) for a parameter's default
        self.constant_sources: dict[str, tuple] = {}
        self.caller_namespace = self.resolution.namespace()

    def refuse_generated_callee(self, call: cst.Call) -> None:
        """A TransformError at `call` when it calls a function s2sgrad generated
        (``g = sg.grad(f)``, then ``g(x)`` in the function being differentiated): what `g`
        runs is a dispatcher picking compiled code at run time, and its reverse-mode
        derivative is not supported yet; the refusal names what to write instead."""
        func = call.func
        if not isinstance(func, (cst.Name, cst.Attribute)):
            return
        fn = self.resolution.function_of(func)
        if fn is None:
            found, fn = self.resolution.value_of(func)
            if not found:
                return
        if _is_transform(fn):  # sg.grad(f)(x), g = sg.grad(f), sg.jvp(f, ...) inside f
            raise self.parsed.error(
                call,
                f"calling sg.{fn.__name__} inside a function being differentiated is not "
                f"supported yet: differentiate the original function again instead "
                f"(sg.hessian(f), sg.hvp(f) or sg.grad(sg.grad(f)) for the derivative of a "
                f"gradient), or compute the inner derivative outside and pass it in",
            )
        if getattr(fn, "__wrapped_transform__", None) is None and not hasattr(fn, "__sg_hvp__"):
            return
        raise self.parsed.error(
            call,
            f"calling {fn.__name__}, a derivative s2sgrad generated, inside a function being "
            f"differentiated is not supported yet: differentiate the original function again "
            f"instead (sg.hessian(f), sg.hvp(f) or sg.grad(sg.grad(f)) for the derivative of "
            f"a gradient)",
        )

    def inline_call(self, call: cst.Call) -> cst.Name | None:
        """The value of `call`, a call of a user function written out here, or None when it
        stays a call (see the module docstring)."""
        func = call.func
        if not isinstance(func, (cst.Name, cst.Attribute)) or len(self.inline_stack) > MAX_DEPTH:
            return None
        if isinstance(func, cst.Name) and (func.value in self.current or func.value in self.nested):
            return None
        fn = self.resolution.function_of(func)
        if fn is None and isinstance(func, cst.Attribute):  # self.step(x): step(self, x)
            fn = self.resolution.method_of(func)
            if fn is not None:
                call = call.with_changes(args=(cst.Arg(func.value), *call.args))
        if fn is None or registry.lookup(fn) is not None:  # a primitive: its rule, or its
            return None  # LookupError (asked each time: rules are registered at any time)
        plan = inline_plan(fn)
        if plan is None or plan.size > self.inline_budget:
            return None
        parsed = plan.parsed
        if (parsed.filename, parsed.first_line, parsed.name) in self.inline_stack:
            return None  # recursion: a call
        values = self._bound(plan, call)
        if values is None:
            return None
        constants = self._constants_of(plan)
        if constants is None:
            return None
        sources = {spelled: name for name, spelled in plan.resolution.spelling.items()}
        given = {param: self.atom(value) for param, value in values.items()}  # (in the
        # order Python evaluates them: `_bound` keeps the call's order, keywords included)
        atoms = {
            param: given[param] if param in given else self._default(fn, plan, param)
            for param in (*plan.positional, *plan.keyword_only)
        }
        for name, value in constants.items():
            self.namer.reserve(name)
            self.constants[name] = value
            self.constant_sources[name] = (fn, sources[name])
        resolution = self._with_constant_parameters(plan, atoms)
        atoms = {param: atom for param, atom in atoms.items() if resolution.is_local(param)}
        outer = self.parsed, self.resolution, self.nested, self.inlined_from
        self.parsed, self.resolution, self.nested = parsed, resolution, {}
        self.inlined_from = parsed.name
        self.inline_stack.append((parsed.filename, parsed.first_line, parsed.name))
        self.inline_budget -= plan.size
        try:
            statements = list(parsed.funcdef.body.body)
            return self.inline_body(parsed.name, atoms, statements, {}, share=True)
        finally:
            self.inline_stack.pop()
            self.parsed, self.resolution, self.nested, self.inlined_from = outer

    def _with_constant_parameters(self, plan: InlinePlan, atoms: dict) -> Resolution:
        """The callee's resolution with each parameter given a captured constant (the
        instance in ``self.step(x)``, a default), and never assigned by the callee, made a
        free name spelled as the caller spells that constant: its reads (``self.k``) are
        then what the caller's own reads of the constant are, constants of the derivative
        read where they are used, not values saved for the adjoint."""
        resolution = plan.resolution
        free, spelling = dict(resolution.free), dict(resolution.spelling)
        params = set()
        for param, atom in atoms.items():
            if not isinstance(atom, cst.Name) or param in plan.assigned:
                continue
            value = self.constants.get(atom.value, self.caller_namespace.get(atom.value, _ABSENT))
            if value is _ABSENT:
                continue
            free[param], spelling[param] = value, atom.value
            params.add(param)
        if not params:
            return resolution
        return dataclasses.replace(
            resolution,
            locals=resolution.locals - params,
            free=types.MappingProxyType(free),
            spelling=types.MappingProxyType(spelling),
        )

    def _bound(self, plan: InlinePlan, call: cst.Call) -> dict | None:
        """The user's argument expression of each parameter a call gives one, as Python binds
        them, in the order of the call's arguments (the order they are evaluated in); None
        for a call that does not bind (Python's error is the call's to raise), or that passes
        a function as a value."""
        values: dict[str, cst.BaseExpression] = {}
        positional = [a for a in call.args if a.keyword is None]
        if any(a.star for a in call.args) or len(positional) > len(plan.positional):
            return None
        for arg, param in zip(positional, plan.positional, strict=False):
            values[param] = arg.value
        for arg in call.args:
            if arg.keyword is None:
                continue
            name = arg.keyword.value
            if name not in plan.by_keyword or name in values:
                return None
            values[name] = arg.value
        for param in (*plan.positional, *plan.keyword_only):
            if param not in values and param not in plan.defaults:
                return None
        for value in values.values():
            if isinstance(value, cst.Lambda):
                return None
            if isinstance(value, cst.Name) and value.value in self.nested:
                return None
            if isinstance(value, (cst.Name, cst.Attribute)) and not (
                isinstance(value, cst.Name) and value.value in self.current
            ):
                found, given = self.resolution.value_of(value)
                if found and callable(given) and not isinstance(given, type):
                    return None  # a function given as a value
        return values

    def _constants_of(self, plan: InlinePlan) -> dict | None:
        """The callee's captured values that generated code must add to the caller's, or None
        if one of its names means something else in the caller."""
        added = {}
        for name, value in plan.resolution.namespace().items():
            known = self.constants.get(name, self.caller_namespace.get(name, _ABSENT))
            if known is not _ABSENT:
                if known is not value:
                    return None
                continue
            if self.namer.taken(name):  # a local of the caller's, or a generated name
                return None
            added[name] = value
        return added

    def _default(self, fn, plan: InlinePlan, param: str) -> cst.Name:
        """A parameter's default, a captured constant, never a literal written into the code:
        the transform cache checks the callee's defaults by identity (``step.__defaults__ =
        (5.0,)`` is a change), and the on-disk cache does not store such code at all."""
        name = self.namer.fresh(f"{plan.parsed.name}_{param}")
        self.constants[name] = plan.defaults[param]
        self.constant_sources[name] = (fn, param, True)
        return cst.Name(name)


_ABSENT = object()


def _is_transform(fn) -> bool:
    """One of s2sgrad's transforms (sg.grad, sg.jvp, ...: what API.md's first table lists)."""
    import s2sgrad

    names = ("grad", "value_and_grad", "jvp", "vjp", "jacobian", "hessian", "hvp")
    return any(fn is getattr(s2sgrad, name, None) for name in names)
