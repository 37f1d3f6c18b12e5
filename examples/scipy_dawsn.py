"""A derivative for a function s2sgrad has no rule for: scipy.special.dawsn, a compiled ufunc.

sg.register_vjp gives it a reverse rule, written like the built-in ones; the rule's body is
inlined into the generated gradient (printed below). Dawson's integral F satisfies
F'(x) = 1 - 2 x F(x), so the rule reads the result, ``ans``. Without SciPy installed, the same
is shown on an opaque NumPy function marked with sg.primitive (math.erf, vectorized).
"""

import math

import numpy as np

import s2sgrad as sg

try:
    from scipy.special import dawsn as special

    @sg.register_vjp(special, elementwise=True)
    def special_vjp(g, ans, x):
        return g * (1.0 - 2.0 * x * ans)

    def slope(x):
        return 1.0 - 2.0 * x * special(x)

except ImportError:  # SciPy is optional: an opaque stand-in with a rule of its own
    special = sg.primitive(np.vectorize(math.erf, otypes=[float]))

    @sg.register_vjp(special, elementwise=True)
    def special_vjp(g, ans, x):
        return g * (2.0 / math.sqrt(math.pi)) * np.exp(-x * x)

    def slope(x):
        return 2.0 / math.sqrt(math.pi) * np.exp(-x * x)


def smooth_step_loss(x):
    return np.sum((special(x) - 0.5) ** 2)


x = np.linspace(-1.0, 1.0, 5)
gradient = sg.grad(smooth_step_loss)(x)
by_hand = 2 * (special(x) - 0.5) * slope(x)
print("gradient:", gradient)
print("matches the closed form:", np.allclose(gradient, by_hand))
print("forward mode from the same rule:", sg.jvp(smooth_step_loss, (x,), (np.ones(5),))[1])
print(sg.source(sg.grad(smooth_step_loss), x))
