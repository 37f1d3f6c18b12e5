"""What `simplify=True` buys, and what the on-disk cache saves a second process.

    python -m benchmarks.simplify            # about 30 s
    python -m benchmarks.simplify --quick

First table, per case: the statements of the generated entry function (every simple statement,
nested ones included) without and with ``simplify=True``, after the optimizer and without it,
and the median time per call of both gradients, timed in alternating rounds (`timing`).
Cases: `scalar_formula` and `rosenbrock` from `cases.py`, and `elementwise` below: the README's
``x**2 * sin(x) / (1 + exp(-x))``, summed over 100,000 float64 values.

Second table: the transform cost in a fresh process, ``sg.grad(f)`` plus the first call minus
a steady call (the gradient's own work), with an empty cache directory ("cold") and with the
entries the cold process wrote ("cached"); and, apart, the import of s2sgrad with the module
defining ``sg.grad`` (which loads the compiler). Median of 3 processes each (1 with --quick).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import libcst as cst
import numpy as np

from .cases import CASES
from .first_call import PROJECT_ROOT
from .timing import FULL, QUICK, format_time, interleaved, make_timer


def elementwise(x):
    return np.sum(x**2 * np.sin(x) / (1 + np.exp(-x)))


def _elementwise_args(small=False):
    return (np.random.default_rng(0).uniform(-3.0, 3.0, 8 if small else 100_000),)


# (function, wrt, arguments) per case
SIMPLIFY_CASES = {
    "scalar_formula": (CASES["scalar_formula"].fn, CASES["scalar_formula"].wrt, None),
    "rosenbrock": (CASES["rosenbrock"].fn, CASES["rosenbrock"].wrt, None),
    "elementwise": (elementwise, 0, _elementwise_args),
}


def _arguments(name: str) -> tuple:
    make_args = SIMPLIFY_CASES[name][2]
    return make_args() if make_args is not None else CASES[name].make_args()


def statement_count(source: str, entry: str) -> int:
    """Simple statements of the entry function (inside loops and branches too)."""
    module = cst.parse_module(source.split("\n\n# ")[0])
    funcdef = next(s for s in module.body if getattr(s, "name", None) and s.name.value == entry)
    found = []

    class Count(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node) -> None:
            found.extend(node.body)

    funcdef.body.visit(Count())
    return len(found)


def simplify_row(name: str, settings) -> dict:
    import s2sgrad as sg

    fn, wrt, _ = SIMPLIFY_CASES[name]
    args = _arguments(name)
    counts = {}
    for optimize in (True, False):
        for simplify in (False, True):
            df = sg.grad(fn, wrt=wrt, optimize=optimize, simplify=simplify)
            df(*args)
            generated = df.__wrapped_transform__.last
            counts[optimize, simplify] = statement_count(generated.source, generated.entry)
    plain = sg.grad(fn, wrt=wrt)
    simple = sg.grad(fn, wrt=wrt, simplify=True)
    agree = all(
        np.allclose(a, b, rtol=1e-9)
        for a, b in zip(_tuple(plain(*args)), _tuple(simple(*args)), strict=True)
    )
    timings = interleaved(
        [make_timer(plain, args), make_timer(simple, args)], settings.repeat, settings.seconds
    )
    return {"counts": counts, "agree": agree, "plain": timings[0], "simple": timings[1]}


def _tuple(value):
    return value if isinstance(value, tuple) else (value,)


def cold_and_cached(name: str) -> dict[str, float]:
    """Run in a fresh process: seconds of sg.grad + first call - steady call."""
    fn, wrt, _ = SIMPLIFY_CASES[name]
    args = _arguments(name)
    start = time.perf_counter()
    import s2sgrad as sg

    sg.grad  # noqa: B018 -- loads the compiler (s2sgrad imports it lazily): counted as import
    imported = time.perf_counter()
    df = sg.grad(fn, wrt=wrt)
    df(*args)
    first = time.perf_counter()
    df(*args)
    steady = time.perf_counter() - first
    return {"import": imported - start, "transform": first - imported - steady}


def measure_second_process(name: str, runs: int) -> tuple[float, float, float]:
    env = dict(os.environ)
    env.pop("S2SGRAD_DEBUG", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    cold, cached, imports = [], [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="s2sgrad-bench-cache-") as folder:
            env["S2SGRAD_CACHE_DIR"] = folder
            for out in (cold, cached):
                done = subprocess.run(
                    [sys.executable, "-m", "benchmarks.simplify", "--cold", name],
                    cwd=PROJECT_ROOT,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=300,
                    check=True,
                )
                measured = json.loads(done.stdout.strip().splitlines()[-1])
                out.append(measured["transform"])
                imports.append(measured["import"])
    return statistics.median(cold), statistics.median(cached), statistics.median(imports)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.simplify")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cold", metavar="CASE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cold:
        print(json.dumps(cold_and_cached(args.cold)))
        return
    settings = QUICK if args.quick else FULL
    os.environ["S2SGRAD_CACHE_DIR"] = "off"  # this process measures generation, not the cache
    print("simplify=True: statements of the generated function, and time per call\n")
    header = (
        f"{'case':<16}{'opt':>5}{'opt+simp':>10}{'change':>8}{'raw':>6}{'raw+simp':>10}"
        f"{'change':>8}  {'time':>10}{'simplified':>12}{'ratio':>7}  check"
    )
    print(header)
    for name in SIMPLIFY_CASES:
        row = simplify_row(name, settings)
        counts = row["counts"]
        opt, opt_simple = counts[True, False], counts[True, True]
        raw, raw_simple = counts[False, False], counts[False, True]
        plain, simple = row["plain"].median, row["simple"].median
        check = "OK" if row["agree"] else "MISMATCH"
        print(
            f"{name:<16}{opt:>5}{opt_simple:>10}{(opt_simple - opt) / opt:>+8.0%}{raw:>6}"
            f"{raw_simple:>10}{(raw_simple - raw) / raw:>+8.0%}  {format_time(plain):>10}"
            f"{format_time(simple):>12}{simple / plain:>7.2f}  {check}"
        )
    print("\nsecond process: sg.grad(f) + first call - steady call, with the on-disk cache\n")
    print(f"{'case':<16}{'cold':>10}{'cached':>10}{'import':>10}")
    for name in SIMPLIFY_CASES:
        cold, cached, imported = measure_second_process(name, settings.cold_runs)
        mark = "" if cached < 0.005 else "  * (target: under 5 ms)"
        print(
            f"{name:<16}{format_time(cold):>10}{format_time(cached):>10}"
            f"{format_time(imported):>10}{mark}"
        )
    print(
        "\nimport: `import s2sgrad` and loading sg.grad's module (the compiler: libcst), paid "
        "by every process that calls sg.grad, cached or not"
    )


if __name__ == "__main__":
    main()
