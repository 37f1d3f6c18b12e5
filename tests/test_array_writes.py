"""Writes into local arrays (y[i] = ..., y[1:3] += ..., masks, fancy indices) in reverse mode."""

import numpy as np
import pytest
import write_programs as wp
from numerical import numerical_gradient

import s2sgrad as sg

rng = np.random.default_rng(4)

CASES = [
    ("fill_by_index", (rng.random(4),)),
    ("slice_update", (rng.random(5),)),
    ("overwrite_a_read_slot", (rng.random(3),)),
    ("mask_write", (rng.random(6),)),
    ("fancy_write", (rng.random((2, 3)),)),
    ("recurrence", (rng.random(5),)),
]


@pytest.mark.parametrize(("name", "args"), CASES, ids=[c[0] for c in CASES])
def test_writes_match_finite_differences_and_keep_inputs(name, args):
    f = getattr(wp, name)
    before = [np.copy(a) for a in args]
    got = sg.grad(f)(*args)
    for a, b in zip(args, before, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(got, numerical_gradient(f, args, 0), rtol=1e-5, atol=1e-6)


def test_writing_into_an_argument_is_rejected_at_its_line():
    with pytest.raises(sg.TransformError, match="item assignment to 'x'") as info:
        sg.grad(wp.writes_into_argument)
    assert info.value.lineno == wp.writes_into_argument.__code__.co_firstlineno + 1


def test_written_slots_are_restored_for_earlier_adjoints():
    text = sg.source(sg.grad(wp.overwrite_a_read_slot), np.ones(3))
    assert "saved_slot(y, 0)" in text  # saved before the write, put back in the adjoint
