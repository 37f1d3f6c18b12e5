"""Cold-start cost: the first ``sg.grad(f)`` and the first call, in a fresh interpreter.

``python -m benchmarks.first_call CASE`` prints one JSON line with the timings of a single cold
run; `measure` starts such runs in subprocesses, so nothing the parent process has already
parsed, cached or compiled (rule templates, earlier transforms) hides the cost. NumPy is
imported and warmed up (one call of the hand-written gradient) before the clock starts, so only
s2sgrad's own work is counted; the import of s2sgrad and of its compiler (libcst and the
passes, which a process finding its transforms in the on-disk cache never loads) is reported
on its own.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def cold_run(case_name: str) -> dict[str, float]:
    """Time, in seconds, one cold transform of a case; meant to run in a fresh process."""
    from .cases import CASES  # imports NumPy, whose import cost is not s2sgrad's

    case = CASES[case_name]
    args = case.make_args()
    case.by_hand(*args)  # warm NumPy (BLAS threads, ufunc loops) outside the clock
    start = time.perf_counter()
    # the compiler (libcst and the passes), which `import s2sgrad` defers to the first
    # transform not found in the on-disk cache: counted with the import, apart from the
    # transform's own work, as it was before the import was made lazy
    import s2sgrad.transforms.pipeline

    import s2sgrad as sg

    imported = time.perf_counter()
    df = sg.grad(case.fn, wrt=case.wrt)
    transformed = time.perf_counter()
    df(*args)
    first = time.perf_counter()
    df(*args)
    second = time.perf_counter()
    return {
        "import": imported - start,
        "grad": transformed - imported,
        "first_call": first - transformed,
        "steady_call": second - first,
    }


def measure(case_name: str, runs: int) -> dict[str, float]:
    """The median over `runs` fresh subprocesses of each timing of `cold_run`."""
    env = dict(os.environ)
    env.pop("S2SGRAD_DEBUG", None)
    env["S2SGRAD_CACHE_DIR"] = "off"  # cold means cold: no transform read from the disk cache
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    samples = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.first_call", case_name],
            cwd=PROJECT_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"cold run of {case_name} failed:\n{done.stderr.strip()}")
        samples.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {key: statistics.median(s[key] for s in samples) for key in samples[0]}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m benchmarks.first_call CASE")
    print(json.dumps(cold_run(sys.argv[1])))
