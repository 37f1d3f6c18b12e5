"""Functions with for loops over range."""

import math

import numpy as np


def sum_of_squares(x):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + x[i] ** 2
    return total


def rosenbrock_loop(x):
    total = 0.0
    for i in range(len(x) - 1):
        total += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return total


def power_by_loop(x, n):
    y = 1.0
    for _ in range(n):
        y = y * x
    return y


def running_state(x, w):
    h = np.zeros(3)
    for t in range(4):
        h = np.tanh(w @ h + x[t])
    return np.sum(h**2)


def nested_loops(A):
    total = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            total = total + math.sin(A[i, j]) * (i + 1)
    return total


def branch_in_loop(x):
    total = 0.0
    for i in range(len(x)):
        if x[i] > 0.5:
            total = total + x[i] ** 3
        else:
            total = total - 2.0 * x[i]
    return total


def loop_local_reuse(x):
    acc = x * 0.0
    for k in range(3):
        s = np.sin(acc + k)
        acc = acc + s * x
    return np.sum(acc)


def zero_trips(x, n):
    y = x * 2.0
    for _ in range(n):
        y = y * y
    return np.sum(y)


def over_rows(X, w):
    total = 0.0
    for row in X:
        total = total + np.tanh(row @ w)
    return total


def with_enumerate(x):
    total = 0.0
    for i, v in enumerate(x):
        total = total + (i + 1) * v**2
    return total


def with_zip(a, b):
    total = 0.0
    for u, v in zip(a, b, strict=False):
        total = total + u * np.sin(v)
    return total


def halve_until_small(x):
    y = x
    while y > 0.1:
        y = y * 0.5 + 0.01 * np.sin(y)
    return y * 3.0


def newton_sqrt(a):
    guess = a
    steps = 0
    while steps < 6:
        guess = 0.5 * (guess + a / guess)
        steps += 1
    return guess


def while_over_array(x):
    total = np.sum(x)
    while total < 10.0:
        x = x * 1.5
        total = np.sum(x)
    return np.sum(np.sin(x))


def stop_at_threshold(x):
    total = 0.0
    for i in range(len(x)):
        if total > 1.0:
            break
        total = total + x[i] ** 2
    return total * 2.0


def skip_negatives(x):
    total = 0.0
    for v in x:
        if v < 0.0:
            continue
        total = total + np.exp(v)
    return total


def while_with_break(x):
    y = x
    steps = 0
    while True:
        y = np.sin(y) + y * 0.5
        steps = steps + 1
        if steps >= 3:
            break
    return y


def break_and_continue(x):
    total = 0.0
    for i, v in enumerate(x):
        if i == 1:
            continue
        if v > 0.9:
            break
        total = total + v * (i + 1)
    return total


def rnn_loss(Wx, Wh, b, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
    return np.sum(h**2)


def first_large(x):
    total = 0.0
    for i in range(len(x)):
        total = total + x[i] ** 2
        if total > 1.0:
            return total * 3.0
    return np.sin(total)


def search_in_nested(A):
    acc = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            acc = acc + A[i, j] * (i + 1)
            if acc > 2.0:
                return acc**2
        acc = acc * 0.5
    return acc


def while_return(x):
    y = x
    while y < 5.0:
        y = y * 1.7 + 0.1
        if y > 3.0:
            return y * 2.0
    return y


def reversed_list(x):
    parts = [x, 2.0 * x, np.sin(x)]
    s = 0.0  # a number that becomes an array in the loop
    for v in reversed(parts):
        s = s * 0.5 + v
    return np.sum(s)


def reversed_range(x):
    s = 0.0
    for i in reversed(range(len(x))):
        s = s * 0.5 + x[i] ** 2
    return s


def in_sorted_order(x):
    s = 0.0
    for k in np.argsort(x):  # indices from a call without derivative: constants
        s = 2.0 * s + x[k] * x[0]
    return s
