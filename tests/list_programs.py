"""Functions that build lists: append in loops, comprehensions, sum, max/min, dict state."""

import numpy as np


def stack_appended(x, w):
    hs = []
    h = x
    for _ in range(3):
        h = np.tanh(h * w)
        hs.append(h)
    return np.sum(np.stack(hs) ** 2)


def array_of_appended(x):
    values = []
    for v in x:
        values.append(v**2)
    return np.sum(np.array(values) * np.arange(len(x)))


def comprehension(x):
    squares = [v * v for v in x if v > 0.2]
    return sum(squares) + np.sum(np.array([np.sin(v) for v in x]))


def generator_sum(x):
    return sum(np.exp(v) for v in x)


def two_value_max(x, y):
    return max(x * y, x + y) - min(x, y * 2.0)


def dict_state(x):
    state = {}
    state["h"] = np.tanh(x)
    state["c"] = state["h"] * 2.0
    for _ in range(2):
        state["h"] = state["h"] * state["c"]
    return np.sum(state["h"])


def list_slots(x):
    hidden = [None] * 3
    h = x
    for layer in range(3):
        h = np.sin(h) + 1.0
        hidden[layer] = h
    return np.sum(hidden[0] * hidden[2])


def cell(h, c, x):
    c = np.tanh(c + x * h)
    return np.sin(c) * h, c


def tuple_of_slots(x):
    hs = [None] * 3
    cs = [None] * 3
    h, c = x, x * 0.5
    for i in range(3):
        hs[i], cs[i] = cell(h, c, x)
        h, c = hs[i], cs[i]
    return np.sum(hs[2] + cs[1])


def stack_machine(x):
    stack = []
    for v in x:
        stack.append(np.sin(v) * 2.0)
    total = 0.0
    while len(stack) > 0:
        top = stack.pop()
        total = total * 0.5 + top * top
    return total
