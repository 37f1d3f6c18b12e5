"""``python -m benchmarks [--quick] [--case NAME ...] [--libs a,b]``: print the tables."""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time

import numpy as np

import s2sgrad as sg

from . import first_call, others
from .cases import CASES, Case
from .checks import Problem, check_call
from .timing import FULL, QUICK, Settings, Timing, format_time, interleaved, make_timer

RATIO_TARGET = 1.2
FIRST_CALL_TARGET = 50e-3
OVERHEAD_TARGET = 5e-6


@dataclasses.dataclass
class Row:
    """One case's results: the check, the timings, and ratios from other libraries."""

    case: str
    check: str = "OK"
    s2sgrad: Timing | None = None
    hand: Timing | None = None
    others: dict[str, str] = dataclasses.field(default_factory=dict)  # column -> ratio text
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
    row.s2sgrad = timings[0] if problem is None else None
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
                row.others[column] = f"{result['median'] / result['hand_median']:.2f}x"
    return columns


# -- tables ---------------------------------------------------------------------------------------


def render(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells):
        rest = (c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))
        return " | ".join([cells[0].ljust(widths[0]), *rest])

    return "\n".join([line(header), "-+-".join("-" * w for w in widths), *map(line, rows)])


def _flag(value: float, target: float) -> str:
    return "*" if value > target else ""


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
            ours = [
                format_time(s2.median),
                f"{ratio:.2f}x{_flag(ratio, RATIO_TARGET)}",
                f"{best:.2f}x{_flag(best, RATIO_TARGET)}",
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
    print(f"\n  target: s2sgrad ratio <= {RATIO_TARGET}x   (* misses its target)")
    print("  other libraries: each timed in its own process against the hand-written gradient")
    if missing:
        print(f"  not installed (no column): {', '.join(missing)}")
    print(
        f"\nCold start (fresh process, median of {settings.cold_runs}) and wrapper overhead "
        f"(median of {settings.overhead_repeat} rounds)\n"
    )
    print(startup_table(cold, overhead))
    imports = [c["import"] for c in cold.values() if c is not None]
    if imports:
        print(f"\n  (import s2sgrad, not counted above: {format_time(max(imports))})")
    print(
        f"  targets: sg.grad + first call < {FIRST_CALL_TARGET * 1e3:.0f} ms; "
        f"overhead = wrapper - generated < {OVERHEAD_TARGET * 1e6:.0f} us"
    )
    notes = [note for row in rows for note in row.notes]
    if notes:
        print("\nProblems:\n" + "\n".join(f"  - {note}" for note in notes))
    print(f"\n(took {time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
