"""Calls cost what inlined code costs (issue 18): ``python -m benchmarks.calls [--quick]`` (also
printed at the end of ``python -m benchmarks`` when every case runs).

A spring-mass system stepped 500 times on Python floats, once with the time step in a helper
function (`spring_callee`) and once with the same body written inline (`spring_inline`). The
derivative of the first is timed against the derivative of the second, in reverse mode
(``sg.grad`` with respect to ``x``, ``v`` and ``k``: ``dt`` is a constant at every call) and in
forward mode (``sg.jvp`` in the direction of ``x``); and the same as a model class, a method
calling the method ``step`` against the method with ``step``'s body inline. Target: the
callee's loop within 1.2x of the inline one. Nothing here asserts: these are numbers to read,
not tests.
"""

from __future__ import annotations

import sys

import numpy as np

import s2sgrad as sg

from .timing import Settings, format_time, interleaved, make_timer, table_main, text_table

TARGET = 1.2
STEPS = 500
ARGS = (1.0, 0.5, 2.0, 0.01)  # x, v, k, dt


def step(x, v, k, dt):
    a = -k * x
    v = v + dt * a
    x = x + dt * v
    return x, v


def spring_callee(x, v, k, dt):
    for _ in range(STEPS):
        x, v = step(x, v, k, dt)
    return x * x + v * v


def spring_inline(x, v, k, dt):
    for _ in range(STEPS):
        a = -k * x
        v = v + dt * a
        x = x + dt * v
    return x * x + v * v


class SpringModel:
    """The same system as a model class: `energy` calls the method `step`, `energy_inline`
    has its body written inline; both read the constants from the instance."""

    def __init__(self, k, dt):
        self.k = k
        self.dt = dt

    def step(self, x, v):
        a = -self.k * x
        v = v + self.dt * a
        x = x + self.dt * v
        return x, v

    def energy(self, x, v):
        for _ in range(STEPS):
            x, v = self.step(x, v)
        return x * x + v * v

    def energy_inline(self, x, v):
        for _ in range(STEPS):
            a = -self.k * x
            v = v + self.dt * a
            x = x + self.dt * v
        return x * x + v * v


MODEL = SpringModel(ARGS[2], ARGS[3])


def _jvp_of(fn):
    def jvp(x, v, k, dt):
        return sg.jvp(fn, (x, v, k, dt), (1.0, 0.0, 0.0, 0.0))

    return jvp


def rows(settings: Settings) -> list[list[str]]:
    functions = (spring_callee, spring_inline)
    methods = (MODEL.energy, MODEL.energy_inline)
    pairs = [
        ("sg.grad, d/d(x, v, k)", *(sg.grad(f, wrt=(0, 1, 2)) for f in functions), ARGS),
        ("sg.jvp, direction x", *(_jvp_of(f) for f in functions), ARGS),
        ("sg.grad, method calling a method", *(sg.grad(f, wrt=(0, 1)) for f in methods), ARGS[:2]),
    ]
    found = []
    for case, callee, inline, args in pairs:
        if not np.allclose(callee(*args), inline(*args), rtol=1e-12, atol=0.0):
            raise AssertionError(f"{case}: the callee's derivative differs from the inline one")
        timings = interleaved(
            [make_timer(callee, args), make_timer(inline, args)], settings.repeat, settings.seconds
        )
        ratio = timings[0].median / timings[1].median
        best = timings[0].best / timings[1].best
        found.append(
            [
                case,
                format_time(timings[0].median),
                format_time(timings[1].median),
                f"{ratio:.2f}x{'' if ratio <= TARGET else ' *'}",
                f"{best:.2f}x",
                f"<= {TARGET:g}x",
            ]
        )
    return found


def table(settings: Settings) -> str:
    """The callee-versus-inline table (each row: transform, callee, inline, ratio of the
    medians, ratio of the fastest repeats, target)."""
    found = rows(settings)
    header = ["spring, 500 steps", "callee", "inline", "ratio", "best-of ratio", "target"]
    return text_table(header, found, "* marks a miss; ratio = callee time / inline time")


def main(argv=None) -> int:
    return table_main("python -m benchmarks.calls", __doc__, table, argv)


if __name__ == "__main__":
    sys.exit(main())
