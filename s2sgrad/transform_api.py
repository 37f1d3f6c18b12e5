"""`sg.grad`, `sg.value_and_grad` and `sg.source`: the reverse-mode front door of the compiler."""

from __future__ import annotations

import functools
import inspect

from s2sgrad.transforms import transform_cache
from s2sgrad.transforms.spec import GradSpec

from . import disk_cache
from .callables import as_function
from .dispatch import CompiledGradient
from .traceback_filter import api_boundary


@api_boundary
def grad(f=None, wrt=0, *, has_aux=False, optimize=True, simplify=False):
    """Transform `f` into a function computing its gradient, by generating Python source.

    Args:
        f: a Python function defined in a file. A non-scalar result is differentiated as the
            sum of its elements.
        wrt: the argument to differentiate with respect to: an index, a parameter name, or a
            tuple of them (then the result is a tuple of gradients).
        has_aux: `f` returns a pair ``(value, aux)``; the value is differentiated and the
            result is ``(gradient, aux)``, aux returned as `f` gave it.
        optimize: run the optimizer on the generated code (turn off to see the raw adjoint).
        simplify: after the optimizer, simplify the generated arithmetic with sympy and
            share common subexpressions (slower to transform; see transforms/simplify.py).

    Returns:
        A function with `f`'s signature whose ``__name__`` is the generated entry (``dfdx``).
        Also usable as a decorator: ``@sg.grad`` or ``@sg.grad(wrt="w")``.

    Raises:
        TransformError: `f` uses a construct s2sgrad does not support (with file, line, column).
        LookupError: `f` differentiates through a function with no gradient rule.
        TypeError: `f` returns a tuple, a list, a dict, None or a string (without `has_aux`),
            or not a pair (with it).

    Example:
        >>> import numpy as np, s2sgrad as sg
        >>> def f(x):
        ...     return np.sum(np.sin(x) * x)
        >>> sg.grad(f)(np.zeros(3))   # doctest: +SKIP
        array([0., 0., 0.])
    """
    if f is None:
        return functools.partial(
            grad, wrt=wrt, has_aux=has_aux, optimize=optimize, simplify=simplify
        )
    return _transform(f, wrt, optimize, simplify, with_value=False, has_aux=has_aux)


@api_boundary
def value_and_grad(f=None, wrt=0, *, has_aux=False, optimize=True, simplify=False):
    """Like `grad`, but the function returns ``(f(...), gradient)`` from one sweep; with
    `has_aux`, ``((value, aux), gradient)``.

    Example:
        >>> def f(x):
        ...     return x ** 3
        >>> sg.value_and_grad(f)(2.0)   # doctest: +SKIP
        (8.0, 12.0)
    """
    if f is None:
        return functools.partial(
            value_and_grad, wrt=wrt, has_aux=has_aux, optimize=optimize, simplify=simplify
        )
    return _transform(f, wrt, optimize, simplify, with_value=True, has_aux=has_aux)


@api_boundary
def source(fn, *example_args) -> str:
    """The generated Python source of a function returned by `grad` or `value_and_grad`.

    Without `example_args`, the general version (any argument types); with them, the
    specialization those arguments select (Python numbers need no shape bookkeeping).
    """
    compiled = getattr(fn, "__wrapped_transform__", None)
    if not hasattr(compiled, "for_arguments"):
        from .composed import refuse_hvp

        refuse_hvp(fn, "sg.source")
        raise TypeError(
            f"sg.source expects a function returned by an s2sgrad transform; got {fn!r}"
        )
    if example_args:
        from .composed import bind

        generated = compiled.for_arguments(bind(fn, example_args))
    else:
        generated = compiled.generic()
    function = getattr(generated, "function", None)
    if function is None:
        return generated.source
    from .standalone import merged_source  # callees' modules merged into one

    return merged_source(function)


def _transform(f, wrt, optimize, simplify, with_value, has_aux=False):
    what = "sg.value_and_grad" if with_value else "sg.grad"
    f = as_function(f, what[3:])
    if hasattr(f, "__sg_custom_gradient__"):  # sg.grad(clip_gradient): differentiate a call
        from .custom import calling_function

        f = calling_function(f)
    if hasattr(getattr(f, "__wrapped_transform__", None), "specialize"):
        # a generated function (`composed.transformed`): differentiate its code again
        from .composed import grad_of_transformed, transformed

        if has_aux:
            raise TypeError(f"{what}(..., has_aux=True) of a function s2sgrad generated")
        names, is_tuple = _normalize_wrt(transformed(f).analysis.fn, wrt)
        return grad_of_transformed(f, names, is_tuple, with_value)
    names, is_tuple = _normalize_wrt(f, wrt)
    spec = GradSpec(
        wrt=names,
        wrt_is_tuple=is_tuple,
        with_value=with_value,
        has_aux=bool(has_aux),
        optimize=bool(optimize),
        simplify=bool(simplify),
    )

    def build() -> CompiledGradient:
        analysis = disk_cache.lookup(f, spec)
        if analysis is None:  # the compiler is imported only now: a hit never loads libcst
            from s2sgrad.transforms.aux import check_output
            from s2sgrad.transforms.pipeline import analyze

            analysis = analyze(f, spec)
            if not has_aux:  # (with it, `analyze` checked for a pair)
                check_output(analysis.nf, analysis.parsed.name, False, what)
        return CompiledGradient(analysis)

    return transform_cache.cached(f, spec, build).wrapper()


def _normalize_wrt(f, wrt) -> tuple[tuple[str, ...], bool]:
    signature = inspect.signature(f)
    params = list(signature.parameters.values())
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = [p.name for p in params]
    is_tuple = isinstance(wrt, (tuple, list))
    items = list(wrt) if is_tuple else [wrt]
    if not items:
        raise ValueError("wrt=() names no argument to differentiate with respect to")
    resolved = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise TypeError(
                f"wrt must be an argument index or name (or a tuple of them); got {item!r}"
            )
        if isinstance(item, int):
            if not -len(positional) <= item < len(positional):
                raise ValueError(
                    f"wrt={item} is out of range: {f.__name__} takes {len(positional)} positional "
                    f"argument(s) ({', '.join(positional)})"
                )
            resolved.append(positional[item])
        else:
            if item not in names:
                raise ValueError(
                    f"wrt={item!r} is not a parameter of {f.__name__} (it has: {', '.join(names)})"
                )
            resolved.append(item)
    if len(set(resolved)) != len(resolved):
        raise ValueError(f"wrt={wrt!r} names the same argument twice")
    return tuple(resolved), is_tuple
