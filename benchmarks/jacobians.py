"""Jacobian and Hessian benchmarks (issue 4): ``python -m benchmarks.jacobians [--quick]``
(also printed at the end of ``python -m benchmarks`` when every case runs).

Each against a hand-written analytic version measured in the same run:

- ``jacobian sigmoid``: the Jacobian of ``sigmoid(x + delta)`` for a 201-element ``x`` with
  ``sg.jacobian`` in reverse and in forward mode, against ``np.diag(s * (1 - s))``.
  Target: at most 3x. (We measured jax.jit at 5x, autograd 360x, PyTorch eager 3,000x.)
- ``hessian``: the full Hessian of ``sum(sin(x) * x**2) + x @ A @ x`` for a 50-element ``x``
  with ``sg.hessian`` (forward over reverse, one batched sweep), against
  ``diag(2 sin x + 4 x cos x - x**2 sin x) + A + A.T``. Target: at most 3x. (jax.jit 7x,
  autograd 1,000x.)

Other libraries get a column when installed (autograd, JAX), measured the same way. Nothing
here asserts: these are numbers to read, not tests.
"""

from __future__ import annotations

import sys
import timeit

import numpy as np

import s2sgrad as sg

from .timing import Settings, format_time, interleaved, table_main, text_table

TARGET = 3.0
DELTA = 0.3
A = np.random.default_rng(0).normal(size=(50, 50))


def sigmoid(x):
    return 1 / (1 + np.exp(-(x + DELTA)))


def sigmoid_jacobian_by_hand(x):
    s = 1 / (1 + np.exp(-(x + DELTA)))
    return np.diag(s * (1 - s))


def quadratic_and_sines(x):
    return np.sum(np.sin(x) * x**2) + x @ A @ x


def hessian_by_hand(x):
    return np.diag(2 * np.sin(x) + 4 * x * np.cos(x) - x * x * np.sin(x)) + A + A.T


def _others(kind: str) -> dict[str, object]:
    """The other libraries' versions of the same computation, where installed."""
    found: dict[str, object] = {}
    try:
        import autograd
        import autograd.numpy as anp

        if kind == "jacobian":
            found["autograd"] = autograd.jacobian(lambda x: 1 / (1 + anp.exp(-(x + DELTA))))
        else:
            found["autograd"] = autograd.hessian(lambda x: anp.sum(anp.sin(x) * x**2) + x @ A @ x)
    except ImportError:
        pass
    try:
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        if kind == "jacobian":
            fn = jax.jit(jax.jacfwd(lambda x: 1 / (1 + jnp.exp(-(x + DELTA)))))
        else:
            a = jnp.asarray(A)
            fn = jax.jit(jax.hessian(lambda x: jnp.sum(jnp.sin(x) * x**2) + x @ a @ x))
        found["jax.jit"] = lambda x: fn(x).block_until_ready()
    except ImportError:
        pass
    return found


def _row(case: str, ours, hand, x, others: dict, settings: Settings) -> list[str]:
    np.testing.assert_allclose(ours(x), hand(x), rtol=1e-9, atol=1e-9)
    entries = [ours, hand, *others.values()]
    for fn in entries[2:]:
        fn(x)  # compile / warm up
    timers = [timeit.Timer(lambda fn=fn: fn(x)) for fn in entries]
    timings = interleaved(timers, settings.repeat, settings.seconds)
    ratio = timings[0].median / timings[1].median
    notes = [
        f"{name} {t.median / timings[1].median:.1f}x"
        for name, t in zip(others, timings[2:], strict=True)
    ]
    return [
        case,
        format_time(timings[0].median),
        format_time(timings[1].median),
        f"{ratio:.2f}x{'' if ratio <= TARGET else ' *'}",
        f"<= {TARGET:g}x",
        ", ".join(notes),
    ]


def rows(settings: Settings) -> list[list[str]]:
    x = np.linspace(-3.0, 3.0, 201)
    jac_others = _others("jacobian")
    found = [
        _row(
            f"jacobian sigmoid, {mode}",
            sg.jacobian(sigmoid, mode=mode),
            sigmoid_jacobian_by_hand,
            x,
            jac_others if mode == "reverse" else {},
            settings,
        )
        for mode in ("reverse", "forward")
    ]
    x = np.linspace(0.1, 1.0, 50)
    hessian = sg.hessian(quadratic_and_sines)
    found.append(_row("hessian, 50", hessian, hessian_by_hand, x, _others("hessian"), settings))
    return found


def table(settings: Settings) -> str:
    """The Jacobian/Hessian table (each row: case, s2sgrad, hand-written, ratio, target,
    other libraries)."""
    found = rows(settings)
    header = ["case", "s2sgrad", "by hand", "ratio", "target", "others / by hand"]
    return text_table(header, found, "* marks a miss; the hand-written versions are analytic")


def main(argv=None) -> int:
    return table_main("python -m benchmarks.jacobians", __doc__, table, argv)


if __name__ == "__main__":
    sys.exit(main())
