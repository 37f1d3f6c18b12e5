"""Custom derivatives: `custom_gradient`, `primitive`, `register_vjp`, `register_jvp`,
`stop_gradient`.

These are shared by both front doors. Under `sg.grad`/`sg.jvp` the compiler recognises them
(a custom-gradient function becomes a forward call plus a call of its backward function; a
registered rule is inlined like the built-in ones). Under a `GradientTape`, the tape module
installs `tape_call` hooks so that Tensors flowing through them are recorded with the user's
rule. Called eagerly on plain NumPy values they are just the function.
"""

from __future__ import annotations

import functools
import types

from .traceback_filter import api_boundary

__all__ = ["custom_gradient", "primitive", "register_jvp", "register_vjp", "stop_gradient"]

# Set by the tape module: ``hook(kind, fn, args, kwargs)`` returns the result, or
# NotImplemented when no argument is a recorded value. `kind` is "stop_gradient" or
# "custom_gradient".
tape_hooks: list = []


def _through_tape(kind: str, fn, args: tuple, kwargs: dict):
    for hook in tape_hooks:
        result = hook(kind, fn, args, kwargs)
        if result is not NotImplemented:
            return result
    return NotImplemented


def stop_gradient(x):
    """The identity, with a derivative of zero (None under a tape).

    Args:
        x: an array, number, Tensor or a nested list/tuple/dict of them.

    Example:
        >>> def f(x):
        ...     return x * sg.stop_gradient(x)
        >>> sg.grad(f)(3.0)   # doctest: +SKIP
        3.0
    """
    result = _through_tape("stop_gradient", stop_gradient, (x,), {})
    return x if result is NotImplemented else result


def custom_gradient(f):
    """Decorator: `f` returns ``(y, backward)``; ``backward(dy)`` gives the input gradients.

    ``backward`` returns the gradient for a single input, or a tuple/list with one entry per
    positional input (``None`` for one without a gradient). Inside a transformed function the
    forward part runs and ``backward`` is called by the generated adjoint; under a tape the call
    is recorded as one operation whose gradient is ``backward``.

    Example:
        >>> @sg.custom_gradient
        ... def clip_gradient(x):
        ...     def backward(dy):
        ...         return np.clip(dy, -1.0, 1.0)
        ...     return x, backward
    """
    if not callable(f):
        raise TypeError(f"custom_gradient decorates a function; got {type(f).__name__}")

    @functools.wraps(f)
    def with_custom_gradient(*args, **kwargs):
        result = _through_tape("custom_gradient", f, args, kwargs)
        if result is not NotImplemented:
            return result
        value, _ = _split(f, f(*args, **kwargs))
        return value

    with_custom_gradient.__sg_custom_gradient__ = f
    return with_custom_gradient


def calling_function(wrapper):
    """A plain function that calls the custom-gradient function `wrapper`: what the transforms
    differentiate when given `wrapper` itself (``sg.grad(clip_gradient)``), since a call of
    it inside transformed code is what they know how to differentiate."""
    caller = getattr(wrapper, "__sg_caller__", None)
    if caller is not None:
        return caller
    from s2sgrad.transforms import codegen

    f = wrapper.__sg_custom_gradient__
    code = f.__code__
    params = ", ".join(code.co_varnames[: code.co_argcount])
    source = (
        f'"""Calls the custom-gradient function {f.__qualname__}."""\n\n\n'
        f"def {f.__name__}({params}):\n    return _custom_gradient_function({params})\n"
    )
    caller = codegen.compile_module(source, f.__name__, {"_custom_gradient_function": wrapper})
    caller.__defaults__ = f.__defaults__
    wrapper.__sg_caller__ = caller
    return caller


def primitive(fn):
    """Decorator: make `fn` opaque to the transforms.

    A call of `fn` inside a transformed function is made as it is, never transformed; its
    derivatives come only from `register_vjp` and `register_jvp`, and asking for one it lacks
    raises `LookupError` naming it (when the derivative is generated, for ``sg.grad``; at
    ``gradient()`` time for tapes). For a Python function the result is a wrapper to use in
    its place (``@sg.primitive`` rebinds the name): called on Tensors it is recorded as one
    operation, whose derivative is the rule, not its body's operations one by one.

    Example:
        >>> @sg.primitive
        ... def opaque_square(x):
        ...     return x * x
        >>> @sg.register_vjp(opaque_square)
        ... def opaque_square_vjp(g, ans, x):
        ...     return 2.0 * g * x
    """
    if not callable(fn):
        raise TypeError(f"sg.primitive marks a function; got {type(fn).__name__}")
    from s2sgrad.runtime import registry

    registry.register_primitive(fn)
    if not isinstance(fn, types.FunctionType):
        return fn  # a ufunc or callable object: Tensors reach it through NumPy's protocols

    @functools.wraps(fn)
    def opaque(*args, **kwargs):
        # under a tape, Tensor arguments make this one recorded call (its body runs on
        # their values), whose derivative is the registered rule, or a LookupError at
        # gradient() time; its operations are not recorded one by one
        if tape_hooks:
            result = _through_tape("primitive", opaque, args, kwargs)
            if result is not NotImplemented:
                return result
        return fn(*args, **kwargs)

    opaque.__sg_primitive__ = fn  # the registry finds fn's rules under either function
    return opaque


def register_vjp(fn, *, elementwise: bool | None = None):
    """Decorator: ``rule(g, ans, *args)`` is the reverse-mode rule of `fn`.

    The rule returns the gradient for `fn`'s only (or first) positional input, or a tuple
    literal with one entry per positional input (``None`` for an input without a gradient).
    Its body (assignments and one ``return``, parameters named as `fn` names them) is
    inlined into generated code, so ``sg.source`` shows it; values it reads from its module
    are captured. `fn` becomes a primitive (`primitive`). Registering again replaces the
    rule and warns.

    Args:
        fn: the function the rule differentiates, e.g. ``scipy.special.erf``.
        elementwise: `fn` maps arrays elementwise with NumPy broadcasting, so the rule need
            not handle broadcasting and forward mode gets a rule from it too. Default: True
            for NumPy ufuncs (SciPy's special functions are ufuncs), False otherwise.
    """
    return _registering("vjp", fn, elementwise)


def register_jvp(fn):
    """Decorator: ``rule(tangents, ans, *args)`` is the forward-mode rule of `fn`.

    ``tangents`` has one entry per positional input (``None`` where it carries none); the
    rule returns the tangent of the output. Inlined like `register_vjp` rules.
    """
    return _registering("jvp", fn, None)


def _registering(kind: str, fn, elementwise):
    if not callable(fn):
        raise TypeError(f"sg.register_{kind} takes the function to differentiate; got {fn!r}")
    fn = getattr(fn, "__sg_primitive__", fn)  # the function an @sg.primitive wrapper calls
    import numpy as np

    from s2sgrad.runtime import registry
    from s2sgrad.runtime.registry import check_template
    from s2sgrad.transforms.templates import load_template

    @api_boundary  # (not `decorate`: the registry's warning names the frame above decorate)
    def check(rule):
        check_template(rule, kind)
        try:
            load_template(rule)  # the form the compiler inlines: checked now, not at first use
        except TypeError as error:
            raise TypeError(
                f"{error}. A rule is assignments followed by one return statement"
            ) from None
        except OSError as error:
            message = f"cannot read the source of rule {rule.__qualname__}: {error}"
            raise TypeError(message) from None

    def decorate(rule):
        check(rule)
        if kind == "vjp":
            flag = isinstance(fn, np.ufunc) if elementwise is None else bool(elementwise)
            registry.register_vjp(fn, rule, elementwise=flag)
        else:
            registry.register_jvp(fn, rule)
        return rule

    return decorate


def _split(f, result):
    """``(y, backward)`` from what a custom-gradient function returned, or a clear error."""
    if not (isinstance(result, (tuple, list)) and len(result) == 2 and callable(result[1])):
        raise TypeError(
            f"a @custom_gradient function must return (value, backward_function); "
            f"{getattr(f, '__name__', f)} returned {type(result).__name__}"
        )
    return result[0], result[1]


def _register() -> None:
    """`stop_gradient` is a primitive without a derivative for the compiler."""
    from s2sgrad.runtime import registry

    registry.register_nondiff([stop_gradient])


_register()
