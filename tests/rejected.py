"""Functions s2sgrad must refuse, each with the offending construct on a known line."""

import numpy as np


def uses_try(x):
    try:  # REJECT try
        return x
    except ValueError:
        return x


def uses_with(x):
    with open("f") as handle:  # REJECT with
        return handle


def uses_lambda(x):  # (accepted since issue 18: a nested function)
    f = lambda y: y  # noqa: E731
    return f(x)


def uses_yield(x):
    yield x  # REJECT yield


def uses_global(x):
    global SOMETHING  # REJECT global
    return x


def uses_del(x):
    y = x
    del y  # REJECT del
    return x


def uses_class(x):
    class Inner:  # REJECT class
        pass

    return x


def uses_attribute_write(x):
    x.attr = 1  # REJECT attribute assignment
    return x


def mutates_argument(x):
    x += 1.0  # REJECT in-place update
    return x


def uses_walrus(x):
    return (y := x) + y  # REJECT assignment expression


def uses_vander(x):
    return np.sum(np.vander(x))


def vander_of_constant(x):
    powers = np.vander(np.ones(4) * 2.0)
    return np.sum(x * powers[0])


def undefined_name(x):
    return x * not_defined_anywhere  # noqa: F821  REJECT name


async def uses_async(x):  # REJECT async
    return x


def nested_async(x):
    async def inner(y):  # REJECT async
        return y

    return x
