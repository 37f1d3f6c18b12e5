"""The same gradients computed by other autodiff libraries, where they are installed.

No library here is required: the harness looks for each one without importing it and leaves
its column out when it is missing. Each library is measured in a subprocess of its own,
``python -m benchmarks.others LIBRARY``, against the hand-written gradient timed in that same
process: the libraries' thread pools and their effect on the allocator (importing torch makes
NumPy's large temporaries several times cheaper under glibc) then touch neither s2sgrad's
numbers nor each other's.

The case functions are written against ``np`` and ``math``; each library gets the very same
code object with those two names rebound to its own array module, so every library
differentiates the same formula. Tensors are float64 throughout (JAX is switched to 64-bit
mode) so that results are comparable with NumPy's.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import types
from collections.abc import Callable

from .cases import CASES, Case
from .checks import Problem, check_call
from .timing import FULL, QUICK, make_timer, time_against

# A builder takes a case and its NumPy arguments and returns the library's gradient function
# and the arguments converted for it: ``grad_fn(*converted)`` computes the gradients.
Builder = Callable[[Case, tuple], tuple[Callable, tuple]]


@dataclasses.dataclass(frozen=True)
class Library:
    """One competitor column: its label and how to build its gradient for a case."""

    label: str
    build: Builder


def rebind(fn: types.FunctionType, **names) -> types.FunctionType:
    """`fn` with some global names (``np``, ``math``) pointing to other modules."""
    namespace = {**fn.__globals__, **names}
    return types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)


def wrt_tuple(case: Case) -> tuple[int, ...]:
    return case.wrt if isinstance(case.wrt, tuple) else (case.wrt,)


def _load_autograd() -> list[Library]:
    import autograd
    import autograd.numpy as anp

    def build(case, args):
        return autograd.grad(rebind(case.fn, np=anp, math=anp), case.wrt), args

    return [Library("autograd", build)]


def _load_jax() -> list[Library]:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def convert(args):
        return tuple(a if isinstance(a, float) else jnp.asarray(a) for a in args)

    def eager(case, args):
        grad = jax.grad(rebind(case.fn, np=jnp, math=jnp), argnums=case.wrt)
        return (lambda *a: jax.block_until_ready(grad(*a))), convert(args)

    def jitted(case, args):
        grad = jax.jit(jax.grad(rebind(case.fn, np=jnp, math=jnp), argnums=case.wrt))
        return (lambda *a: jax.block_until_ready(grad(*a))), convert(args)

    return [Library("jax", eager), Library("jax.jit", jitted)]


def _load_torch() -> list[Library]:
    import torch

    def build(case, args):
        fn = rebind(case.fn, np=torch, math=torch)
        wrt = wrt_tuple(case)
        converted = tuple(
            torch.tensor(a, dtype=torch.float64, requires_grad=i in wrt) for i, a in enumerate(args)
        )

        def grad(*a):
            return torch.autograd.grad(fn(*a), [a[i] for i in wrt])

        return grad, converted

    return [Library("torch", build)]


def _load_tensorflow() -> list[Library]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    shim = types.SimpleNamespace(
        sin=tf.sin,
        cos=tf.cos,
        exp=tf.exp,
        log=tf.math.log,
        sqrt=tf.sqrt,
        tanh=tf.tanh,
        sum=tf.reduce_sum,
        mean=tf.reduce_mean,
    )

    def build(case, args):
        fn = rebind(case.fn, np=shim, math=shim)
        wrt = wrt_tuple(case)
        converted = tuple(tf.constant(a, dtype=tf.float64) for a in args)

        def grad(*a):
            with tf.GradientTape() as tape:
                for i in wrt:
                    tape.watch(a[i])
                out = fn(*a)
            return tape.gradient(out, [a[i] for i in wrt])

        return grad, converted

    return [Library("tensorflow", build)]


LOADERS = {
    "autograd": _load_autograd,
    "jax": _load_jax,
    "torch": _load_torch,
    "tensorflow": _load_tensorflow,
}


def installed(name: str) -> bool:
    """Whether library `name` can be imported (found without importing it)."""
    return importlib.util.find_spec(name) is not None


def measure_here(name: str, case_names: list[str], quick: bool) -> dict:
    """In this process: each of `name`'s columns for each case, timed against the hand-written.

    Returns ``{case: {column: {"median": s, "best": s, "hand_median": s, "hand_best": s}}}``,
    or ``{"problem": "wrong" or "error", "message": "..."}`` when the library fails or is wrong.
    """
    settings = QUICK if quick else FULL
    results: dict[str, dict] = {}
    libraries = LOADERS[name]()
    for case_name in case_names:
        case = CASES[case_name]
        args = case.make_args()
        want = case.by_hand(*args)
        results[case_name] = row = {}
        for library in libraries:
            try:
                grad_fn, converted = library.build(case, args)
                problem = check_call(grad_fn, converted, want)
            except Exception as error:
                problem = Problem("error", f"could not build: {type(error).__name__}: {error}")
            if problem is not None:
                row[library.label] = {"problem": problem.kind, "message": problem.message}
                continue
            timers = [make_timer(grad_fn, converted), make_timer(case.by_hand, args)]
            theirs, hand = time_against(*timers, settings)
            row[library.label] = {
                "median": theirs.median,
                "best": theirs.best,
                "hand_median": hand.median,
                "hand_best": hand.best,
            }
    return results


def measure(name: str, case_names: list[str], quick: bool, root: str) -> dict:
    """`measure_here` run in a fresh subprocess (with `root` on the path)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "benchmarks.others", name, *case_names]
    done = subprocess.run(
        [*command, "--quick"] if quick else command,
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        last = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise RuntimeError(f"{name} failed: {last[0]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.others")
    parser.add_argument("library", choices=list(LOADERS))
    parser.add_argument("cases", nargs="*", default=list(CASES))
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    print(json.dumps(measure_here(options.library, options.cases, options.quick)))
