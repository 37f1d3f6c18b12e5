"""What `simplify=True` buys, and what the on-disk cache saves a second process.

    python -m benchmarks.simplify            # about 30 s
    python -m benchmarks.simplify --quick

First table, per case: the statements of the generated entry function (every simple statement,
nested ones included) without and with ``simplify=True``, after the optimizer and without it,
and the median time per call of both gradients, timed in alternating rounds (`timing`).
Cases: `scalar_formula` and `rosenbrock` from `cases.py`, and `elementwise` below: the function
of docs/generated-code.md's simplify section, ``x**2 * sin(x) / (1 + exp(-x))``, summed over
100,000 float64 values.

Second table: the transform cost in a fresh process, ``sg.grad(f)`` plus the first call minus a
steady call (the gradient's own work, the fastest of three), with an empty cache directory
("cold") and with the entries the cold process wrote ("cached"); and, apart, the import of
s2sgrad with the module defining ``sg.grad`` ("import", paid by every process) and the import of
the compiler (libcst and the passes: "compiler", paid only by the cold process; a cache hit
never loads it, the "libcst" column counts the cached processes that did). As in
`first_call.py`, NumPy is warmed up first by the hand-written gradient (the function itself
where there is none), so the first use of its loops and of memory of that size is not counted.
The cases are the three above and `with_callee`, a function calling a user function (its
callee's forward and backward halves are cached too). Median of 3 processes each (1 with
--quick).
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


def softplus(v):
    return np.log1p(np.exp(v))


def with_callee(x):
    return np.sum(softplus(x) * x)


# the second table's cases: the ones above, and a function calling a user function
CACHE_CASES = {**SIMPLIFY_CASES, "with_callee": (with_callee, 0, _elementwise_args)}


def _arguments(name: str) -> tuple:
    make_args = CACHE_CASES[name][2]
    return make_args() if make_args is not None else CASES[name].make_args()


def statement_count(source: str, entry: str) -> int:
    """Simple statements of the entry function (inside loops and branches too)."""
    import libcst as cst  # not at the top: the cached second process must not load it

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


def second_process(name: str, load_compiler: bool) -> dict:
    """Run in a fresh process: seconds of the imports, and of sg.grad + first call - steady
    call (the fastest of three); the compiler is imported first (and timed apart) when
    `load_compiler`."""
    fn, wrt, _ = CACHE_CASES[name]
    args = _arguments(name)
    by_hand = CASES[name].by_hand if name in CASES else fn
    by_hand(*args)  # warm NumPy (ufunc loops, memory of this size) outside the clock
    start = time.perf_counter()
    import s2sgrad as sg

    sg.grad  # noqa: B018 -- the module defining sg.grad (s2sgrad imports it lazily)
    imported = time.perf_counter()
    if load_compiler:
        import s2sgrad.transforms.pipeline  # libcst and the passes
    compiler = time.perf_counter()
    df = sg.grad(fn, wrt=wrt)
    df(*args)
    first = time.perf_counter()
    steady = min(_call_time(df, args) for _ in range(3))  # one call alone is noisy (ms cases)
    return {
        "import": imported - start,
        "compiler": compiler - imported,
        "transform": first - compiler - steady,
        "libcst": "libcst" in sys.modules,
    }


def _call_time(df, args: tuple) -> float:
    start = time.perf_counter()
    df(*args)
    return time.perf_counter() - start


def measure_second_process(name: str, runs: int) -> dict:
    """Medians over `runs` pairs of processes: one with an empty cache, one reading it."""
    env = dict(os.environ)
    env.pop("S2SGRAD_DEBUG", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    found: dict[str, list] = {"cold": [], "cached": [], "import": [], "compiler": []}
    libcst = 0
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="s2sgrad-bench-cache-") as folder:
            env["S2SGRAD_CACHE_DIR"] = folder
            for which in ("cold", "cached"):
                done = subprocess.run(
                    [sys.executable, "-m", "benchmarks.simplify", f"--{which}", name],
                    cwd=PROJECT_ROOT,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=300,
                    check=True,
                )
                measured = json.loads(done.stdout.strip().splitlines()[-1])
                found[which].append(measured["transform"])
                found["import"].append(measured["import"])
                if which == "cold":
                    found["compiler"].append(measured["compiler"])
                else:
                    libcst += measured["libcst"]
    medians = {which: statistics.median(values) for which, values in found.items()}
    return {**medians, "libcst": f"{libcst}/{runs}"}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.simplify")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cold", metavar="CASE", help=argparse.SUPPRESS)
    parser.add_argument("--cached", metavar="CASE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cold or args.cached:
        print(json.dumps(second_process(args.cold or args.cached, load_compiler=bool(args.cold))))
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
    print(f"{'case':<16}{'cold':>10}{'cached':>10}{'import':>10}{'compiler':>10}  libcst")
    for name in CACHE_CASES:
        row = measure_second_process(name, settings.cold_runs)
        mark = "" if row["cached"] < 0.005 else "  * (target: under 5 ms)"
        print(
            f"{name:<16}{format_time(row['cold']):>10}{format_time(row['cached']):>10}"
            f"{format_time(row['import']):>10}{format_time(row['compiler']):>10}"
            f"  {row['libcst']:>6}{mark}"
        )
    print(
        "\nimport: `import s2sgrad` and the module defining sg.grad, paid by every process; "
        "compiler: libcst and the passes, paid only on a miss (cold); libcst: how many "
        "cached processes loaded it (a miss: a compiler or rule file edited between the runs)"
    )


if __name__ == "__main__":
    main()
