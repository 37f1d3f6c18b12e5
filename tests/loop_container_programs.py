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
