"""What a transform accepts as `f`: a Python function (a ``def``, a lambda, a bound method, a
``functools.partial``, a callable object: see `transforms/bound.py`), or a primitive
differentiated by its rules.

``sg.jvp(np.sin, (x,), (t,))`` and ``sg.grad(np.sin)`` are what a JAX user writes. A primitive
(a NumPy ufunc or function, a `math` or builtin function, a function marked `sg.primitive`) has
no source of its own to transform, and must not be transformed even when it is Python code
(library code never is: DESIGN.md). So it is differentiated through a small generated function
that calls it, ``def sin(x): return np.sin(x)``, whose source is registered with `linecache`
like all generated code: the compiler then inlines the primitive's rules as for any call, and
one with no rule is a `LookupError` naming it.
"""

from __future__ import annotations

import inspect
import linecache
import math
import types

import numpy as np

from s2sgrad.runtime import qualified_name, registry
from s2sgrad.transforms.bound import user_function
from s2sgrad.transforms.library import is_library_function, missing_rule_hint
from s2sgrad.transforms.spelling import canonical_spelling

# (primitive, arity) -> its calling function: the same function every time, so that the
# transform cache (keyed by the function's code and globals) finds its transforms again
_calling: dict[tuple, types.FunctionType] = {}


def as_function(f, what: str, arity: int | None = None) -> types.FunctionType:
    """`f` itself when it is a user's Python function, the function `transforms.bound` makes
    of a lambda, a bound method, a partial or a callable object of the user's, or the function
    calling the primitive `f` with `arity` positional arguments (default: its required ones).

    Raises:
        LookupError: `f` is a NumPy, math or builtin function with no gradient rule.
        TypeError: `f` is neither (a class, an object with no rule, ...).
    """
    if getattr(f, "__sg_hvp__", None) is not None:
        from .composed import refuse_hvp

        refuse_hvp(f, f"sg.{what}")
    f = python_function(f)
    if isinstance(f, types.FunctionType) and registry.lookup(f) is None:
        own = (getattr(f, "__module__", "") or "").startswith("s2sgrad")  # generated code
        if is_library_function(f) and not own:  # scipy.special.logsumexp, the stdlib: never read
            name = qualified_name(f)
            raise LookupError(f"no gradient registered for {name}{missing_rule_hint(f, name)}")
        variadic = f.__code__.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
        wrapper = own or hasattr(f, "__sg_custom_gradient__")  # (s2sgrad's own *args functions)
        if variadic and not wrapper:
            raise TypeError(
                f"sg.{what} differentiates a function by its named parameters, and "
                f"{f.__name__!r} takes *args or **kwargs: wrap it, for example "
                f"sg.{what}(lambda x, y: {f.__name__}(x, y)) (a function it calls may take them)"
            )
        return f
    if registry.lookup(f) is None and _is_library(f):
        name = qualified_name(f)
        raise LookupError(f"no gradient registered for {name}{missing_rule_hint(f, name)}")
    if registry.lookup(f) is None:
        raise TypeError(
            f"sg.{what} transforms Python functions (defined with `def` or `lambda`, bound "
            f"methods, functools.partial objects, callable objects) and functions with "
            f"registered gradient rules; got {type(f).__name__} {getattr(f, '__name__', f)!r}"
        )
    key = (f, arity)
    function = _calling.get(key)
    if function is None:
        function = _calling[key] = _calling_function(f, _parameters(f, arity))
    return function


def python_function(f):
    """The Python function the transforms read for a lambda, bound method, partial or callable
    object of the user's (`transforms/bound.py`); anything else as it is."""
    lambda_ = isinstance(f, types.FunctionType) and f.__code__.co_name == "<lambda>"
    if (lambda_ or not isinstance(f, types.FunctionType)) and _no_rule(f):
        function = user_function(f)
        if function is not None:
            return function
    return f


def _no_rule(f) -> bool:
    try:
        return registry.lookup(f) is None
    except TypeError:  # unhashable: no rule
        return True


def _is_library(f) -> bool:
    """`f` is a NumPy, math or builtin callable (not a Python function, class or object)."""
    if isinstance(f, (types.FunctionType, type)):
        return False
    return canonical_spelling(f) is not None or isinstance(
        f, (np.ufunc, types.BuiltinFunctionType, type(np.sum))
    )


def _parameters(f, arity: int | None) -> list[str]:
    try:
        signature = inspect.signature(f)
    except (TypeError, ValueError):  # a ufunc without a signature: its number of inputs
        count = getattr(f, "nin", None) if arity is None else arity
        if count is None:
            raise TypeError(
                f"cannot tell how many arguments {getattr(f, '__name__', f)!r} takes; wrap it "
                f"in a `def` function"
            ) from None
        return [f"x{k}" for k in range(count)]
    positional = [
        p
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if arity is None:
        positional = [p for p in positional if p.default is p.empty]
    elif arity > len(positional):
        raise TypeError(
            f"{getattr(f, '__name__', f)!r} takes {len(positional)} positional arguments; "
            f"got {arity}"
        )
    else:
        positional = positional[:arity]
    return [p.name for p in positional]


def _calling_function(f, params: list[str]) -> types.FunctionType:
    name = getattr(f, "__name__", "")
    name = name if name.isidentifier() and name not in ("np", "math") else "primitive"
    spelled = canonical_spelling(f)
    namespace: dict[str, object] = {"np": np, "math": math, "__name__": "s2sgrad.calling"}
    if spelled is None:
        spelled = "_" + name
        namespace[spelled] = f
    params = [
        p if p.isidentifier() and p not in namespace else f"x{k}" for k, p in enumerate(params)
    ]
    listed = ", ".join(params)
    source = f"def {name}({listed}):\n    return {spelled}({listed})\n"
    filename = f"<s2sgrad call of {registry.lookup(f).name} #{len(_calling)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]
