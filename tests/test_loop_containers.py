"""Lists, dicts and tuples written and read inside loops, and conditionals on loop-carried
values: every mode against central differences (issue 16)."""

import re

import loop_container_programs as lcp
import numpy as np
import pytest
from numerical import numerical_gradient

import s2sgrad as sg


def _second_derivative(f, x, eps=1e-4):
    def slope(y):
        return float(numerical_gradient(f, [y], 0))

    return (slope(x + eps) - slope(x - eps)) / (2 * eps)


def check_every_mode(f, x, second=True):
    """Value and first derivative of `f` at the number `x` in every mode, and its second
    derivative by forward-over-reverse (hessian, hvp) and reverse-over-reverse, against
    central differences."""
    value = f(x)
    slope = float(numerical_gradient(f, [x], 0))
    close = {"rtol": 1e-5, "atol": 1e-6}
    np.testing.assert_allclose(sg.grad(f)(x), slope, **close)
    np.testing.assert_allclose(sg.grad(f, optimize=False)(x), slope, **close)
    got_value, got_slope = sg.value_and_grad(f)(x)
    np.testing.assert_allclose(got_value, value, **close)
    np.testing.assert_allclose(got_slope, slope, **close)
    out, vjp_fn = sg.vjp(f, x)
    np.testing.assert_allclose(out, value, **close)
    np.testing.assert_allclose(vjp_fn(2.0)[0], 2.0 * slope, **close)
    out, tangent = sg.jvp(f, (x,), (2.0,))
    np.testing.assert_allclose(out, value, **close)
    np.testing.assert_allclose(tangent, 2.0 * slope, **close)
    np.testing.assert_allclose(sg.jacobian(f, mode="forward")(x), slope, **close)
    np.testing.assert_allclose(sg.jacobian(f, mode="reverse")(x), slope, **close)
    if second:
        curvature = _second_derivative(f, x)
        np.testing.assert_allclose(sg.hessian(f)(x), curvature, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(sg.grad(sg.grad(f))(x), curvature, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(sg.hvp(f)(x, 0.5), 0.5 * curvature, rtol=1e-4, atol=1e-5)


def test_slot_read_and_written_in_a_loop_keeps_its_adjoint():
    # the example: the adjoint loop made a new dhidden every iteration (10.5)
    np.testing.assert_allclose(sg.grad(lcp.slot_read_and_written)(2.0), 25.5)
    check_every_mode(lcp.slot_read_and_written, 2.0)


def test_lstm_over_layers():
    check_every_mode(lcp.lstm_over_layers, 0.7)


def test_value_and_grad_of_a_loop_gives_the_value_before_the_adjoint_sweep():
    # the adjoint sweep pops loop values back into their names: the value was popped too
    assert sg.value_and_grad(lcp.loop_value)(2.0) == (7.0, 5.0)


CASES = [
    ("negative_index_after_append", 0.9),
    ("negative_indices", 0.8),
    ("negative_index_variable", 0.6),
    ("slice_of_a_list", 0.7),
    ("list_stacked_and_indexed", 0.8),
    ("list_summed_and_indexed", 0.9),
    ("constant_written_into_a_list", 0.7),
    ("constant_written_into_a_dict", 0.7),
    ("list_popped_in_a_while_loop", 0.9),
    ("dict_slots_in_a_loop", 0.8),
    ("slots_read_before_written", 0.6),
    ("slots_in_a_while_loop", 0.5),
    ("slots_with_break", 1.3),
    ("conditional_expression_in_a_for_loop", 1.0),
    ("conditional_expression_in_a_while_loop", 1.0),
    ("conditional_expression_in_a_while_test", 1.3),
    ("and_or_in_a_loop", 1.3),
    ("if_elif_else_in_a_loop", 0.7),
    ("appended_after_a_read", 0.7),
    ("appended_after_reads_in_a_loop", 0.8),
    ("list_unpacked_and_stacked", 0.7),
    ("dict_keys_added_in_a_loop", 0.7),
    ("value_popped_and_dropped", 0.7),
    ("last_of_appended", 0.8),
    ("pairs_in_a_list", 0.7),
    ("nested_literal_argument", 0.7),
    ("appended_and_popped_in_a_loop", 0.7),
    ("slots_swapped_in_a_loop", 0.7),
    ("slot_and_name_unpacked_in_a_loop", 0.7),
]


@pytest.mark.parametrize(("name", "x"), CASES, ids=[c[0] for c in CASES])
def test_every_mode(name, x):
    check_every_mode(getattr(lcp, name), x)


REJECTED = [  # (the mutation analysis, transforms/mutation.py, refuses them at the change)
    ("extended", "xs.extend(", "xs.extend(...) changes xs in place"),
    ("inserted", "xs.insert(", "xs.insert(...) changes xs in place"),
    ("updated", "d.update(", "d.update(...) changes d in place"),
    ("reversed_in_place", "xs.reverse(", "xs.reverse(...) changes xs in place"),
    ("calls_a_function_appending", "xs.append(v", ".append() on 'xs', which may share memory"),
    ("calls_a_function_writing", 'd["a"] = v', "item assignment to 'd', which may share"),
    ("written_through_an_element", "row[", "item assignment to 'row', which may share"),
]


@pytest.mark.parametrize(("name", "code", "message"), REJECTED, ids=[r[0] for r in REJECTED])
@pytest.mark.parametrize("transform", ["grad", "jvp"])
def test_changes_the_derivative_cannot_follow_are_rejected_at_their_line(
    name, code, message, transform
):
    # they gave a derivative that missed the change (extend, insert, ...) or the callee's
    # write into the caller's list or dict
    f = getattr(lcp, name)
    with pytest.raises(sg.TransformError, match=re.escape(message)) as caught:
        if transform == "grad":
            sg.grad(f)(0.7)
        else:
            sg.jvp(f, (0.7,), (1.0,))
    with open(lcp.__file__) as source:
        lines = source.read().splitlines()
    assert caught.value.filename == lcp.__file__
    assert code in lines[caught.value.lineno - 1]


@pytest.mark.parametrize(
    "name", ["lists_joined", "list_repeated", "list_grown_by_joins", "tuple_grown_by_joins"]
)
def test_joined_and_repeated_lists_are_differentiated(name):
    # a join's adjoint was given to each operand whole (a wrong number, then a TypeError);
    # forward mode dropped the zeros of an operand with no tangent (a wrong number)
    f = getattr(lcp, name)
    slope = float(numerical_gradient(f, [0.7], 0))
    np.testing.assert_allclose(sg.grad(f)(0.7), slope, rtol=1e-6)
    np.testing.assert_allclose(sg.jvp(f, (0.7,), (1.0,))[1], slope, rtol=1e-6)
    curvature = float(numerical_gradient(sg.grad(f), [0.7], 0))
    np.testing.assert_allclose(sg.hessian(f)(0.7), curvature, rtol=1e-5)
    np.testing.assert_allclose(sg.grad(sg.grad(f))(0.7), curvature, rtol=1e-5)


def test_a_join_of_call_results_is_right_in_forward_mode_and_an_error_in_reverse():
    # the tangent of the join lacked the zeros of the operand with none: ys[0] read w's
    # tangent (a wrong number)
    f = lcp.lists_from_calls_joined
    slope = float(numerical_gradient(f, [0.7], 0))
    np.testing.assert_allclose(sg.jvp(f, (0.7,), (1.0,))[1], slope, rtol=1e-6)
    with pytest.raises(TypeError, match="joining or repeating lists"):
        sg.grad(f)(0.7)


def test_a_join_of_inlined_call_results_is_right_in_both_modes():
    f = lcp.lists_from_inlined_calls_joined
    slope = float(numerical_gradient(f, [0.7], 0))
    np.testing.assert_allclose(sg.jvp(f, (0.7,), (1.0,))[1], slope, rtol=1e-6)
    np.testing.assert_allclose(sg.grad(f)(0.7), slope, rtol=1e-6)
    sg.check_grads(f, (0.7,), order=2)


def test_a_repeat_the_compiler_cannot_see_is_an_error_not_a_wrong_number():
    f = lcp.list_repeated_by_a_count  # the count is an argument: arithmetic or a repeat?
    with pytest.raises(TypeError, match="joining or repeating lists"):
        sg.grad(f)(0.7, 2)
    slope = float(numerical_gradient(lambda w: f(w, 2), [0.7], 0))
    np.testing.assert_allclose(sg.jvp(f, (0.7, 2), (1.0, None))[1], slope, rtol=1e-6)


def _jacobian_by_differences(f, x, eps=1e-6):
    columns = []
    for k in range(x.size):
        plus, minus = x.copy(), x.copy()
        plus[k] += eps
        minus[k] -= eps
        columns.append((f(plus) - f(minus)) / (2 * eps))
    return np.stack(columns, axis=-1)


SLOTS_GIVEN_A_NUMBER = [
    ("dict_of_an_array_and_its_sum", 3),
    ("list_of_arrays_and_their_sums", 3),
    ("elements_picked_twice_and_summed", 4),
]


@pytest.mark.parametrize(("name", "size"), SLOTS_GIVEN_A_NUMBER)
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_jacobian_of_array_slots_given_a_broadcast_adjoint(name, size, mode):
    # a number (np.sum's adjoint) added to an array slot of a dict or list, or to elements
    # picked by an index array: in the batched sweep of a reverse-mode Jacobian its
    # directions were added along the slots' last axis (a wrong number when as many
    # directions as slots) or failed to broadcast
    f = getattr(lcp, name)
    x = np.linspace(0.3, 0.3 * size, size)
    want = _jacobian_by_differences(f, x)
    np.testing.assert_allclose(sg.jacobian(f, mode=mode)(x), want, rtol=1e-5, atol=1e-6)


def test_builtin_sum_of_an_array():
    # sum's adjoint was a list per term: two of them were concatenated, not added
    f = lcp.builtin_sum_of_an_array
    x = np.array([0.3, 0.6, 0.9])
    want = numerical_gradient(f, [x], 0)
    np.testing.assert_allclose(sg.grad(f)(x), want, rtol=1e-6)
    np.testing.assert_allclose(sg.jacobian(f, mode="reverse")(x), want, rtol=1e-6)
    np.testing.assert_allclose(sg.hessian(f)(x), 2.0 * np.eye(3), atol=1e-9)


def values_of_a_dict(x):
    parts = {"a": x[:2] * 2.0}
    s = 0.0
    for v in parts.values():
        s = s + np.sum(v**3)
    return s


def slots_by_a_loop_key(x):
    parts = {"a": x[:2], "b": x[1:]}
    s = 0.0
    for k in ["a", "b"]:
        s = s + np.sum(parts[k] ** 3)
    return s


@pytest.mark.parametrize("f", [values_of_a_dict, slots_by_a_loop_key])
def test_second_derivatives_of_dict_slots_read_in_a_loop(f):
    # a missing slot of a batched container adjoint was one zero per direction, which the
    # slot's tangent (directions by elements) did not broadcast against: sg.hessian and
    # sg.jacobian(sg.grad(f)) raised inside generated code (hunt-edge repro_6)
    x = np.array([0.4, -0.7, 1.1])
    grad = sg.grad(f)
    want = np.array([(grad(x + e) - grad(x - e)) / 2e-6 for e in np.eye(3) * 1e-6])
    np.testing.assert_allclose(sg.hessian(f)(x), want, atol=1e-5)
    np.testing.assert_allclose(sg.jacobian(grad)(x), want, atol=1e-5)


SCALES = np.array([1.0, 0.5])


def filled_then_read_backwards(ys):  # a filter's states, then a smoother's backward pass
    ms = [None] * len(ys)
    for t in range(len(ys)):
        ms[t] = ys[t] * SCALES
    out = 0.0
    for t in reversed(range(len(ys))):
        out = out + np.sum(ms[t] ** 3)
    return out


def test_second_derivatives_of_a_list_filled_then_read_backwards():
    # (hunt, science3 repro_4: a broadcast error inside generated code, the same class)
    ys = np.array([0.3, 0.5, -0.2])
    grad = sg.grad(filled_then_read_backwards)
    want = np.array([(grad(ys + e) - grad(ys - e)) / 2e-6 for e in np.eye(3) * 1e-6])
    np.testing.assert_allclose(sg.hessian(filled_then_read_backwards)(ys), want, atol=1e-5)
    np.testing.assert_allclose(sg.grad(grad)(ys), want.sum(0), atol=1e-5)


def states_as_pairs(ys):  # a filter's (mean, variance) per step, in a preallocated list
    states = [None] * 3
    for t in range(3):
        states[t] = (ys[t] * SCALES, ys[t] ** 2)
    m, p = states[1]
    return np.sum(m**3) * p + states[2][1]


def states_as_number_pairs(ys):
    states = [None] * 3
    for t in range(3):
        states[t] = (ys[t] * 2.0, ys[t] ** 2)
    m, p = states[1]
    return m**3 * p


@pytest.mark.parametrize("f", [states_as_pairs, states_as_number_pairs])
def test_tuples_stored_in_the_slots_of_a_list(f):
    # the slot's adjoint was unbroadcast to the tuple: np.asarray of an (array, number) pair
    # raised inside generated code, two numbers said the code joined lists (hunt, science3
    # repro_5)
    ys = np.array([0.3, 0.5, -0.2])
    want = np.array([(f(ys + e) - f(ys - e)) / 2e-6 for e in np.eye(3) * 1e-6])
    np.testing.assert_allclose(sg.grad(f)(ys), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(sg.jacobian(f, mode="reverse")(ys), want, rtol=1e-6, atol=1e-9)
    grad = sg.grad(f)
    hessian = np.array([(grad(ys + e) - grad(ys - e)) / 2e-6 for e in np.eye(3) * 1e-6])
    np.testing.assert_allclose(sg.hessian(f)(ys), hessian, atol=1e-5)
    np.testing.assert_allclose(sg.hvp(f)(ys, np.ones(3)), hessian @ np.ones(3), atol=1e-5)
