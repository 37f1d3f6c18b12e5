"""A NumPy function returning a tuple on Tensors returns its arrays and numbers as Tensors, so
the tape follows them. ``np.linalg.slogdet(t)`` (two NumPy numbers) and ``np.linalg.lstsq``
(arrays beside an integer rank) came back as plain values: what was computed from them was a
constant to the tape, and ``tape.gradient`` silently left their part out (a gradient of
``slogdet(M)[1] + trace(inv(M))`` was that of the trace alone). Checked against central
differences of the same NumPy code."""

from __future__ import annotations

import numpy as np
import pytest
from numerical import numerical_jacobian
from rule_table import TABLE
from test_registry_grad import make_inputs

import s2sgrad as sg

rng = np.random.default_rng(11)
A = rng.normal(size=(4, 3))
B = rng.normal(size=4)


def log_determinant_and_trace(a, b):
    m = a.T @ a + 3 * np.eye(3)
    return np.linalg.slogdet(m)[1] + np.trace(np.linalg.inv(m))


def log_determinant_by_field(a, b):
    sign, logabsdet = np.linalg.slogdet(a.T @ a)
    return logabsdet * sign + np.linalg.slogdet(a.T @ a).logabsdet


def least_squares(a, b):
    solution, _residuals, _rank, singular_values = np.linalg.lstsq(a, b, rcond=None)
    return np.sum(solution**2) + np.sum(singular_values)


def eigenvalues_by_field(a, b):
    return np.sum(np.linalg.eigh(a.T @ a).eigenvalues ** 2)


@pytest.mark.parametrize(
    "f", [log_determinant_and_trace, log_determinant_by_field, least_squares, eigenvalues_by_field]
)
@pytest.mark.parametrize("which", [0, 1])
def test_tuple_results_are_followed_by_the_tape(f, which):
    values = (A, B)
    variables = [sg.Variable(v) for v in values]
    with sg.GradientTape() as tape:
        loss = f(*variables)
    got = tape.gradient(loss, variables[which])

    def moved(v):
        return f(*[v if k == which else values[k] for k in range(2)])

    want = numerical_jacobian(moved, values[which])
    if not np.any(want):
        assert got is None  # (b does not reach the determinant or the eigenvalues)
        return
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


def test_named_tuple_results_keep_their_type_and_fields():
    with sg.GradientTape():
        result = np.linalg.slogdet(sg.Variable(np.eye(2) * 2.0))
    assert type(result).__name__ == "SlogdetResult"
    assert isinstance(result.logabsdet, sg.Tensor) and isinstance(result[0], sg.Tensor)
    assert result.logabsdet.numpy() == pytest.approx(2 * np.log(2.0))


def _plain_numbers(value) -> list:
    """The arrays and NumPy numbers in `value` (a result, possibly a tuple or list of them)
    that are not Tensors."""
    if isinstance(value, (tuple, list)):
        return [plain for item in value for plain in _plain_numbers(item)]
    return [value] if isinstance(value, (np.ndarray, np.generic)) else []


def _dispatched_by_numpy(primitive) -> bool:
    """A NumPy function or ufunc (SciPy's special functions are ufuncs): what a Tensor sees
    through NumPy's protocols. (`math` and builtins convert a Tensor to a float, as they
    would a TensorFlow tensor; SciPy's other functions convert it with np.asarray.)"""
    return isinstance(primitive, np.ufunc) or (
        (getattr(primitive, "__module__", None) or "").startswith("numpy") and callable(primitive)
    )


# conversions: they build a new array from a Tensor's value, which is then a constant, as
# np.asarray's is (README: values that left through np.asarray); np.stack or ones * t instead
CONVERSIONS = (np.array, np.asarray, np.float64, np.full, np.full_like)
ROWS = [
    (row, shapes)
    for row in TABLE
    for shapes in row.shapes[:1]
    if _dispatched_by_numpy(row.primitive) and row.primitive not in CONVERSIONS
]


@pytest.mark.parametrize(("row", "shapes"), ROWS, ids=[row.id for row, _ in ROWS])
def test_every_number_a_primitive_computes_from_tensors_is_a_tensor(row, shapes):
    # the class at its root: whatever a differentiable NumPy function returns on Tensors
    # (an array, a number, a tuple or named tuple of them beside integers), the tape follows
    inputs = [sg.constant(np.asarray(value)) for value in make_inputs(row, shapes)]
    with sg.GradientTape() as tape:
        tape.watch(inputs)
        result = row.primitive(*row.args(*inputs), **row.kwargs)
    assert _plain_numbers(result) == []
