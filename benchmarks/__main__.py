"""``python -m benchmarks [--quick] [--case NAME ...] [--libs a,b]``: print the tables."""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time

import numpy as np

import s2sgrad as sg

from . import calls, first_call, jacobians, others, tape
from .cases import CASES, Case
from .checks import Problem, check_call
from .memory import format_bytes, peak_bytes
from .timing import FULL, QUICK, Settings, Timing, format_time, interleaved, make_timer

FIRST_CALL_TARGET = 50e-3
OVERHEAD_TARGET = 5e-6


@dataclasses.dataclass
class Row:
    """One case's results: the check, the timings, peak memory, and other libraries' ratios."""

    case: str
    check: str = "OK"
    s2sgrad: Timing | None = None
    hand: Timing | None = None
    others: dict[str, str] = dataclasses.field(default_factory=dict)  # column -> ratio text
    other_ratios: dict[str, float] = dataclasses.field(default_factory=dict)  # their / hand
    memory: tuple[int, int] | None = None  # peak bytes of one call: s2sgrad, hand-written
    notes: list[str] = dataclasses.field(default_factory=list)


def run_case(case: Case, settings: Settings) -> Row:
    """Check s2sgrad's gradient against the hand-written one, then time both, interleaved."""
    row = Row(case.name)
    args = case.make_args()
    try:
        df = sg.grad(case.fn, wrt=case.wrt)
        problem = check_call(df, args, case.by_hand(*args))
    except Exception as error:  # sg.grad itself refused the function
        problem = Problem("error", f"sg.grad raised {type(error).__name__}: {error}")
    entries = [(case.by_hand, args)]
    if problem is None:
        entries.insert(0, (df, args))
    else:
        row.check = "MISMATCH" if problem.kind == "wrong" else "ERROR"
        row.notes.append(f"{case.name}, s2sgrad: {problem.message}")
    timings = interleaved([make_timer(*e) for e in entries], settings.repeat, settings.seconds)
    row.hand = timings[-1]
    if problem is None:
        row.s2sgrad = timings[0]
        repeat = settings.memory_repeat
        row.memory = (peak_bytes(df, args, repeat), peak_bytes(case.by_hand, args, repeat))
    return row


@dataclasses.dataclass(frozen=True)
class Overhead:
    """Per-call times of the wrapper and of the generated function, in alternating rounds."""

    wrapper: Timing
    direct: Timing

    @property
    def extra(self) -> float:
        """The median over rounds of wrapper - generated (rounds next in time are paired)."""
        pairs = zip(self.wrapper.per_call, self.direct.per_call, strict=True)
        return statistics.median(w - d for w, d in pairs)


def measure_overhead(case: Case, settings: Settings) -> Overhead:
    """Time the `sg.grad` wrapper and the generated function it calls, round by round.

    Measured on tiny arguments of the same kinds (the wrapper's work depends only on their
    classes), so that the gradient's own arithmetic does not drown the difference in noise.
    """
    args = case.make_args(small=True)
    df = sg.grad(case.fn, wrt=case.wrt)
    df(*args)
    generated = df.__wrapped_transform__.last.function
    wrapper, direct = interleaved(
        [make_timer(df, args), make_timer(generated, args)],
        settings.overhead_repeat,
        settings.overhead_seconds,
    )
    return Overhead(wrapper, direct)


def add_library(rows: list[Row], name: str, quick: bool) -> list[str]:
    """Measure library `name` in its own process; fill its columns; return the column names."""
    results = others.measure(name, [row.case for row in rows], quick, str(first_call.PROJECT_ROOT))
    columns: list[str] = []
    for row in rows:
        for column, result in results[row.case].items():
            if column not in columns:
                columns.append(column)
            if "problem" in result:
                row.others[column] = result["problem"]
                row.notes.append(f"{row.case}, {column}: {result['message']}")
            else:
                ratio = result["median"] / result["hand_median"]
                row.others[column] = f"{ratio:.2f}x"
                row.other_ratios[column] = ratio
    return columns


# -- tables ---------------------------------------------------------------------------------------


def render(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells):
        rest = (c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))
        return " | ".join([cells[0].ljust(widths[0]), *rest])

    return "\n".join([line(header), "-+-".join("-" * w for w in widths), *map(line, rows)])


def _flag(value: float, target: float | None) -> str:
    return "*" if target is not None and value > target else ""


def speed_table(rows: list[Row], columns: list[str]) -> str:
    header = [
        "case",
        "check",
        "s2sgrad",
        "hand-written",
        "ratio",
        "best-of ratio",
        *(f"{c} ratio" for c in columns),
    ]
    body = []
    for row in rows:
        s2, hand = row.s2sgrad, row.hand
        if s2 is None:
            ours = ["-", "-", "-"]
        else:
            ratio, best = s2.median / hand.median, s2.best / hand.best
            target = CASES[row.case].ratio_target
            ours = [
                format_time(s2.median),
                f"{ratio:.2f}x{_flag(ratio, target)}",
                f"{best:.2f}x{_flag(best, target)}",
            ]
        body.append(
            [
                row.case,
                row.check,
                ours[0],
                format_time(hand.median),
                *ours[1:],
                *(row.others.get(c, "-") for c in columns),
            ]
        )
    return render(header, body)


def speedup_table(rows: list[Row], columns: list[str]) -> str:
    """How many times faster than each other library s2sgrad is: their ratio / s2sgrad's."""
    body = []
    for row in rows:
        cells = []
        for column in columns:
            theirs = row.other_ratios.get(column)
            if theirs is None or row.s2sgrad is None:
                cells.append("-")
                continue
            speedup = theirs / (row.s2sgrad.median / row.hand.median)
            target = CASES[row.case].faster_than.get(column)
            miss = "*" if target is not None and speedup < target else ""
            cells.append(f"{speedup:.3g}x{miss}")
        body.append([row.case, *cells])
    return render(["case", *(f"vs {c}" for c in columns)], body)


def memory_table(rows: list[Row]) -> str:
    header = ["case", "s2sgrad peak", "hand-written peak", "ratio"]
    body = []
    for row in rows:
        if row.memory is None:
            body.append([row.case, "-", "-", "-"])
            continue
        ours, hand = row.memory
        ratio = "-"
        if hand > 0:
            ratio = f"{ours / hand:.2f}x{_flag(ours / hand, CASES[row.case].memory_target)}"
        body.append([row.case, format_bytes(ours), format_bytes(hand), ratio])
    return render(header, body)


def _targets(names: list[str], field: str) -> str:
    """The targets of `field` for the cases in `names`, grouped: "1.2x (a, b), 1.5x (c)"."""
    groups: dict[float, list[str]] = {}
    for name in names:
        value = getattr(CASES[name], field)
        if value is not None:
            groups.setdefault(value, []).append(name)
    return ", ".join(f"{v:g}x ({', '.join(cases)})" for v, cases in groups.items())


def startup_table(cold: dict[str, dict | None], overhead: dict[str, Overhead | None]) -> str:
    header = [
        "case",
        "sg.grad",
        "first call",
        "grad + first",
        "(steady call)",
        "wrapper",
        "generated",
        "overhead",
    ]
    body = []
    for name, c in cold.items():
        cells = ["error"] * 4
        if c is not None:
            total = c["grad"] + c["first_call"]
            cells = [
                format_time(c["grad"]),
                format_time(c["first_call"]),
                format_time(total) + _flag(total, FIRST_CALL_TARGET),
                format_time(c["steady_call"]),
            ]
        o = overhead[name]
        if o is None:
            cells += ["-"] * 3
        else:
            extra = f"{o.extra * 1e6:.2f} us{_flag(o.extra, OVERHEAD_TARGET)}"
            cells += [format_time(o.wrapper.median), format_time(o.direct.median), extra]
        body.append([name, *cells])
    return render(header, body)


def parse_options(argv):
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats: noisier")
    parser.add_argument(
        "--case", action="append", choices=list(CASES), help="run only this case (repeatable)"
    )
    parser.add_argument(
        "--libs",
        default=",".join(others.LOADERS),
        help="comma-separated libraries to compare with where installed "
        f"(default: {','.join(others.LOADERS)}; '' for none)",
    )
    options = parser.parse_args(argv)
    options.libs = [name for name in options.libs.split(",") if name]
    unknown = sorted(set(options.libs) - set(others.LOADERS))
    if unknown:
        parser.error(
            f"unknown library {', '.join(unknown)}; choose among {', '.join(others.LOADERS)}"
        )
    return options


def main(argv=None) -> int:
    options = parse_options(argv)
    settings = QUICK if options.quick else FULL
    names = options.case or list(CASES)
    started = time.perf_counter()

    rows = [run_case(CASES[name], settings) for name in names]
    overhead = {
        row.case: measure_overhead(CASES[row.case], settings) if row.check == "OK" else None
        for row in rows
    }
    cold: dict[str, dict | None] = {}
    for row in rows:
        try:
            cold[row.case] = first_call.measure(row.case, settings.cold_runs)
        except RuntimeError as error:
            cold[row.case] = None
            row.notes.append(str(error))
    columns, missing = [], []
    for name in options.libs:
        if not others.installed(name):
            missing.append(name)
            continue
        try:
            columns += add_library(rows, name, options.quick)
        except RuntimeError as error:
            rows[0].notes.append(str(error))

    print(
        f"s2sgrad {sg.__version__}, NumPy {np.__version__}, Python {sys.version.split()[0]}"
        f"{', quick run' if options.quick else ''}\n"
    )
    for name in names:
        print(f"  {name}: {CASES[name].description}")
    print(
        f"\nGradient call: median per call over {settings.repeat} repeats; ratios are "
        "time / hand-written time\n"
    )
    print(speed_table(rows, columns))
    print(f"\n  targets (* marks a miss): s2sgrad ratio <= {_targets(names, 'ratio_target')}")
    print("  other libraries: each timed in its own process against the hand-written gradient")
    if missing:
        print(f"  not installed (no column): {', '.join(missing)}")
    if columns:
        print("\ns2sgrad's speed-up: the other library's ratio / s2sgrad's ratio\n")
        print(speedup_table(rows, columns))
        speedups = [
            f"{factor:g}x vs {column} ({name})"
            for name in names
            for column, factor in CASES[name].faster_than.items()
        ]
        if speedups:
            print(f"\n  target: s2sgrad at least {', '.join(speedups)}")
    print("\nPeak memory of one gradient call (tracemalloc)\n")
    print(memory_table(rows))
    memory_targets = _targets(names, "memory_target")
    if memory_targets:
        print(f"\n  target: s2sgrad peak / hand-written peak <= {memory_targets}")
    print(
        f"\nCold start (fresh process, median of {settings.cold_runs}) and wrapper overhead "
        f"(median of {settings.overhead_repeat} rounds)\n"
    )
    print(startup_table(cold, overhead))
    imports = [c["import"] for c in cold.values() if c is not None]
    if imports:
        shown = format_time(max(imports))
        print(f"\n  (import s2sgrad and its compiler, not counted above: {shown})")
    print(
        f"  targets: sg.grad + first call < {FIRST_CALL_TARGET * 1e3:.0f} ms; "
        f"overhead = wrapper - generated < {OVERHEAD_TARGET * 1e6:.0f} us"
    )
    if not options.case:  # the GradientTape front door: benchmarks/tape.py
        print("\nGradientTape (python -m benchmarks.tape)\n")
        print(tape.table(settings))
        print("\nJacobians and Hessians (python -m benchmarks.jacobians)\n")
        print(jacobians.table(settings))
        print("\nCalls against inlined code (python -m benchmarks.calls)\n")
        print(calls.table(settings))
    notes = [note for row in rows for note in row.notes]
    if notes:
        print("\nProblems:\n" + "\n".join(f"  - {note}" for note in notes))
    print(f"\n(took {time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
