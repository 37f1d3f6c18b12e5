"""Small user functions are written out where they are called (`transforms/anf_inline.py`):
the derivative is right whether a call is inlined or stays a call, and which one it is shows
in the generated code. Every derivative is checked against central differences."""

import re

import inline_elsewhere as elsewhere
import inline_programs as ip
import numpy as np
import pytest
from numerical import numerical_gradient

import s2sgrad as sg

X3 = np.array([0.3, -0.8, 1.4])
Y3 = np.array([1.1, 0.4, -0.6])


def _check_reverse(f, args, wrt):
    got = sg.grad(f, wrt=wrt)(*args)
    got = got if isinstance(wrt, tuple) else (got,)
    for i, g in zip(wrt if isinstance(wrt, tuple) else (wrt,), got, strict=True):
        np.testing.assert_allclose(g, numerical_gradient(f, args, i), rtol=1e-6, atol=1e-8)


def _calls(f, args, wrt=0) -> set[str]:
    """The user functions the generated gradient still calls (their forward halves)."""
    text = sg.source(sg.grad(f, wrt=wrt), *args)
    return {re.sub(r"_\d+$", "", name) for name in re.findall(r"def _fwd_(\w+)\(", text)}


def test_a_time_step_in_a_helper_is_inlined():
    args = (0.7, -0.3, 1.9)
    _check_reverse(ip.spring, args, (0, 1, 2))
    sg.check_grads(ip.spring, args, order=2)
    text = sg.source(sg.grad(ip.spring, wrt=(0, 1, 2)), *args)
    assert "_fwd_step" not in text
    assert re.search(r"# line \d+ of step: a = -k \* x", text)


def test_a_helper_updating_a_parameter_in_place_stays_a_call():
    args = (0.7, -0.3, 1.9)
    _check_reverse(ip.spring_in_place, args, (0, 1, 2))
    sg.check_grads(ip.spring_in_place, args, order=2)
    assert _calls(ip.spring_in_place, args) == {"step_in_place"}
    # and both give the same numbers
    np.testing.assert_allclose(
        sg.grad(ip.spring_in_place, wrt=(0, 1, 2))(*args),
        sg.grad(ip.spring, wrt=(0, 1, 2))(*args),
        rtol=1e-12,
    )


def test_a_callee_reads_its_own_modules_globals():
    # elsewhere.SCALE (2.0) and this module's SCALE (3.0): the first callee inlined brings
    # its SCALE, so the second, whose SCALE is another value, keeps its call
    assert ip.scaled_twice(X3) == pytest.approx(6.0 * np.sum(X3**2))
    _check_reverse(ip.scaled_twice, (X3,), 0)
    np.testing.assert_allclose(sg.grad(ip.scaled_twice)(X3), 12.0 * X3, rtol=1e-12)
    assert _calls(ip.scaled_twice, (X3,)) == {"scaled_here"}
    sg.check_grads(ip.scaled_twice, (X3,), order=2)


def test_a_callees_global_joins_the_callers_constants():
    _check_reverse(ip.shifted_sum, (X3,), 0)
    assert _calls(ip.shifted_sum, (X3,)) == set()
    sg.check_grads(ip.shifted_sum, (X3,), order=2)


def test_a_callees_global_named_like_a_callers_local_stays_a_call():
    f = ip.uses_a_local_named_like_a_constant
    _check_reverse(f, (X3,), 0)
    assert _calls(f, (X3,)) == {"shifted"}
    np.testing.assert_allclose(f(X3), np.sum((X3 + elsewhere.OFFSET) * 2.0 * X3))


def test_defaults_and_keyword_only_parameters():
    _check_reverse(ip.with_defaults, (X3,), 0)
    sg.check_grads(ip.with_defaults, (X3,), order=2)
    assert _calls(ip.with_defaults, (X3,)) == set()


def test_a_helper_with_a_loop_and_an_early_return():
    for x in (X3, np.array([0.3, 0.1, 0.45]), np.array([1.5, 0.2, 0.3])):  # (no ties)
        _check_reverse(ip.calls_a_looping_helper, (x,), 0)
        sg.check_grads(ip.calls_a_looping_helper, (x,), order=2)
    assert _calls(ip.calls_a_looping_helper, (X3,)) == set()


def test_helpers_calling_helpers():
    _check_reverse(ip.nested_calls, (X3, Y3), (0, 1))
    sg.check_grads(ip.nested_calls, (X3, Y3), order=2)
    assert _calls(ip.nested_calls, (X3, Y3), (0, 1)) == set()


def test_recursion_stays_a_call():
    _check_reverse(ip.recursive, (0.8,), 0)
    sg.check_grads(ip.recursive, (0.8,), order=2)
    assert _calls(ip.recursive, (0.8,)) == {"countdown"}


def test_forward_mode_of_inlined_helpers():
    for f, args in ((ip.spring, (0.7, -0.3, 1.9)), (ip.with_defaults, (X3,))):
        direction = tuple(np.ones_like(np.asarray(a, dtype=float)) * 0.5 for a in args)
        direction = tuple(float(d) if np.ndim(d) == 0 else d for d in direction)
        _, tangent = sg.jvp(f, args, direction)
        h = 1e-6
        plus = f(*(a + h * d for a, d in zip(args, direction, strict=True)))
        minus = f(*(a - h * d for a, d in zip(args, direction, strict=True)))
        np.testing.assert_allclose(tangent, (plus - minus) / (2 * h), rtol=1e-6)


def test_an_error_in_an_inlined_callee_points_into_the_callee():
    with pytest.raises(sg.TransformError) as info:
        sg.grad(ip.bad_callee_caller)(1.0, "k")
    assert info.value.filename.endswith("inline_programs.py")
    assert info.value.lineno == ip.keyed_record.__code__.co_firstlineno + 1


def test_arguments_are_evaluated_in_the_calls_order():
    # two_args(b=xs.pop(), a=xs.pop()): b pops first
    for f in (ip.pops_into_keywords, ip.pops_into_a_nested_functions_keywords):
        assert f(0.7) == pytest.approx(2 * 0.7 + 0.49)
        assert sg.grad(f)(0.7) == pytest.approx(2.0 + 1.4)
        sg.check_grads(f, (0.7,), order=2)


def test_a_method_calling_methods_is_inlined():
    model = ip.Spring(1.7, 0.05)
    args = (0.7, -0.3)
    _check_reverse(model.energy, args, (0, 1))
    sg.check_grads(model.energy, args, order=2)
    # step (an instance method) and squared (a static one) are written out; unit, a class
    # method, whose first argument is the class, stays a call
    assert _calls(model.energy, args, (0, 1)) == {"unit"}


def test_an_inlined_method_reads_the_instance_when_it_runs():
    model = ip.Spring(1.7, 0.05)
    gradient = sg.grad(model.energy, wrt=(0, 1))
    gradient(0.7, -0.3)
    model.k = 0.4  # the instance's attributes are read as the derivative runs
    got = gradient(0.7, -0.3)
    for i, g in enumerate(got):
        np.testing.assert_allclose(g, numerical_gradient(model.energy, (0.7, -0.3), i), rtol=1e-6)


def test_a_number_from_a_method_call_is_updated_as_a_number():
    # the mutation walk took self.scaled(...) for a method of an array, whose result may be
    # its argument: y *= ... was refused as an update of the argument y in place
    loss = ip.Scaler(0.8).loss
    assert sg.grad(loss)(0.6) == pytest.approx(numerical_gradient(loss, (0.6,), 0), rel=1e-6)
    sg.check_grads(loss, (0.6,), order=2)


def test_a_constant_output_compiles_without_warnings():
    # the second-order code inlines the first-order code's halves, and the output check
    # read `0.0625 is None` once the result was a literal (a SyntaxWarning at every compile)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", SyntaxWarning)
        assert sg.hessian(ip.CONSTANT_LAMBDA)(0.3) == 0.0
        assert sg.grad(sg.grad(ip.CONSTANT_LAMBDA))(0.3) == 0.0
    with pytest.raises(TypeError, match="has_aux"):
        sg.grad(ip.returns_a_pair)(0.3)
