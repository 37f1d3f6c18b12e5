"""Functions taking or building dicts, lists and tuples of arrays."""

import numpy as np


def mlp(params, x):
    h = np.tanh(x @ params["W1"] + params["b1"])
    return np.sum((h @ params["W2"]) ** 2)


def layers_in_a_list(layers, x):
    h = x
    for i in range(len(layers)):
        W, b = layers[i]
        h = np.tanh(h @ W + b)
    return np.sum(h)


def pair_in_pair_out(x, y):
    t = (x * 2.0, np.sin(y))
    a, b = t
    return np.sum(a * b)


def dict_literal(x):
    state = {"h": np.tanh(x), "c": x * 3.0}
    return np.sum(state["h"] * state["c"])


def tuple_argument(xy):
    x, y = xy
    return x**2 * y
