"""A derivative for a function s2sgrad cannot read: scipy.special.erf, a compiled ufunc.

sg.register_vjp gives it a reverse rule, written like the built-in ones; the rule's body is
inlined into the generated gradient (printed below). Without SciPy installed, the same is
shown on an opaque NumPy function marked with sg.primitive.
"""

import math

import numpy as np

import s2sgrad as sg

try:
    from scipy.special import erf
except ImportError:  # SciPy is optional: an opaque stand-in with the same derivative
    erf = sg.primitive(np.vectorize(math.erf, otypes=[float]))

TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@sg.register_vjp(erf, elementwise=True)
def erf_vjp(g, ans, x):
    return g * TWO_OVER_SQRT_PI * np.exp(-x * x)


def smooth_step_loss(x):
    return np.sum((erf(x) - 0.5) ** 2)


x = np.linspace(-1.0, 1.0, 5)
gradient = sg.grad(smooth_step_loss)(x)
by_hand = 2 * (erf(x) - 0.5) * TWO_OVER_SQRT_PI * np.exp(-x * x)
print("gradient:", gradient)
print("matches the closed form:", np.allclose(gradient, by_hand))
print("forward mode from the same rule:", sg.jvp(smooth_step_loss, (x,), (np.ones(5),))[1])
print(sg.source(sg.grad(smooth_step_loss), x))
