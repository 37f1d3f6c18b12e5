"""Reads that mix integer lists with slices or numbers under a GradientTape.

The index is a recorded constant of the lowered code; asking whether each constant was
complex (`np.iscomplexobj`) turned ``(slice(None), [3, 3, 0])`` into an array, a ValueError
from inside s2sgrad at the first ``gradient()`` (hunt on the TensorFlow guides, repro_10).
Against central differences.
"""

from __future__ import annotations

import numpy as np
import pytest

import s2sgrad as sg

A = np.arange(12.0).reshape(3, 4) / 10.0 - 0.4

READS = {
    "columns": lambda x: x[:, [3, 3, 0]],
    "rows": lambda x: x[[0, 1], :],
    "rows at a column": lambda x: x[[0, 1], 2],
    "ix_": lambda x: x[np.ix_([0, 2], [1, 3])],
    "mask and a column": lambda x: x[[True, False, True], 1],
}


@pytest.mark.parametrize("name", list(READS))
def test_mixed_index_reads_under_a_tape(name):
    read = READS[name]

    def f(x):
        return np.sum(np.sin(read(x)) * read(x))

    x = sg.constant(A)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    want = np.zeros_like(A)
    for k in range(A.size):
        step = np.zeros(A.size)
        step[k] = 1e-6
        step = step.reshape(A.shape)
        want.flat[k] = (f(A + step) - f(A - step)) / 2e-6
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), want, rtol=1e-6, atol=1e-8)
