"""NumPy functions differentiated through a definition in NumPy (JAX's way for ``jnp``).

`np.average`, `np.quantile`, `np.cov` and their kin combine primitives that all have rules.
Rather than hand-write their adjoints, tangents and second derivatives (and rules for every
helper those would need), the compiler differentiates a short definition of each, written with
those primitives, exactly as it differentiates a function of the user's (the classifier in
``transforms/operations.py`` swaps the call for its definition): every mode and every order
comes from the primitives' rules, and the generated code shows the definition's steps.

Each definition computes what NumPy computes for the arguments it takes (the tests compare
values); NumPy's ``out``, ``where``, ``dtype``, ``overwrite_input``, weights of `cov`, and
the quantile methods other than ``"linear"`` are not among them, and a call using them is a
clear error. At a tie (two equal elements in a median, a maximum reached twice) the derivative
is the one of the sorted order NumPy's stable sort gives, a valid one-sided derivative.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DEFINITIONS", "DEFINITION_MODULES", "define"]

# -- integration and weighted means ---------------------------------------------------------------


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """``np.trapezoid``: the trapezoidal rule along `axis` (in `y`, `x` and `dx`)."""
    y = np.moveaxis(y, axis, -1)
    pairs = y[..., 1:] + y[..., :-1]
    if x is None:
        return np.sum(pairs, axis=-1) * dx / 2.0
    if np.ndim(x) == 1:
        return np.sum(np.diff(x) * pairs, axis=-1) / 2.0
    return np.sum(np.diff(np.moveaxis(x, axis, -1), axis=-1) * pairs, axis=-1) / 2.0


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """``np.average`` (in `a` and `weights`; ``returned=True`` is not supported)."""
    if returned:
        raise NotImplementedError("s2sgrad differentiates np.average with returned=False only")
    if weights is None:
        return np.mean(a, axis=axis, keepdims=keepdims)
    if axis is None:
        result = np.sum(a * weights) / np.sum(weights * np.ones_like(a))
        return np.reshape(result, (1,) * np.ndim(a)) if keepdims else result
    moved = np.moveaxis(a, axis, -1)
    if np.ndim(weights) != 1:
        weights = np.moveaxis(weights, axis, -1)
    result = np.sum(moved * weights, axis=-1) / np.sum(weights * np.ones_like(moved), axis=-1)
    return np.expand_dims(result, axis) if keepdims else result


def _no_out(out, name, dtype=None):
    """Refuse what a definition does not compute: an ``out`` array, a ``dtype``."""
    if out is not None or dtype is not None:
        raise NotImplementedError(
            f"s2sgrad differentiates np.{name} without out= and dtype= (leave them None)"
        )


# -- order statistics -----------------------------------------------------------------------------


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """``np.quantile`` with the default ``method="linear"`` (in `a` and `q`): the sorted
    values on either side of ``q * (n - 1)``, interpolated. (NumPy's parameters, in NumPy's
    order, as all of these definitions: a call passes them by position as NumPy takes them;
    ``overwrite_input`` changes nothing computed.)"""
    _no_out(out, "quantile")
    if method != "linear":
        raise NotImplementedError(
            f"s2sgrad differentiates np.quantile, np.percentile and np.median with "
            f"method='linear' only, not {method!r}"
        )
    ordered = np.sort(np.ravel(a)) if axis is None else np.sort(np.moveaxis(a, axis, -1))
    n = np.shape(ordered)[-1]
    position = np.asarray(q) * (n - 1)
    below = np.floor(position)
    low = below.astype(np.intp)
    high = np.minimum(low + 1, n - 1)
    lower = np.take(ordered, low, axis=-1)
    result = lower + (np.take(ordered, high, axis=-1) - lower) * (position - below)
    # NumPy puts q's axes first
    result = np.moveaxis(result, tuple(range(-np.ndim(q), 0)), tuple(range(np.ndim(q))))
    if keepdims:
        kept = (1,) * np.ndim(a) if axis is None else np.shape(np.expand_dims(lower, -1))
        if axis is not None:
            kept = np.shape(np.expand_dims(np.take(np.moveaxis(a, axis, -1), 0, -1), axis))
        result = np.reshape(result, np.shape(q) + kept)
    return result


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """``np.percentile``: `quantile` at ``q / 100``."""
    _no_out(out, "percentile")
    return quantile(a, np.asarray(q) / 100.0, axis=axis, method=method, keepdims=keepdims)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """``np.median``: `quantile` at 0.5 (the mean of the two middle values of an even count)."""
    _no_out(out, "median")
    return quantile(a, 0.5, axis=axis, keepdims=keepdims)


def ptp(a, axis=None, out=None, keepdims=False):
    """``np.ptp``: the range, maximum minus minimum."""
    _no_out(out, "ptp")
    return np.max(a, axis=axis, keepdims=keepdims) - np.min(a, axis=axis, keepdims=keepdims)


# -- reductions that skip NaN ---------------------------------------------------------------------


def nansum(a, axis=None, dtype=None, out=None, keepdims=False):
    """``np.nansum``: NaN counts as 0 (and gets no derivative)."""
    _no_out(out, "nansum", dtype)
    return np.sum(np.where(np.isnan(a), 0.0, a), axis=axis, keepdims=keepdims)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False):
    """``np.nanmean``: the mean of the elements that are not NaN."""
    _no_out(out, "nanmean", dtype)
    present = np.logical_not(np.isnan(a))
    total = np.sum(np.where(present, a, 0.0), axis=axis, keepdims=keepdims)
    return total / np.sum(present, axis=axis, keepdims=keepdims)


def nanmax(a, axis=None, out=None, keepdims=False):
    """``np.nanmax``: the maximum of the elements that are not NaN."""
    _no_out(out, "nanmax")
    return np.max(np.where(np.isnan(a), -np.inf, a), axis=axis, keepdims=keepdims)


def nanmin(a, axis=None, out=None, keepdims=False):
    """``np.nanmin``: the minimum of the elements that are not NaN."""
    _no_out(out, "nanmin")
    return np.min(np.where(np.isnan(a), np.inf, a), axis=axis, keepdims=keepdims)


# -- covariance and correlation -------------------------------------------------------------------


def _observations(m, rowvar):
    """`m` as variables x observations (NumPy's convention in `cov`)."""
    rows = np.atleast_2d(m)
    if not rowvar and np.shape(rows)[0] != 1:
        rows = rows.T
    return rows


def cov(m, y=None, rowvar=True, bias=False, ddof=None):
    """``np.cov`` without frequency or analytic weights (in `m` and `y`)."""
    rows = _observations(m, rowvar)
    if y is not None:
        rows = np.concatenate([rows, _observations(y, rowvar)], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    centered = rows - np.mean(rows, axis=1, keepdims=True)
    return np.squeeze(centered @ centered.T / (np.shape(rows)[1] - ddof))


def corrcoef(x, y=None, rowvar=True):
    """``np.corrcoef``: the covariance scaled by the standard deviations (clipped to
    [-1, 1] as NumPy does)."""
    c = cov(x, y, rowvar)
    if np.ndim(c) == 0:
        return c / c
    deviation = np.sqrt(np.diag(c))
    return np.clip(c / deviation[:, None] / deviation[None, :], -1.0, 1.0)


# -- linear algebra built from factorizations and products ----------------------------------------


def pinv(a, rcond=None, hermitian=False):
    """``np.linalg.pinv`` through the thin SVD (singular values below the cutoff dropped;
    ``hermitian`` only selects NumPy's faster method, the result is the same)."""
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    if rcond is None:
        rcond = max(np.shape(a)[-2:]) * np.finfo(np.result_type(a, 1.0)).eps
    kept = s > rcond * np.max(s, axis=-1, keepdims=True)
    inverse = np.where(kept, 1.0 / np.where(kept, s, 1.0), 0.0)
    return np.swapaxes(vt, -1, -2) @ (inverse[..., :, None] * np.swapaxes(u, -1, -2))


def lstsq(a, b, rcond=None):
    """``np.linalg.lstsq``: (solution, residual sums of squares, rank, singular values), the
    solution through `pinv` (in `a` and `b`; the rank, an integer, has no derivative)."""
    if rcond is None:
        rcond = max(np.shape(a)) * np.finfo(np.result_type(a, 1.0)).eps
    x = pinv(a, rcond) @ b
    singular = np.linalg.svd(a, compute_uv=False)
    rank = np.sum(singular > rcond * np.max(singular))
    m, n = np.shape(a)
    if rank == n and m > n:
        residual = np.sum((a @ x - b) ** 2, axis=0)
        residuals = np.reshape(residual, (-1,)) if np.ndim(b) == 1 else residual
    else:
        residuals = np.zeros(0)
    return x, residuals, rank, singular


def matrix_power(a, n):
    """``np.linalg.matrix_power`` by repeated squaring (a negative power of the inverse)."""
    if n < 0:
        a = np.linalg.inv(a)
        n = -n
    result = np.broadcast_to(np.eye(np.shape(a)[-1]), np.shape(a)) * 1.0
    square = a
    while n > 0:
        if n % 2 == 1:
            result = result @ square
        n = n // 2
        if n > 0:
            square = square @ square
    return result


def multi_dot(arrays):
    """``np.linalg.multi_dot``: the product of the arrays, left to right (NumPy only reorders
    the parentheses for speed; the value is the same)."""
    result = arrays[0]
    for factor in arrays[1:]:
        result = np.dot(result, factor)
    return result


def define(function, definition) -> None:
    """Differentiate `function` through `definition` (a Python function of a module holding
    only definitions: a definition calls the module's other functions as definitions too)."""
    DEFINITIONS[function] = definition
    DEFINITION_MODULES.add(definition.__module__)


DEFINITIONS = {
    np.trapezoid: trapezoid,
    np.average: average,
    np.quantile: quantile,
    np.percentile: percentile,
    np.median: median,
    np.ptp: ptp,
    np.nansum: nansum,
    np.nanmean: nanmean,
    np.nanmax: nanmax,
    np.nanmin: nanmin,
    np.cov: cov,
    np.corrcoef: corrcoef,
    np.linalg.pinv: pinv,
    np.linalg.lstsq: lstsq,
    np.linalg.matrix_power: matrix_power,
    np.linalg.multi_dot: multi_dot,
}
DEFINITION_MODULES = {__name__}
