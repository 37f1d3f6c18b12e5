"""How a transform calls the function it was given: its arguments bound by name (defaults
filled in, keyword-only parameters by keyword), the generated function a transformed one stands
for, and what the user's function may return.

Kept apart from `composed` so that `forward_api` (which `composed` builds on) can use it at
every `sg.jvp` call without a circular import.
"""

from __future__ import annotations

import inspect
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .dispatch import CompiledGradient


def transformed(f) -> CompiledGradient | None:
    """The compiled transform behind a function s2sgrad returned, or None."""
    compiled = getattr(f, "__wrapped_transform__", None)
    return compiled if hasattr(compiled, "specialize") else None


def concrete(f, args: tuple):
    """The Python function to transform for a call with `args`: `f` itself, or for a
    generated function, the generated specialization those arguments select."""
    compiled = transformed(f)
    if compiled is None:
        return f
    return concrete(compiled.function_for(*args), args)


def bind(f, args: tuple, kwargs: dict | None = None) -> tuple:
    """Every argument of a call of `f` by position (defaults filled in)."""
    compiled = transformed(f)
    target = compiled.analysis.fn if compiled is not None else f
    code = getattr(target, "__code__", None)
    if not kwargs and code is not None and _plain_signature(code, len(args)):
        return tuple(args)  # every parameter given by position: nothing to bind
    bound = inspect.signature(target).bind(*args, **(kwargs or {}))
    bound.apply_defaults()
    return tuple(bound.arguments.values())


def _plain_signature(code, count: int) -> bool:
    """`count` positional arguments are all the parameters of `code` (no ``*args``,
    ``**kwargs`` or keyword-only ones)."""
    variadic = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
    return count == code.co_argcount and not code.co_kwonlyargcount and not code.co_flags & variadic


def keyword_only(fn: types.FunctionType) -> tuple[str, ...]:
    """The keyword-only parameters of the Python function `fn` (the user's or generated)."""
    code = fn.__code__
    return code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]


def arguments(fn, names, values, extra: tuple = ()) -> tuple[tuple, dict]:
    """How to call `fn` with `values` for its parameters `names` (in order) and the `extra`
    positional arguments generated code adds after the user's (tangents, a seed): the
    positional arguments, then the keyword-only ones by name."""
    if not fn.__code__.co_kwonlyargcount:
        return (*values, *extra), {}
    keywords = keyword_only(fn)
    positional = tuple(v for n, v in zip(names, values, strict=True) if n not in keywords)
    return (*positional, *extra), {
        n: v for n, v in zip(names, values, strict=True) if n in keywords
    }


def call_text(fn, names, extra: tuple[str, ...] = ()) -> str:
    """The arguments, as generated source, of a call of `fn` passing each of `names` (the
    user's parameters, each a variable of the same name) and the `extra` ones (see
    `arguments`)."""
    positional, keywords = arguments(fn, names, names, extra)
    return ", ".join([*positional, *(f"{name}={name}" for name in keywords)])


def parameter_names(f) -> list[str]:
    compiled = transformed(f)
    target = compiled.analysis.fn if compiled is not None else f
    return list(inspect.signature(target).parameters)


def wrt_names(f, wrt) -> tuple[tuple[str, ...], bool]:
    from .transform_api import _normalize_wrt  # (transform_api imports this module)

    compiled = transformed(f)
    return _normalize_wrt(compiled.analysis.fn if compiled is not None else f, wrt)


# -- what the user's function returns --------------------------------------------------------


def check_output(compiled, what: str, containers: bool) -> None:
    """TypeError (mentioning has_aux) when the user's function behind `compiled` visibly
    returns what `what` cannot differentiate (see `transforms/aux.py`): checked once."""
    checked = getattr(compiled, "_checked_outputs", ())
    if containers in checked:
        return
    from s2sgrad.transforms.aux import check_output as check

    analysis = compiled.analysis
    check(analysis.nf, analysis.parsed.name, False, what, containers=containers)
    compiled._checked_outputs = (*checked, containers)


def check_value(out, f, what: str):
    """`out`, a value `f` returned, when it can have a tangent; else a TypeError."""
    if out is None or isinstance(out, (str, bytes)):
        raise TypeError(
            f"{what}: {getattr(f, '__name__', f)} returned {type(out).__name__}, not an array, "
            f"a number or a container of them; to carry other results along a differentiated "
            f"value, return (value, aux) and use has_aux=True (sg.grad, sg.value_and_grad)"
        )
    return out
