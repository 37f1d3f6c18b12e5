"""Functions with if/elif/else, conditional expressions and several returns."""

import numpy as np


def branch_on_array(x):
    if x.sum() > 0:
        y = np.sin(x) * 2.0
    else:
        y = x**2
    return np.sum(y)


def elif_chain(x):
    if x > 1.0:
        y = x**3
    elif x > 0.0:
        y = np.sin(x)
    else:
        y = -x
    return y * 2.0


def nested(x, w):
    y = x * w
    if np.sum(x) > 0:
        if np.sum(w) > 0:
            y = y + np.tanh(x)
        else:
            y = y * 3.0
    return np.sum(y**2)


def early_returns(x):
    if x < 0.0:
        return -x * 2.0
    y = x**2
    if y > 4.0:
        return y
    return np.sin(y)


def conditional_expression(x):
    y = x**2 if x > 0 else -x
    return y * 3.0 + (x if x > 1.0 else 1.0)


def boolean_operators(x, y):
    z = (x > 0 and y) or x
    return z * y


def one_branch_assigns(x):
    y = x * 2.0
    if np.all(x > 0.5):
        y = y + np.exp(x)
    return np.sum(y)


def raises_in_branch(x):
    if x < -10.0:
        raise ValueError("x is too small")
    return x**2


def assigned_in_both(x, w):
    if w > 0:
        y = x * w
        z = y + 1.0
    else:
        z = x**2
    return np.sum(z * x)


def branch_without_gradient(x, n):
    if n > 2:
        scale = 3.0
    else:
        scale = 0.5
    return np.sum(scale * x**2)
