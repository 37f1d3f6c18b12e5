"""The functions the benchmarks differentiate, each with a gradient written by hand.

s2sgrad reads the source of the functions it transforms, so they live here as plain `def`s.
Each case is a `Case`: the function, the arguments to differentiate with respect to, a builder
for its inputs, the hand-written gradient it is compared against, and the targets it is held to.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np


@dataclasses.dataclass(frozen=True)
class Case:
    """One benchmark: `grad` of `fn` w.r.t. `wrt`, at `make_args()`, against `by_hand`.

    ``make_args(small=True)`` gives arguments of the same kinds but tiny sizes: the wrapper
    overhead is measured on them, where the gradient's own work does not drown it in noise.

    Targets: `ratio_target` bounds s2sgrad's time / the hand-written time; `memory_target`, when
    set, bounds s2sgrad's peak memory / the hand-written one's; `faster_than` maps another
    library's column to how many times faster than it s2sgrad should be.
    """

    name: str
    fn: Callable
    wrt: int | tuple[int, ...]
    make_args: Callable[..., tuple]
    by_hand: Callable
    description: str
    ratio_target: float = 1.2
    memory_target: float | None = None
    faster_than: dict[str, float] = dataclasses.field(default_factory=dict)


# ---- 1. a scalar formula on Python floats ------------------------------------------------


def scalar_formula(x, y):
    a = x * y + math.sin(x)
    b = math.exp(-0.5 * a) + math.log(1.0 + x * x)
    c = math.sqrt(y * y + 1.0) * math.tanh(b)
    d = a / (1.0 + c * c) - math.cos(y) * b
    return d * d + 3.0 * c - a * b


def scalar_formula_by_hand(x, y):
    a = x * y + math.sin(x)
    e = math.exp(-0.5 * a)
    p = 1.0 + x * x
    b = e + math.log(p)
    r = math.sqrt(y * y + 1.0)
    t = math.tanh(b)
    c = r * t
    q = 1.0 + c * c
    cos_y = math.cos(y)
    d = a / q - cos_y * b
    # adjoints, output back to inputs
    gd = 2.0 * d
    ga = gd / q - b
    gb = -gd * cos_y - a
    gc = 3.0 - gd * a * 2.0 * c / (q * q)
    gb += gc * r * (1.0 - t * t)
    ga += gb * e * -0.5
    dx = ga * (y + math.cos(x)) + gb * 2.0 * x / p
    dy = ga * x + gc * t * y / r + gd * math.sin(y) * b
    return dx, dy


def _scalar_args(small=False):
    return (0.7, -1.3)


# ---- 2. vectorized Rosenbrock ------------------------------------------------------------


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_by_hand(x):
    head = x[:-1]
    inner = x[1:] - head**2
    g = np.zeros_like(x)
    g[:-1] = -400.0 * head * inner - 2.0 * (1.0 - head)
    g[1:] += 200.0 * inner
    return g


def _rosenbrock_args(small=False):
    return (np.random.default_rng(0).uniform(-2.0, 2.0, 8 if small else 100_000),)


# ---- 3. a two-layer tanh MLP -------------------------------------------------------------


def mlp_loss(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    out = h @ W2 + b2
    return np.mean((out - y) ** 2)


def mlp_loss_by_hand(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    out = h @ W2 + b2
    g_out = (2.0 / out.size) * (out - y)
    g_W2 = h.T @ g_out
    g_b2 = g_out.sum(axis=0)
    g_pre = (g_out @ W2.T) * (1.0 - h * h)
    g_W1 = x.T @ g_pre
    g_b1 = g_pre.sum(axis=0)
    return g_W1, g_b1, g_W2, g_b2


def _mlp_args(small=False):
    batch, n_in, n_hidden, n_out = (2, 3, 3, 2) if small else (32, 64, 64, 10)
    rng = np.random.default_rng(0)
    return (
        rng.normal(0.0, n_in**-0.5, (n_in, n_hidden)),
        rng.normal(0.0, 0.1, n_hidden),
        rng.normal(0.0, n_hidden**-0.5, (n_hidden, n_out)),
        rng.normal(0.0, 0.1, n_out),
        rng.normal(size=(batch, n_in)),
        rng.normal(size=(batch, n_out)),
    )


# ---- 4. Rosenbrock again, as a Python loop over scalar elements --------------------------


def rosenbrock_loop(x):
    total = 0.0
    for i in range(len(x) - 1):
        total += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return total


def rosenbrock_loop_by_hand(x):
    g = np.zeros_like(x)
    for i in range(len(x) - 1):
        xi = x[i]
        inner = x[i + 1] - xi**2
        g[i] += -400.0 * xi * inner - 2.0 * (1.0 - xi)
        g[i + 1] += 200.0 * inner
    return g


def _rosenbrock_loop_args(small=False):
    return (np.random.default_rng(0).uniform(-2.0, 2.0, 8 if small else 100),)


# ---- 5. a vanilla tanh RNN, a Python loop over time --------------------------------------


def rnn(Wx, Wh, b, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
    return np.sum(h**2)


def rnn_by_hand(Wx, Wh, b, xs, h0):
    hs = [h0]  # every hidden state, for backpropagation through time
    for t in range(xs.shape[0]):
        hs.append(np.tanh(xs[t] @ Wx + hs[-1] @ Wh + b))
    g_Wx, g_Wh, g_b = np.zeros_like(Wx), np.zeros_like(Wh), np.zeros_like(b)
    g_h = 2.0 * hs[-1]
    for t in reversed(range(xs.shape[0])):
        g_pre = g_h * (1.0 - hs[t + 1] ** 2)
        g_Wx += xs[t].T @ g_pre
        g_Wh += hs[t].T @ g_pre
        g_b += g_pre.sum(axis=0)
        g_h = g_pre @ Wh.T
    return g_Wx, g_Wh, g_b


def _rnn_args(small=False):
    steps, batch, n_in, n_hidden = (2, 2, 2, 3) if small else (50, 8, 16, 32)
    rng = np.random.default_rng(0)
    return (
        rng.normal(0.0, n_in**-0.5, (n_in, n_hidden)),
        rng.normal(0.0, n_hidden**-0.5, (n_hidden, n_hidden)),
        rng.normal(0.0, 0.1, n_hidden),
        rng.normal(size=(steps, batch, n_in)),
        np.zeros((batch, n_hidden)),
    )


CASES = {
    case.name: case
    for case in (
        Case(
            name="scalar_formula",
            fn=scalar_formula,
            wrt=(0, 1),
            make_args=_scalar_args,
            by_hand=scalar_formula_by_hand,
            description="~20 float ops with math.*, d/d(x, y)",
        ),
        Case(
            name="rosenbrock",
            fn=rosenbrock,
            wrt=0,
            make_args=_rosenbrock_args,
            by_hand=rosenbrock_by_hand,
            description="vectorized, n = 100,000 float64",
        ),
        Case(
            name="mlp_loss",
            fn=mlp_loss,
            wrt=(0, 1, 2, 3),
            make_args=_mlp_args,
            by_hand=mlp_loss_by_hand,
            description="tanh MLP 64-64-10, batch 32, MSE, d/d(W1, b1, W2, b2)",
        ),
        Case(
            name="rosenbrock_loop",
            fn=rosenbrock_loop,
            wrt=0,
            make_args=_rosenbrock_loop_args,
            by_hand=rosenbrock_loop_by_hand,
            description="Python loop over x[i], n = 100 float64",
            ratio_target=1.5,
            faster_than={"autograd": 20.0},
        ),
        Case(
            name="rnn",
            fn=rnn,
            wrt=(0, 1, 2),
            make_args=_rnn_args,
            by_hand=rnn_by_hand,
            description="tanh RNN, loop over 50 steps, input 16, hidden 32, batch 8, "
            "sum of squares of the last state, d/d(Wx, Wh, b)",
            ratio_target=1.5,
            memory_target=1.5,
        ),
    )
}

from .cases_matrix import MATRIX_CASES  # noqa: E402  (they build on Case, defined above)
from .cases_rules import RULE_CASES  # noqa: E402

CASES.update({case.name: case for case in (*RULE_CASES, *MATRIX_CASES)})
