"""Reverse rules of elementwise functions: operators, NumPy ufuncs, `math` and builtins.

Every rule here is registered ``elementwise=True``: the result has the broadcast shape of the
arguments, ``g`` may be lazily broadcast, and the compiler reduces each contribution to its
argument's shape where it cannot prove the shapes agree. So these rules are the textbook
derivatives and nothing else. Templates are parsed and inlined, never called by generated code
(see ``runtime/registry.py`` for what a template may contain).

NaN safety (README, "NaN-safe gradients"): a rule whose derivative is singular at a finite
input (`sqrt` and `arcsin` at the ends of their domain, `log` and `divide` at 0, `power`'s
exponent at a zero base) divides with `safe_divide`, which gives exactly 0 where the adjoint is
0. The branch ``np.where`` did not select then contributes 0, not ``0 * inf = NaN``. Forward
rules are derived from these templates, so tangents get the same guard. The `math` functions
keep the plain quotient: they take Python numbers, raise outside their domain, and Python code
selects with ``if``, whose untaken branch is never differentiated. `power`'s slope in its base
is a `scaled_power`: 0 where the exponent is 0, and no ``ZeroDivisionError`` at a zero base.
"""

import builtins
import math
import operator

import numpy as np

from ..activations import relu as relu_primitive
from ..array_helpers import (
    absolute_slope,
    absolute_slope_tangent,
    real_part_of,
    safe_divide,
    scaled_power,
    tie_weights,
)
from ..fft_helpers import elementwise_like
from ..registry import registry

vjp = registry.vjp
jvp = registry.jvp

# -- arithmetic -----------------------------------------------------------------------------------


@vjp(operator.add, np.add, elementwise=True)
def add(g, ans, x, y):
    return g, g


@vjp(operator.sub, np.subtract, elementwise=True)
def subtract(g, ans, x, y):
    return g, -g


@vjp(operator.mul, np.multiply, elementwise=True)
def multiply(g, ans, x, y):
    return g * y, g * x


@vjp(operator.truediv, np.divide, elementwise=True)
def divide(g, ans, x, y):
    gy = safe_divide(g, y)
    return gy, -safe_divide(gy * x, y)


@vjp(relu_primitive, elementwise=True)
def relu(g, ans, x):
    return g * (ans > 0.0)


@vjp(operator.neg, np.negative, elementwise=True)
def negative(g, ans, x):
    return -g


@vjp(operator.pos, np.positive, elementwise=True)
def positive(g, ans, x):
    return g


@vjp(operator.pow, np.power, math.pow, builtins.pow, elementwise=True)
def power(g, ans, x, y):
    # g * y * x ** (y - 1), exactly 0 where y is 0 (x ** 0 is constant, also at x = 0); the
    # exponent's slope ans * log(x) is 0 at a zero base (not 0 * -inf), and its contribution
    # 0 where g is (not 0 * NaN at a negative base: an integer exponent, a loop counter a
    # callee saved, has a zero tangent, and second derivatives were NaN)
    return (
        scaled_power(g * y, x, y - 1),
        g * ans * np.log(np.where((ans == 0) | (g == 0), 1.0, x)),
    )


@vjp(operator.mod, np.mod, elementwise=True)
def mod(g, ans, x, y):
    return g, -g * np.floor_divide(x, y)


@vjp(np.square, elementwise=True)
def square(g, ans, x):
    return g * 2 * x


@vjp(np.sqrt, elementwise=True)
def sqrt(g, ans, x):
    return safe_divide(g, 2 * ans)


@vjp(math.sqrt, elementwise=True)
def math_sqrt(g, ans, x):
    return g / (2 * ans)


@vjp(np.absolute, np.fabs, builtins.abs, math.fabs, elementwise=True)
def absolute(g, ans, x):
    # sign(x); conj(z) / |z| for a complex z (|z| is a real map of it: README, "Complex")
    return g * absolute_slope(x, ans)


@jvp(np.absolute, builtins.abs)
def absolute_jvp(tangents, ans, x):
    return np.real(tangents[0] * absolute_slope(x, ans))


@jvp(absolute_slope)
def absolute_slope_jvp(tangents, ans, x, magnitude):
    # 0 for real x (a sign); for complex z the derivative of conj(z) / |z|
    return absolute_slope_tangent(tangents[0], x, magnitude)


@vjp(np.maximum, np.fmax, builtins.max, elementwise=True)
def maximum(g, ans, x, y):
    # ties share the gradient equally, matching the symmetric difference quotient
    return g * tie_weights(x, y, ans), g * tie_weights(y, x, ans)


@vjp(np.minimum, np.fmin, builtins.min, elementwise=True)
def minimum(g, ans, x, y):
    return g * tie_weights(x, y, ans), g * tie_weights(y, x, ans)


@vjp(np.clip, elementwise=True)
def clip(g, ans, a, a_min, a_max):
    return g * (ans == a), g * (a < a_min), g * (a > a_max)


@vjp(np.where, elementwise=True)
def where(g, ans, condition, x, y):
    return None, np.where(condition, g, 0.0), np.where(condition, 0.0, g)


# -- exponentials and logarithms ----------------------------------------------------------------


@vjp(np.exp, math.exp, elementwise=True)
def exp(g, ans, x):
    return g * ans


@vjp(np.exp2, elementwise=True)
def exp2(g, ans, x):
    return g * ans * np.log(2.0)


@vjp(np.expm1, math.expm1, elementwise=True)
def expm1(g, ans, x):
    return g * (ans + 1)


@vjp(np.log, elementwise=True)
def log(g, ans, x):
    return safe_divide(g, x)


@vjp(math.log, elementwise=True)
def math_log(g, ans, x, base=math.e):
    return g / (x * math.log(base)), -g * ans / (base * math.log(base))


@vjp(np.log2, elementwise=True)
def log2(g, ans, x):
    return safe_divide(g, x * np.log(2.0))


@vjp(math.log2, elementwise=True)
def math_log2(g, ans, x):
    return g / (x * np.log(2.0))


@vjp(np.log10, elementwise=True)
def log10(g, ans, x):
    return safe_divide(g, x * np.log(10.0))


@vjp(math.log10, elementwise=True)
def math_log10(g, ans, x):
    return g / (x * np.log(10.0))


@vjp(np.log1p, elementwise=True)
def log1p(g, ans, x):
    return safe_divide(g, 1 + x)


@vjp(math.log1p, elementwise=True)
def math_log1p(g, ans, x):
    return g / (1 + x)


@vjp(np.logaddexp, elementwise=True)
def logaddexp(g, ans, x, y):
    return g * np.exp(x - ans), g * np.exp(y - ans)


@vjp(np.logaddexp2, elementwise=True)
def logaddexp2(g, ans, x, y):
    return g * np.exp2(x - ans), g * np.exp2(y - ans)


@vjp(np.reciprocal, elementwise=True)
def reciprocal(g, ans, x):
    return -g * ans**2


@vjp(np.hypot, elementwise=True)
def hypot(g, ans, x1, x2):
    # at the origin both numerators are 0: the subgradient 0, never 0/0
    return safe_divide(g * x1, ans), safe_divide(g * x2, ans)


# -- trigonometric and hyperbolic ---------------------------------------------------------------


@vjp(np.sin, elementwise=True)
def sin(g, ans, x):
    return g * np.cos(x)


@vjp(math.sin, elementwise=True)
def math_sin(g, ans, x):
    return g * math.cos(x)


@vjp(np.cos, elementwise=True)
def cos(g, ans, x):
    return -g * np.sin(x)


@vjp(math.cos, elementwise=True)
def math_cos(g, ans, x):
    return -g * math.sin(x)


@vjp(np.tan, math.tan, elementwise=True)
def tan(g, ans, x):
    return g * (1 + ans**2)


@vjp(np.arcsin, elementwise=True)
def arcsin(g, ans, x):
    return safe_divide(g, np.sqrt(1 - x**2))


@vjp(math.asin, elementwise=True)
def math_asin(g, ans, x):
    return g / np.sqrt(1 - x**2)


@vjp(np.arccos, elementwise=True)
def arccos(g, ans, x):
    return -safe_divide(g, np.sqrt(1 - x**2))


@vjp(math.acos, elementwise=True)
def math_acos(g, ans, x):
    return -g / np.sqrt(1 - x**2)


@vjp(np.arctan, math.atan, elementwise=True)
def arctan(g, ans, x):
    return g / (1 + x**2)


@vjp(np.arctan2, elementwise=True)
def arctan2(g, ans, y, x):
    # at the origin both numerators are 0: the subgradient 0 there
    r2 = x**2 + y**2
    return safe_divide(g * x, r2), -safe_divide(g * y, r2)


@vjp(math.atan2, elementwise=True)
def math_atan2(g, ans, y, x):
    return g * x / (x**2 + y**2), -g * y / (x**2 + y**2)


@vjp(np.sinh, elementwise=True)
def sinh(g, ans, x):
    return g * np.cosh(x)


@vjp(math.sinh, elementwise=True)
def math_sinh(g, ans, x):
    return g * math.cosh(x)


@vjp(np.cosh, elementwise=True)
def cosh(g, ans, x):
    return g * np.sinh(x)


@vjp(math.cosh, elementwise=True)
def math_cosh(g, ans, x):
    return g * math.sinh(x)


@vjp(np.tanh, math.tanh, elementwise=True)
def tanh(g, ans, x):
    return g * (1 - ans**2)


@vjp(np.arcsinh, math.asinh, elementwise=True)
def arcsinh(g, ans, x):
    return g / np.sqrt(x**2 + 1)


@vjp(np.arccosh, elementwise=True)
def arccosh(g, ans, x):
    return safe_divide(g, np.sqrt(x**2 - 1))


@vjp(math.acosh, elementwise=True)
def math_acosh(g, ans, x):
    return g / math.sqrt(x**2 - 1)


@vjp(np.arctanh, elementwise=True)
def arctanh(g, ans, x):
    return safe_divide(g, 1 - x**2)


@vjp(math.atanh, elementwise=True)
def math_atanh(g, ans, x):
    return g / (1 - x**2)


@vjp(np.sinc, elementwise=True)
def sinc(g, ans, x):
    # (cos(pi x) - sinc(x)) / x, and its Taylor polynomial near 0, where the quotient is 0/0:
    # the polynomial carries the second and third derivatives through 0 as well
    near = np.abs(x) < 1e-3
    away = np.where(near, 1.0, x)
    series = x * (x * x * np.pi**4 / 30 - np.pi**2 / 3)
    return g * np.where(near, series, (np.cos(np.pi * away) - np.sinc(away)) / away)


# -- angles ----------------------------------------------------------------------------------------


@vjp(np.deg2rad, np.radians, math.radians, elementwise=True)
def radians(g, ans, x):
    return g * (np.pi / 180)


@vjp(np.rad2deg, np.degrees, math.degrees, elementwise=True)
def degrees(g, ans, x):
    return g * (180 / np.pi)


# -- conversions that keep the value ------------------------------------------------------------


@vjp(builtins.float, np.float64, np.copy, elementwise=True)
def to_float(g, ans, x):
    return g


@vjp(np.nan_to_num, elementwise=True)
def nan_to_num(g, ans, x, copy=True, nan=0.0, posinf=None, neginf=None):
    # the replacements are constants
    return g * np.isfinite(x)


# -- complex parts (README, "Complex numbers": exact on real input) ----------------------------


@vjp(np.real, elementwise=True)
def real(g, ans, val):
    return real_part_of(val, g)


@vjp(np.real_if_close, elementwise=True)
def real_if_close(g, ans, a, tol=100):
    return real_part_of(a, g)


@vjp(np.imag, elementwise=True)
def imag(g, ans, val):
    return real_part_of(val, -1j * g)


@vjp(np.conj, np.conjugate, elementwise=True)
def conjugate(g, ans, x):
    return np.conj(g)


@vjp(np.angle, elementwise=True)
def angle(g, ans, z, deg=False):
    # 0 on real input (the angle is 0 or pi there)
    return real_part_of(z, g * safe_divide(np.conj(z * 1j), np.abs(z) ** 2))


# Their forward rules are not the transposes above: the parts of a complex number are real
# maps of it, not complex-linear ones (the derived rule would pass a complex tangent through)


@jvp(np.real, np.real_if_close)
def real_jvp(tangents, ans, val):
    return np.real(tangents[0])


@jvp(np.imag)
def imag_jvp(tangents, ans, val):
    return np.imag(tangents[0])


@jvp(np.conj, np.conjugate)
def conjugate_jvp(tangents, ans, x):
    return np.conj(tangents[0])


@jvp(np.angle)
def angle_jvp(tangents, ans, z, deg=False):
    return np.imag(safe_divide(tangents[0], z))


# sums, differences, products and negations are known by their shape and dtype without being
# computed (`Rule.result_like`): where a derivative reads one only for those (a spectrum times
# a response, before the inverse transform), the generated code computes a stand-in
registry.results_like(
    elementwise_like,
    operator.add,
    operator.sub,
    operator.mul,
    operator.neg,
    np.add,
    np.subtract,
    np.multiply,
    np.negative,
)
