"""NumPy functions called with every argument by position, as NumPy orders them.

A gradient rule (or a library function's definition) leaves out parameters it does not take,
``out`` above all: ``np.var(x, 0, None, None, 1)`` passes ``ddof`` fifth, and the rule's
fifth parameter is ``keepdims``; ``np.median(x, 1, None, False, True)`` gave the definition
five positional arguments for three (hunt, repro_5: crashes inside the rules, or another
parameter's value). Arguments NumPy takes after ``out`` are bound by NumPy's names, and the
definitions take NumPy's parameters in NumPy's order. Against central differences.
"""

from __future__ import annotations

import numpy as np
import pytest

import s2sgrad as sg

X = np.array([[0.4, 0.7, 1.3], [0.9, 0.25, 1.6]])

CALLS = {
    "std with ddof": lambda x: np.sum(np.std(x, 0, None, None, 1) ** 2),
    "var with ddof and keepdims": lambda x: np.sum(np.var(x, 1, None, None, 1, True) * x),
    "sum with keepdims": lambda x: np.sum(np.sum(x, 0, None, None, True) * x),
    "mean with keepdims": lambda x: np.sum(np.mean(x, 1, None, None, True) * x),
    "max with keepdims": lambda x: np.sum(np.max(x, 1, None, True) * x),
    "method sum with keepdims": lambda x: np.sum(x.sum(1, None, None, True) ** 2 * x),
    "median": lambda x: np.sum(np.median(x, 1, None, False, True) * x),
    "quantile": lambda x: np.sum(np.quantile(x, 0.3, 1, None, False, "linear", True) * x),
    "nansum": lambda x: np.sum(np.nansum(x, 1, None, None, True) * x),
    "nanmax": lambda x: np.sum(np.nanmax(x, 0, None, True) * x),
    "ptp": lambda x: np.sum(np.ptp(x, 1, None, True) * x),
    "item of a tuple": lambda x: x.item((1, 2)) * x.item(0, 1) ** 2,
}


def gradient_by_differences(f, x):
    out = np.zeros_like(x)
    for k in range(x.size):
        step = np.zeros(x.size)
        step[k] = 1e-6
        step = step.reshape(x.shape)
        out.flat[k] = (f(x + step) - f(x - step)) / 2e-6
    return out


@pytest.mark.parametrize("name", list(CALLS))
def test_arguments_by_position_as_numpy_takes_them(name):
    f = CALLS[name]
    want = gradient_by_differences(f, X)
    np.testing.assert_allclose(sg.grad(f)(X), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sg.jacobian(f, mode="forward")(X), want, rtol=1e-6, atol=1e-8)
    hessian = sg.hessian(f)(X)
    columns = [
        gradient_by_differences(lambda z, k=k: sg.grad(f)(z).flat[k], X).ravel()
        for k in range(X.size)
    ]
    np.testing.assert_allclose(hessian.reshape(X.size, X.size), columns, atol=1e-5)


def test_out_given_by_position_is_refused():
    def f(x):
        return np.sum(np.median(x, 1, np.zeros(2)))

    with pytest.raises((sg.TransformError, NotImplementedError), match="out"):
        sg.grad(f)(X)
