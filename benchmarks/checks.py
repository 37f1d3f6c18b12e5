"""Comparing gradients with the hand-written ones."""

from __future__ import annotations

import dataclasses

import numpy as np

RTOL, ATOL = 1e-7, 1e-10


def as_tuple(grads) -> tuple:
    return tuple(grads) if isinstance(grads, (tuple, list)) else (grads,)


def to_numpy(value) -> np.ndarray:
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach()
    return np.asarray(value)


def mismatch(got, want) -> str | None:
    """None when the gradients agree with `want`; otherwise what differs, for the report."""
    got, want = as_tuple(got), as_tuple(want)
    if len(got) != len(want):
        return f"{len(got)} gradients, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        g = to_numpy(g)
        if g.shape != np.shape(w):
            return f"gradient {i} has shape {g.shape}, expected {np.shape(w)}"
        if not np.allclose(g, w, rtol=RTOL, atol=ATOL):
            worst = np.max(np.abs(g - w))
            return f"gradient {i} differs from the hand-written one by up to {worst:.3g}"
    return None


@dataclasses.dataclass(frozen=True)
class Problem:
    """A gradient that is `wrong` (values or shapes) or that raised an `error`."""

    kind: str
    message: str


def check_call(grad_fn, args, want) -> Problem | None:
    """Call `grad_fn` once (which also warms up any compilation) and compare with `want`."""
    try:
        got = grad_fn(*args)
    except Exception as error:  # one failing library must not stop the run
        return Problem("error", f"raised {type(error).__name__}: {error}")
    message = mismatch(got, want)
    return None if message is None else Problem("wrong", message)
