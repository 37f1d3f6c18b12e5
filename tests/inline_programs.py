"""Programs whose user functions are inlined where they are called (`transforms/anf_inline`),
or kept as calls, for test_inlining."""

import inline_elsewhere as elsewhere
import numpy as np

SCALE = 3.0


def step(x, v, k, dt):
    a = -k * x
    v = v + dt * a
    x = x + dt * v
    return x, v


def spring(x, v, k):
    for _ in range(20):
        x, v = step(x, v, k, 0.05)
    return x * x + v * v


def step_in_place(x, v, k, dt):
    a = -k * x
    v += dt * a  # (an augmented assignment to a parameter: the call stays a call)
    x = x + dt * v
    return x, v


def spring_in_place(x, v, k):
    for _ in range(20):
        x, v = step_in_place(x, v, k, 0.05)
    return x * x + v * v


def scaled_here(x):
    return SCALE * x


def scaled_twice(x):
    # elsewhere.scaled reads elsewhere's SCALE (2.0), scaled_here this module's (3.0)
    return np.sum(elsewhere.scaled(x) * scaled_here(x))


def shifted_sum(x):
    return np.sum(np.sin(elsewhere.shifted(x)) ** 2)


def uses_a_local_named_like_a_constant(x):
    OFFSET = x * 2.0
    return np.sum(elsewhere.shifted(x) * OFFSET)


WEIGHTS = np.array([0.5, -1.0, 2.0])


def weighted(x, w=WEIGHTS, p=2, *, bias=0.25, scale=1.0):
    return np.sum(w * x**p) * scale + bias


def with_defaults(x):
    return weighted(x) + weighted(x, p=3, bias=-1.5) + weighted(x, WEIGHTS * 2, scale=0.5)


def first_large(xs, limit=1.0):
    total = 0.0
    for i in range(len(xs)):
        if xs[i] > limit:
            return total + xs[i] ** 2
        total = total + np.sin(xs[i])
    return total


def calls_a_looping_helper(x):
    return first_large(x) * first_large(x * 0.5, limit=0.1)


def inner_part(a, b):
    return np.tanh(a) * b


def outer_part(a, b):
    return inner_part(a, b) + inner_part(b, a) ** 2


def nested_calls(x, y):
    return np.sum(outer_part(x, y) * outer_part(y, x))


def countdown(a, n):
    if n <= 0:
        return a
    return countdown(np.tanh(a) * 0.9, n - 1)


def recursive(x):
    return countdown(x, 3) * x


def keyed_record(x, key):
    return {key: x}


def bad_callee_caller(x, key):
    return keyed_record(x, key)[key]


def two_args(a, b):
    return a * 2.0 + b


def pops_into_keywords(x):
    xs = [x, x * x]
    return two_args(b=xs.pop(), a=xs.pop())  # b is x * x: Python evaluates in the call's order


def pops_into_a_nested_functions_keywords(x):
    def two(a, b):
        return a * 2.0 + b

    xs = [x, x * x]
    return two(b=xs.pop(), a=xs.pop())


class Spring:
    """A model class as tutorials write one: its methods call each other."""

    def __init__(self, k, dt):
        self.k = k
        self.dt = dt

    def step(self, x, v):
        a = -self.k * x
        v = v + self.dt * a
        x = x + self.dt * v
        return x, v

    @staticmethod
    def squared(t):
        return t * t

    @classmethod
    def unit(cls, t):
        return t / cls.SCALE

    SCALE = 2.0

    def energy(self, x, v):
        for _ in range(20):
            x, v = self.step(x, v)
        return self.squared(x) + self.unit(v * v)


class Scaler:
    def __init__(self, k):
        self.k = k

    def scaled(self, a, b=0.5):
        return (a * b + 1.0) * self.k

    def loss(self, y):
        y = self.scaled(*(y, 2.0))
        y *= np.tanh(0.3)  # (y is a number: rebound, not changed in place)
        return y * y


def constant_of(x, *, k):
    x -= 1.0  # (an update of a number: the call stays a call at first order)
    return (0.5 - 0.75) ** 2


CONSTANT_LAMBDA = lambda x: constant_of(x, k=0.3)  # noqa: E731


def pair_here(x):
    doubled = x * 1.0
    doubled *= 2.0  # (a call that stays a call: its result's form shows when it runs)
    return doubled, x


def returns_a_pair(x):
    return pair_here(x)
