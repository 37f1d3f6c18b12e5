"""Custom derivatives: `custom_gradient`, `register_vjp`, `register_jvp`, `stop_gradient`.

These are shared by both front doors. Under `sg.grad`/`sg.jvp` the compiler recognises them
(a custom-gradient function becomes a forward call plus a call of its backward function; a
registered rule is inlined like the built-in ones). Under a `GradientTape`, the tape module
installs `tape_call` hooks so that Tensors flowing through them are recorded with the user's
rule. Called eagerly on plain NumPy values they are just the function.
"""

from __future__ import annotations

import functools

__all__ = ["custom_gradient", "stop_gradient"]

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
