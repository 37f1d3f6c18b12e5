"""Functions that call other user functions, recursion included."""

import numpy as np


def square_plus_sin(v):
    return v * v + np.sin(v)


def calls_a_helper(x, w):
    h = square_plus_sin(x * w)
    return np.sum(h * x)


def layer(x, W, b):
    return np.tanh(x @ W + b)


def two_layers(W1, W2, x):
    h = layer(x, W1, 0.5)
    out = layer(h, W2, b=0.1)
    return np.sum(out**2)


def power(x, n):
    if n == 0:
        return 1.0
    return x * power(x, n - 1)


def det_by_minors(A):
    n = A.shape[0]
    if n == 1:
        return A[0, 0]
    total = 0.0
    for j in range(n):
        minor = np.delete(np.delete(A, 0, axis=0), j, axis=1)
        total = total + (-1.0) ** j * A[0, j] * det_by_minors(minor)
    return total


def is_even(n, x):
    if n == 0:
        return x
    return is_odd(n - 1, np.sin(x))


def is_odd(n, x):
    if n == 0:
        return x * 2.0
    return is_even(n - 1, x * x)


def mutual(x):
    return is_even(3, x)


def helper_in_loop(x):
    total = 0.0
    for i in range(len(x)):
        total = total + square_plus_sin(x[i])
    return total


def with_nested_helpers(x, w):
    def affine(v, scale):
        return v * scale + 0.5

    def clipped(v):
        if v > 1.0:
            return 1.0 + np.log(v)
        return v

    total = 0.0
    for i in range(len(x)):
        total = total + clipped(affine(x[i], w))
    return total


def nested_with_shadowing_parameters(x, v, k):
    # the nested function's parameters and locals share names with the caller's loop-carried
    # values: its reads of them are its own, not the caller's (which change every step)
    def step(x, v):
        a = -k * x
        v = v + 0.1 * a
        x = x + 0.1 * v
        return x, v

    for _ in range(4):
        x, v = step(x, v)
    return x * x + v * v


def nested_reads_a_changed_value(x):
    k = 2.0

    def times_k(v):
        return v * k

    k = 3.0
    return times_k(x)
