"""Scalar functions of one number whose lists, dicts and tuples are read and written inside
loops (issue 16, "Container slots in loops"), and whose loop-carried values pass through
conditional expressions and branches. Each is checked in every mode against central
differences by tests/test_loop_containers.py."""

import numpy as np


def slot_read_and_written(w):
    hidden = [1.5, 1.5]
    total = 0.0
    for _step in range(3):
        hidden[0] = hidden[0] * w
        total = total + hidden[0]
    return total


def cell(x, h, c):
    c2 = np.tanh(x + h) * c + 0.5 * x
    return np.sin(c2) * h, c2


def lstm_over_layers(w):
    hidden = [0.3, 0.4]
    state = [0.1, 0.2]
    x = w
    for _step in range(2):
        for layer in range(2):
            hidden[layer], state[layer] = cell(x, hidden[layer], state[layer])
            x = hidden[layer]
    return x + state[0] * state[1]


def loop_value(w):
    total = 0.0
    for _step in range(3):
        total = total * w + 1.0
    return total


def negative_index_after_append(w):
    xs = [w]
    for _step in range(3):
        xs.append(xs[-1] * w)
    return xs[-1] + xs[-2]


def negative_indices(w):
    xs = [w, w * w, 3.0]
    return xs[-1] * xs[-2] + xs[-3]


def negative_index_variable(w):
    xs = [w, w * w, 3.0 * w]
    total = 0.0
    for i in range(-3, 0):
        total = total + xs[i] * xs[i]
    return total


def slice_of_a_list(w):
    xs = [w, w * w, 3.0 * w]
    ys = xs[1:]
    return ys[0] * ys[-1]


def list_stacked_and_indexed(w):
    xs = []
    for i in range(3):
        xs.append(w * (i + 1))
    a = np.stack(xs)
    b = np.array(xs)
    return np.sum(a * b) + xs[0] * xs[-1]


def list_summed_and_indexed(w):
    xs = [w * k for k in range(3)]
    ys = [x * x for x in xs]
    return sum(ys) + ys[-1]


def constant_written_into_a_list(w):
    xs = [w, w * w]
    xs[0] = 3.0
    return xs[0] * xs[1]


def constant_written_into_a_dict(w):
    d = {"a": w, "b": w * w}
    d["a"] = 3.0
    return d["a"] * d["b"]


def list_popped_in_a_while_loop(w):
    xs = [w, 2.0 * w, 3.0 * w]
    total = 0.0
    while len(xs) > 0:
        v = xs.pop()
        total = total * w + v
    return total


def dict_slots_in_a_loop(w):
    d = {"a": w, "b": 1.0}
    for _step in range(3):
        d["b"] = d["b"] * d["a"]
        d["a"] = d["a"] + w
    return d["a"] * d["b"]


def slots_read_before_written(w):
    xs = [w, 1.0]
    for _step in range(3):
        a = xs[1]
        xs[1] = xs[0] * a
        xs[0] = xs[0] + a
    return xs[0] * xs[1]


def slots_in_a_while_loop(w):
    xs = [w, 0.0]
    i = 0
    while i < 3:
        xs[1] = xs[1] + xs[0] * xs[0]
        xs[0] = xs[0] * 0.5 + w
        i = i + 1
    return xs[1]


def slots_with_break(w):
    xs = [w, 1.0]
    for _step in range(10):
        xs[0] = xs[0] * w
        if xs[0] > 5.0:
            break
        xs[1] = xs[1] + xs[0]
    return xs[0] + xs[1]


def conditional_expression_in_a_for_loop(x):
    total = 0.0
    for i in range(3):
        total = total + x * (i - 1.5)
        total = total if total >= 0 else -total
    return total


def conditional_expression_in_a_while_loop(x):
    total = 0.0
    i = 0
    while i < 3:
        total = total + x * (i - 1.5)
        total = total if total >= 0 else -total
        i = i + 1
    return total


def conditional_expression_in_a_while_test(x):
    total = 0.1
    while total < 5.0:
        total = total * x + 1.0
        total = total if total < 3.0 else total + 0.5
    return total


def and_or_in_a_loop(x):
    total = 0.5
    for _step in range(3):
        a = total * x
        total = (a > 1.0 and a) or (total + x)
    return total


def if_elif_else_in_a_loop(x):
    total = 0.0
    for i in range(4):
        total = total + x * (i - 1.5)
        if total >= 0:
            total = total * 2.0
        elif total < -1.0:
            total = -total
        else:
            total = total - x
    return total


def appended_after_a_read(w):
    xs = [w]
    xs.append(w * w)
    a = xs[1]
    xs.append(5.0)
    return a


def appended_after_reads_in_a_loop(w):
    xs = [w]
    total = 0.0
    for i in range(3):
        xs.append(xs[i] * w)
        total = total + xs[i + 1]
        xs.append(1.0)
    return total


def list_unpacked_and_stacked(w):
    xs = [w, w * w]
    a, b = xs
    return a * b + np.sum(np.stack(xs))


def dict_keys_added_in_a_loop(w):
    d = {}
    for i in range(3):
        d[i] = w * (i + 1)
    return d[0] * d[2] + d[1]


def value_popped_and_dropped(w):
    xs = [w, w * w]
    xs.pop()
    return xs[-1]


def last_of_appended(w):
    xs = [w]
    for _step in range(2):
        xs.append(xs[-1] * w)
    return xs[-1]


def extended(w):
    xs = [w]
    xs.extend([w * w, 3.0])
    return xs[1] * xs[-1]


def inserted(w):
    xs = [w]
    xs.insert(0, w * w)
    return xs[0] * 2.0 + xs[1]


def updated(w):
    d = {"a": 1.0}
    d.update({"a": w * w})
    return d["a"]


def reversed_in_place(w):
    xs = [w, w * w]
    xs.reverse()
    return xs[0]


def appends_to_its_argument(xs, v):
    xs.append(v * v)
    return 0.0


def calls_a_function_appending(w):
    xs = [w]
    appends_to_its_argument(xs, w)
    return xs[0] + xs[1]


def writes_into_its_argument(d, v):
    d["a"] = v * 3.0
    return v


def calls_a_function_writing(w):
    d = {"a": 1.0}
    writes_into_its_argument(d, w)
    return d["a"] * w


def lists_joined(w):
    xs = [w]
    tail = [w * w]
    ys = xs + tail
    return ys[0] * ys[1]


def list_repeated(w):
    xs = [w] * 3
    xs[1] = xs[1] * w
    return xs[0] + xs[1] + xs[2]


def list_grown_by_joins(w):
    hs = []
    for i in range(3):
        hs = hs + [w * i]  # noqa: RUF005 (a join is the point)
    front = [w * w] + hs + [2.0]  # noqa: RUF005
    return front[0] * hs[-1] + np.sum(np.array(front)) * front[-2] * front[-1]


def tuple_grown_by_joins(w):
    hs = ()
    for i in range(3):
        hs = hs + (w * i + 1.0,)  # noqa: RUF005
    return hs[-1] * hs[1] * hs[0]


def _pair(w):
    pair = [w]
    pair.append(2.0 * w)  # (a change in place: the call stays a call)
    return pair


def _pair_inlined(w):
    return [w, 2.0 * w]


def _single(c):
    return [c]


def lists_from_calls_joined(w):
    ys = _single(3.0) + _pair(w)
    return ys[0] * w + ys[1] * ys[2]


def lists_from_inlined_calls_joined(w):
    ys = _single(3.0) + _pair_inlined(w)  # (both inlined: the join is one the compiler sees)
    return ys[0] * w + ys[1] * ys[2]


def list_repeated_by_a_count(w, n):
    xs = [w, 2.0 * w] * n
    return xs[0] * xs[3]


def pairs_in_a_list(w):
    pairs = [(w, 1.0), (2.0, w)]
    total = 0.0
    for pair in pairs:
        a, b = pair
        total = total + a * b
    return total


def first_times_second(p):
    a, b = p[0]
    return a * b + p[1]


def nested_literal_argument(w):
    return first_times_second(((w, 2.0), w * w))


def written_through_an_element(w):
    grid = [[w, 1.0], [2.0, w]]
    for i in range(2):
        row = grid[i]
        row[0] = row[0] * row[1]
    return grid[0][0] + grid[1][0]


def appended_and_popped_in_a_loop(w):
    h = [w, 0.5 * w]
    total = 0.0
    for _step in range(2):
        h.append(h[0] * w)
        total = total + h[-1] * h[-2]
        u = h.pop()
        total = total + u * 0.5
    return total


def slots_swapped_in_a_loop(w):
    h = [w, w * w]
    for _step in range(3):
        h[0], h[1] = h[1], h[0] * w
    return h[0] + 2.0 * h[1]


def slot_and_name_unpacked_in_a_loop(w):
    h = [w, 1.0]
    a = 0.5
    for i in range(2):
        h[i], a = a * w, h[i] + a
    return h[0] * h[1] + a


def dict_of_an_array_and_its_sum(x):
    d = {"a": x * 1.0, "b": x[0]}
    for _step in range(2):
        d["a"] = d["a"] * d["b"] + np.cos(d["a"])
        d["b"] = d["b"] + np.sum(d["a"])
    return d["a"] * d["b"]


def list_of_arrays_and_their_sums(x):
    hs = [x * 1.0, x * 2.0]
    for _step in range(2):
        hs.append(hs[-1] * np.sum(hs[-2]) + x)
    return hs[-1] + np.sum(hs[-3])


def elements_picked_twice_and_summed(x):
    picked = x[[0, 2, 2]]
    return x[:3] * np.sum(picked)


def builtin_sum_of_an_array(x):
    return sum(x * x) + sum(x)
