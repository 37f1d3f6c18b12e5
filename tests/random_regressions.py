"""Minimal programs on which the random-program properties (test_random_programs.py) found s2sgrad
wrong, each the shrunk form of a generated program. test_random_programs.py differentiates them
against finite differences; they stay there, unskipped, until the compiler handles them."""

import math

import numpy as np

unbroadcast = 1.25  # a user constant that happens to have a runtime helper's name


def local_named_like_a_helper(x):
    match_shape = x * 2.0
    return np.sum(match_shape)


def constant_named_like_a_helper(x):
    return unbroadcast * x**2


def unpack_an_expression(x):
    v, u = x, -x  # noqa: F841
    return np.sum(u)


def unpack_swap_arguments(x, y):
    x, y = y, x
    return x * y**2


def unpack_swap_with_local(x):
    u = x * 2.0
    x, u = u, x
    return u


def unpack_swap_after_self_assignment(x):
    u = x
    u = u
    x, u = u, x
    return np.sum(u)


def negated_maximum(x):
    return x - np.maximum(x, 0.5)


def size_one_axes_broadcast(a, b):
    return np.sum(a * b)


def method_of_a_folded_constant(x):
    c = np.exp(0.5).sum()
    return x * c


def mean_of_an_empty_slice(x):
    return np.sum(x) + np.mean(x[1:] * 2.0)


def loop_then_math_function(x):
    for _i in range(2):
        _w = x + 1.0
    u = math.sin(np.sum(x))
    return np.sum(u + x)


def scalar_through_size_one_axes(x, y, z):
    return np.sum(z * (y + x))
