"""Callees in a module of their own, for test_inlining: their globals are not the caller's."""

import numpy as np

SCALE = 2.0  # the caller's module has a SCALE of its own, another value
OFFSET = np.array([0.1, -0.2, 0.3])  # a name the caller's module does not use


def scaled(x):
    return SCALE * x


def shifted(x):
    return x + OFFSET
