"""Third derivatives of vector functions (``sg.jacobian(sg.hessian(f))``, README: "the third
derivative"), through the slot reads and writes whose derivative code scatters into a buffer
(``accumulate_at``): its tangent's tangent had one batch axis too few, a ValueError from
inside NumPy for an integer-list index (hunt round 2, repro_10); ``set_batch_item`` (a
slice read's batched adjoint) had no forward rule. Checked against central differences of
`sg.hessian`, itself checked against differences of differences elsewhere.
"""

from __future__ import annotations

import numpy as np
import pytest

import s2sgrad as sg

X = np.array([0.3, -0.2, 0.9, 0.5])


def integer_list(x):
    return np.sum(x[[0, 2]] ** 3)


def repeated_slots(x):
    return np.sum(x[[0, 2, 0]] ** 3 * x[1])


def a_number_times_repeated_slots(x):  # the adjoint of x[[1, 1, 2]] is lazily broadcast
    return np.sum(np.sum(x) ** 2 * x[[1, 1, 2]])


def a_slice(x):
    return np.sum(np.sin(x[1:3]) * x[:2] ** 2)


def a_mask(x):
    return np.sum(x[np.array([True, False, True, True])] ** 4)


def rows_of_a_matrix(x):
    m = np.outer(x, x[::-1])
    return np.sum(m[[0, 3], 1:] ** 2)


def written_slots(x):
    y = np.zeros(4)
    y[[1, 3]] = x[:2] ** 2
    y[0] = x[2] * x[3]
    return np.sum(y**2 * x)


def cubes_by_a_loop(x):  # (a loop's saved values, popped as tuples: map_examples ran over
    # the tuple instead of the directions, T[0, 0] = [6, 2, 2]; hunt repro_10)
    y = x
    for _ in range(2):
        y = y * x
    return np.sum(y * x[0])


FUNCTIONS = [
    integer_list,
    repeated_slots,
    a_number_times_repeated_slots,
    a_slice,
    a_mask,
    cubes_by_a_loop,
]
# not yet: helpers of the batched sweep with no forward rule of their own (`map_examples`,
# which batches a primitive with no batching rule, here np.outer's tangent; `written_slots`)
NOT_YET = [rows_of_a_matrix, written_slots]


def third_by_differences(f, x, eps=1e-5):
    hessian = sg.hessian(f)
    columns = [(hessian(x + e) - hessian(x - e)) / (2 * eps) for e in np.eye(x.size) * eps]
    return np.stack(columns, axis=-1)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_third_derivatives_through_slots(f, mode):
    want = third_by_differences(f, X)
    got = sg.jacobian(sg.hessian(f), mode=mode)(X)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", NOT_YET, ids=lambda f: f.__name__)
def test_third_derivatives_not_yet_supported_say_so(f):
    with pytest.raises(LookupError, match=r"helper of code s2sgrad generated.*cannot be"):
        sg.jacobian(sg.hessian(f))(X)
