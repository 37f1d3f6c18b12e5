"""Timing helpers: calibrated, interleaved `timeit` runs, and the run lengths.

Every timed function is called through a `timeit` statement ``f(a0, a1, ...)`` so that the
harness adds the same small cost to all of them. Competitors are timed in turns, one repeat of
each per round, so that a slow drift of the machine (frequency scaling, another process) touches
them all alike instead of whichever happened to run last.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import timeit
from collections.abc import Callable, Sequence


@dataclasses.dataclass(frozen=True)
class Settings:
    """How long to measure: `repeat` rounds of about `seconds` per timed function.

    A function slower than one round (another library's gradient taking seconds per call) gets
    one call per round and only as many rounds as fit in `slow_budget` seconds (at least one).
    """

    repeat: int
    seconds: float
    slow_budget: float
    overhead_repeat: int  # rounds of `overhead_seconds` for the wrapper overhead (median of)
    overhead_seconds: float
    cold_runs: int  # fresh subprocesses per case for the first-call time (median of)
    memory_repeat: int  # traced calls per gradient for its peak memory (smallest of)


FULL = Settings(
    repeat=15,
    seconds=0.02,
    slow_budget=5.0,
    overhead_repeat=60,
    overhead_seconds=0.003,
    cold_runs=3,
    memory_repeat=3,
)
QUICK = Settings(
    repeat=5,
    seconds=0.005,
    slow_budget=1.0,
    overhead_repeat=15,
    overhead_seconds=0.002,
    cold_runs=1,
    memory_repeat=1,
)


@dataclasses.dataclass(frozen=True)
class Timing:
    """Per-call times in seconds, one per repeat."""

    per_call: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.per_call)

    @property
    def best(self) -> float:
        return min(self.per_call)


def make_timer(fn: Callable, args: Sequence) -> timeit.Timer:
    """A timer for ``fn(*args)`` that spells the arguments out (no ``*args`` unpacking)."""
    names = [f"a{i}" for i in range(len(args))]
    namespace = {"f": fn, **dict(zip(names, args, strict=True))}
    return timeit.Timer(f"f({', '.join(names)})", globals=namespace)


def calibrate(timer: timeit.Timer, seconds: float) -> int:
    """How many calls make one repeat last about `seconds` (at least one call)."""
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= seconds / 10 or number >= 10**7:
            break
        number *= 10
    return max(1, math.ceil(number * seconds / max(elapsed, 1e-9)))


def interleaved(
    timers: Sequence[timeit.Timer],
    repeat: int,
    seconds: float,
    numbers: Sequence[int | None] | None = None,
) -> list[Timing]:
    """Time each timer `repeat` times, in rounds, each repeat lasting about `seconds`.

    `numbers`, if given, sets the calls per repeat of some timers (None: calibrate that one).
    """
    numbers = [
        calibrate(timer, seconds) if number is None else number
        for timer, number in zip(timers, numbers or [None] * len(timers), strict=True)
    ]
    samples: list[list[float]] = [[] for _ in timers]
    runs = list(zip(timers, numbers, samples, strict=True))
    for round_ in range(repeat):
        # alternate the order, so that no timer always runs first (after the others' work)
        for timer, number, out in runs if round_ % 2 == 0 else reversed(runs):
            out.append(timer.timeit(number) / number)
    return [Timing(tuple(s)) for s in samples]


def time_against(
    timer: timeit.Timer, other: timeit.Timer, settings: Settings
) -> tuple[Timing, Timing]:
    """`interleaved` for `timer` against `other`, cut short if `timer` is slow.

    One warm call of `timer` is timed first; if it lasts longer than a round, each round makes a
    single call and there are only as many rounds as fit in `settings.slow_budget`.
    """
    once = timer.timeit(1)
    if once < settings.seconds:
        first, second = interleaved([timer, other], settings.repeat, settings.seconds)
    else:
        repeat = max(1, min(settings.repeat, int(settings.slow_budget / once)))
        first, second = interleaved([timer, other], repeat, settings.seconds, [1, None])
    return first, second


def format_time(seconds: float) -> str:
    """A duration with a unit that keeps three significant digits readable."""
    if seconds < 1e-6:
        return f"{seconds * 1e9:.0f} ns"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.3g} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"


def text_table(header: Sequence[str], rows: Sequence[Sequence], footnote: str) -> str:
    """`rows` under `header` in left-aligned columns (a short row is padded), a rule under the
    header and `footnote` below: the tables the benchmark modules print."""
    lines = [[str(cell) for cell in row] for row in [header, *rows]]
    lines = [row + [""] * (len(header) - len(row)) for row in lines]
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    text = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in lines
    ]
    text.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(text) + f"\n\n  ({footnote})"


def table_main(prog: str, description: str | None, table: Callable, argv=None) -> int:
    """``python -m benchmarks.NAME [--quick]``: print `table` for the chosen run lengths."""
    import argparse

    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats: noisier")
    options = parser.parse_args(argv)
    print(table(QUICK if options.quick else FULL))
    return 0
