"""Numbers cannot change in place: ``s += v`` on a Python number or a NumPy scalar (an element
of a vector, a reduction, a callee's default) and ``d[k] += v`` on a slot holding one only
rebind, and must give the right derivative in reverse and forward mode (each of these was
refused as a change to shared memory before the mutation analysis knew values' kinds). The
same statements on an array shared with an argument or another name stay refused, at the
user's line, at the first call at the latest."""

import inspect

import number_update_programs as programs
import numpy as np
import pytest
from numerical import numerical_gradient

import s2sgrad as sg

VECTOR = np.array([0.3, 1.2, -0.7])
OTHER = np.array([0.4, -0.6, 0.9])
MATRIX = np.array([[0.3, 1.2, 2.0], [0.7, -0.4, 1.1], [1.5, 0.2, 0.9]])


def _check(fn, args):
    """Every argument's gradient in reverse mode and its directional derivatives in forward
    mode against central differences; the arguments unchanged."""
    before = [np.copy(a) for a in args]
    for wrt, arg in enumerate(args):
        expected = numerical_gradient(fn, list(args), wrt)
        got = sg.grad(fn, wrt=wrt)(*args)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
        x = np.asarray(arg, dtype=float)
        for k in np.ndindex(x.shape):
            seed = np.zeros_like(x)
            seed[k] = 1.0
            tangents = tuple(
                (seed if x.shape else 1.0) if i == wrt else np.zeros_like(np.asarray(a)) * 1.0
                for i, a in enumerate(args)
            )
            tangents = tuple(float(t) if np.ndim(t) == 0 else t for t in tangents)
            _, out = sg.jvp(fn, tuple(args), tangents)
            np.testing.assert_allclose(np.sum(out), expected[k], rtol=1e-6, atol=1e-6)
    for old, new in zip(before, args, strict=True):
        np.testing.assert_array_equal(old, new)


@pytest.mark.parametrize(
    "name, args",
    [
        ("scale_elements_of_a_global_array", (VECTOR,)),
        ("time_loop_on_a_number_argument", (0.8, VECTOR)),
        ("loop_on_the_larger_of_a_number_argument_and_a_mean", (0.8, VECTOR)),
        ("loop_on_the_larger_of_a_number_argument_and_a_mean", (-0.9, OTHER)),
        ("dict_slot_holding_a_number", (0.7, VECTOR)),
        ("dict_slot_holding_a_number", (-1.3, OTHER)),
        ("list_slot_holding_a_number", (0.7, VECTOR)),
        ("unpack_the_rows_of_a_vector", (VECTOR,)),
        ("elements_of_a_vector_argument", (VECTOR,)),
        ("reductions_are_numbers", (OTHER,)),
        ("update_the_number_a_callee_returns", (0.6, VECTOR)),
        ("calls_with_defaults_and_numbers", (VECTOR,)),
    ],
)
def test_update_of_a_number_rebinds_it(name, args):
    _check(getattr(programs, name), tuple(np.copy(a) if np.ndim(a) else a for a in args))


def test_a_number_update_refused_for_an_array_is_accepted_for_a_number():
    import mutation_programs

    for name in ("update_through_alias", "update_item_of_list", "mask_updated_through_alias"):
        _check(getattr(mutation_programs, name), (1.3,))
    _check(mutation_programs.normalize_rows_through_view, (VECTOR.copy(),))  # rows: numbers


def _marked(fn):
    lines, start = inspect.getsourcelines(fn)
    for offset, text in enumerate(lines):
        if "# REJECT" in text:
            return start + offset, len(text) - len(text.lstrip()) + 1
    raise AssertionError(fn.__name__)


@pytest.mark.parametrize(
    "name, args, at",
    [
        ("dict_slot_holding_an_array_argument", (VECTOR,), None),
        ("list_slot_holding_a_local_array", (VECTOR,), None),
        ("rows_of_a_matrix_argument", (MATRIX,), None),
        ("unpack_the_rows_of_a_local_matrix", (MATRIX,), None),
        ("update_the_array_a_callee_returns", (VECTOR,), None),
        ("calls_with_a_local_array", (VECTOR,), "array_callee"),
        ("calls_with_an_array_argument", (VECTOR, OTHER), "array_callee"),
    ],
)
def test_update_of_a_shared_array_is_refused_at_its_line(name, args, at):
    fn = getattr(programs, name)
    args = tuple(np.copy(a) for a in args)
    line, column = _marked(getattr(programs, at or name))
    for transform in (
        lambda: sg.grad(fn)(*args),
        lambda: sg.jvp(fn, args, tuple(np.ones_like(a) for a in args)),
    ):
        with pytest.raises(sg.TransformError) as info:
            transform()
        assert info.value.filename == programs.__file__
        assert (info.value.lineno, info.value.offset) == (line, column), str(info.value)
    for old, new in zip((VECTOR, OTHER), args, strict=False):
        if new.shape == old.shape and new is not MATRIX:
            assert np.all(np.isfinite(new))
    np.testing.assert_array_equal(args[0], MATRIX if args[0].ndim == 2 else VECTOR)


def test_a_callee_checked_per_call_site():
    """One callee, two callers: a number for its parameter is fine, an array is refused (the
    callee is compiled once, so the check is the call's, not the compiled callee's)."""
    assert np.isfinite(sg.grad(programs.calls_with_defaults_and_numbers)(VECTOR.copy())).all()
    with pytest.raises(sg.TransformError):
        sg.grad(programs.calls_with_a_local_array)(VECTOR.copy())
    assert np.isfinite(sg.grad(programs.calls_with_defaults_and_numbers)(OTHER.copy())).all()
