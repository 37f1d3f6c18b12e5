"""Inputs for the pass-level tests."""

import math

import numpy as np
import numpy as onp
from numpy import sin


def five_lines(x, w):
    h = np.tanh(x * w)
    h += 0.5 * x
    out = h**2 - onp.exp(-x)
    return np.sum(out)


def aliases(x):
    return sin(x) + onp.cos(x) * np.pi


def scalar_formula(x, y):
    a = x * y + sin(x)
    b = a**2 / (1.0 + y * y)
    return b - 3.0 * a


def log_times(x):
    return math.log(x) * x


def two_clips(x):
    return np.sum(np.clip(x, 0.2, 0.7)) + np.sum(np.clip(x, 0.3, 0.9))


def shared_difference(x, y):
    v1 = 3.0 * y - x
    return np.sum(v1 * v1)
