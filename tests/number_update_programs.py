"""Augmented assignments and slot updates on values that cannot change in place: Python
numbers and NumPy scalars (an element of a vector, a reduction, a default of a callee). They
only rebind, and must give the right derivative (tests/test_number_updates.py); the same
statements on arrays shared with an argument or another name are refused at the line marked
``# REJECT``."""

import numpy as np

GV = np.array([0.5, -1.0, 0.25])
GL = [0.3, -0.2]


# -- accepted: the value updated is a number ------------------------------------------------


def scale_elements_of_a_global_array(w):
    total = 0.0
    for e in GV:  # elements of a 1-D array are NumPy scalars
        e *= np.tanh(w[0] + e)
        total = total + e
    return total


def time_loop_on_a_number_argument(y, w):
    n = 0
    while n < 3:
        y /= 1.0 + np.sum(GV * w) ** 2
        y += 0.1 * np.sin(y)
        n += 1
    return y * np.sum(w)


def loop_on_the_larger_of_a_number_argument_and_a_mean(y, w):
    base = np.full(3, 0.5)
    t = np.abs(base + y)
    s = max(np.mean(GV), y)  # a number: rebound below, whatever y's kind in the first walk
    for _ in range(2):
        s *= np.tanh(np.dot(t, w))
    return s + np.sum(t * w)


def dict_slot_holding_a_number(x, w):
    d = {"a": abs(x), "b": x}
    d["b"] += np.dot(w, GV)
    d["a"] *= d["b"]
    return d["b"] * d["a"] + x


def list_slot_holding_a_number(x, w):
    half = np.full(3, 0.5)
    x = (w[0] + GV[0]) * x
    items = [(x if e < 3.0 else half[2]) for e in half]
    items[0] += np.sum(w * GV)
    items[2] *= GL[-1]
    return items[0] * items[1] + items[2] * x


def unpack_the_rows_of_a_vector(w):
    v = np.concatenate([(2.0 * w)[:1], (np.cumsum(w) * 0.5)[1:]])
    a, b, c = v
    a *= np.tanh(a)
    b += a
    return a * b + c * w[1]


def elements_of_a_vector_argument(x):
    total = 0.0
    for e in x:
        e **= 2
        total = total + e
    first = x[0]
    first -= np.sum(x)
    return total * first


def reductions_are_numbers(x):
    s = np.sum(x)
    s *= np.dot(x, x)
    m = x.mean()
    m += np.linalg.norm(x)
    return s + m


def identity(a, n):
    return a


def update_the_number_a_callee_returns(y, w):
    c = d = identity(y, 1)
    c /= 1.0 + c**2
    return c * np.sum(w) + d


def callee(a, b=0.5, *, c=1.0):
    c *= np.tanh(np.dot(a, GV))
    b += c
    return np.array([c, b / (1.0 + c * c)])


def calls_with_defaults_and_numbers(v):
    return np.sum(callee(v)) + np.sum(callee(v, 0.25, c=v[1]))


# -- refused: the value updated is an array another name or the caller shares ----------------


def dict_slot_holding_an_array_argument(x):
    d = {"b": x}
    d["b"] += 1.0  # REJECT
    return np.sum(d["b"])


def list_slot_holding_a_local_array(x):
    p = x * 1.0
    items = [p for _ in range(2)]
    items[0] += 1.0  # REJECT
    return np.sum(p)


def rows_of_a_matrix_argument(x):
    total = 0.0
    for row in x:
        row *= 2.0  # REJECT
        total = total + np.sum(row)
    return total


def unpack_the_rows_of_a_local_matrix(x):
    p = x * 1.0
    a, b, c = p
    a *= 2.0  # REJECT
    return np.sum(p) + np.sum(b * c)


def update_the_array_a_callee_returns(x):
    p = x * 1.0
    q = identity(p, 0)
    q *= 2.0  # REJECT
    return np.sum(p * x)


def array_callee(a, *, c=1.0):
    c *= np.tanh(np.sum(a))  # REJECT
    return c


def calls_with_a_local_array(x):
    p = x * 1.0
    return np.sum(array_callee(x, c=p)) + np.sum(p * x)


def calls_with_an_array_argument(x, v):
    return np.sum(array_callee(x, c=v))
