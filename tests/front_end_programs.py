"""Valid functions written in the less common shapes Python allows: one-line compound
statements, comments at column 0 inside blocks, chained assignment, every augmented operator,
literals that overflow. Each must differentiate like its plain spelling (tests/test_front_end.py).
"""

import numpy as np


def one_line_if(x):
    y = x * x
    if x > 0: y = 2 * x * y  # noqa: E701
    return y


def one_line_if_else(x):
    if x > 0: y = 2 * x * x  # noqa: E701
    else: y = x * x * x  # noqa: E701
    return y


def one_line_for(x):
    y = x
    for _ in range(3): y = y * x  # noqa: E701
    return y


def one_line_while(x):
    y = x
    i = 0
    while i < 3: i = i + 1; y = y * x + i  # noqa: E701, E702
    return y


def one_line_nested_def(x):
    def square(v): return v * v

    return square(x) + x


def one_line_loop_break(x):
    total = 0.0
    for i in range(5):
        if i > 2: break  # noqa: E701
        total = total + x ** (i + 1)
    return total


def comment_at_column_zero(x):
    y = x * x
    if x > 0:
# a comment at column 0 inside an indented block
        y = y * 3.0
    return y


def inner_with_column_zero_comment():
    def inner(x):
        y = np.sin(x) * x
# a comment at column 0 inside a nested (indented) definition
        return y * y

    return inner


class Model:
    def energy(self, x):
        y = np.cos(x) * x
# a comment at column 0 inside a method
        return y * y


def chained(x):
    y = x * 2.0
    y = z = y * x
    return y + z * z


def chained_copy(x):
    y = z = x
    return y * z


def chained_rebinds_source(x):
    x = y = x * x
    return x + y * x


def chained_in_loop(x):
    y = x
    z = x
    for _ in range(3):
        y = z = y * x + z
    return y + z


def chained_item_and_name(x):
    a = np.zeros(3)
    a[1] = b = x * 2.0
    return np.sum(a * x) + b


def chained_tuple(x):
    a, b = c = (x * 2.0, x * 3.0)
    return a * b + c[0] * x


def every_arithmetic_operator(x):
    y = x * 1.0
    y += x * x
    y -= 0.5 * x
    y *= x
    y /= 3.0
    y **= 2
    z = y * 1.0
    z //= 0.25
    w = y * 1.0
    w %= 0.75
    return y + z + w


def matmul_operator(a):
    b = a * 1.0
    b @= a
    return np.sum(b)


def bitwise_mask(x):
    m = x > 0.5
    m &= x < 1.5
    n = x < 0.0
    n |= x > 1.8
    n ^= x > 1.9
    return np.sum(np.where(m, x * x, 0.0)) + np.sum(np.where(n, 3.0 * x, 0.0))


def bitwise_integer(x):
    k = 13
    k &= 7
    k |= 8
    k ^= 2
    k <<= 2
    k >>= 1
    return x * k


def overflowing_literal(x):
    return np.minimum(x, 1e400) + x * 1e-400


def overflowing_product(x):
    return np.minimum(x * x, 1e200 * 1e200)


def huge_integer(x):
    return x * float(10**400 // 10**399) + 123456789012345678901234567890 * 0


def mean_indexed(x):
    return np.sum(np.mean(x**2)[None] * x)
