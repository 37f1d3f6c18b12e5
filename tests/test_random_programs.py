"""Property tests on random programs (grammar in random_grammar.py).

1. Straight-line programs of the supported subset: the compiled gradient agrees with central
   finite differences, has each parameter's shape, leaves the inputs alone, and the Python-float
   and 0-d-array specializations agree.
2. Programs of a wider grammar (control flow, lambdas, comprehensions, undefined names, odd
   signatures, ...): `sg.grad(f)` and the first call succeed or fail only with the documented
   exceptions, and a TransformError points at a line of the program's file.

Each example is written to its own module file, since s2sgrad reads the source. The minimal
programs these properties found wrong are kept as explicit regression tests at the end (their
sources are in random_regressions.py).
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import inspect
import os
import traceback
from pathlib import Path

import numpy as np
import pytest
import random_grammar
import random_regressions
from fuzz.oracle import load
from hypothesis import HealthCheck, Phase, assume, event, given, note, settings
from numerical import numerical_gradient

import s2sgrad as sg

# where the compiler's own code lives (fuzz.oracle, imported above, keeps its frames visible)
COMPILER_DIRS = tuple(
    str(Path(importlib.import_module(name).__file__).resolve().parent) + os.sep
    for name in ("s2sgrad", "s2sgrad.transforms", "s2sgrad.runtime")
)

TRANSFORMS_DIR = COMPILER_DIRS[1:2]  # the passes (runtime/ is what generated code calls)


# Shrinking a failure to a minimal program can take minutes; the minimal programs found so far
# are the regression tests below. Set S2SGRAD_SHRINK=1 to shrink new failures.
PHASES = (
    tuple(Phase)
    if os.environ.get("S2SGRAD_SHRINK", "") not in ("", "0")
    else (Phase.explicit, Phase.reuse, Phase.generate)
)


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("random_programs")


def run_instrumented(program: random_grammar.Program, args: tuple) -> random_grammar.Recorder:
    recorder = random_grammar.Recorder()
    namespace = recorder.namespace()
    exec(compile(program.check_source, "<instrumented>", "exec"), namespace)
    with np.errstate(all="ignore"):
        namespace["f"](*copy.deepcopy(args))
    return recorder


def call(fn, *args, **kwargs):
    """`fn(*args)`, with any exception turned into one AssertionError raised from this line.

    Generated code lives in files named per compilation (``<s2sgrad dfdx #123>``); hypothesis
    tells failures apart by where they were raised, so without this a replayed failure would
    look like a different one.
    """
    try:
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)
    except Exception as error:
        failure = "".join(traceback.format_exception(error))
    raise AssertionError(f"unexpected exception:\n{failure}")


def assert_unchanged(args: tuple, before: tuple) -> None:
    for arg, old in zip(args, before, strict=True):
        np.testing.assert_array_equal(arg, old)


# ---- 1. supported programs: gradients are right ----------------------------------------------


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    phases=PHASES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(program=random_grammar.programs())
def test_random_program_gradient_matches_finite_differences(program_dir, program):
    args = program.arguments()
    recorder = run_instrumented(program, args)
    # finite differences need smooth, moderate values: off every kink, nothing huge
    assume(recorder.finite and recorder.largest < 1e3 and recorder.margin > 1e-3)
    f = load(program.source, program_dir).f
    before = copy.deepcopy(args)
    df = call(sg.grad, f, wrt=tuple(range(len(args))))
    grads = call(df, *args)
    note(sg.source(df, *args))
    assert_unchanged(args, before)
    assert isinstance(grads, tuple) and len(grads) == len(args)
    for i, (got, arg) in enumerate(zip(grads, args, strict=True)):
        assert np.shape(got) == np.shape(arg), f"gradient {i} has shape {np.shape(got)}"
        want = numerical_gradient(f, args, i)
        # the difference of two step sizes estimates the finite differences' own error
        noise = np.max(np.abs(want - numerical_gradient(f, args, i, eps=2e-6)), initial=0.0)
        np.testing.assert_allclose(
            got, want, rtol=1e-4, atol=1e-6 + 10 * noise, err_msg=f"gradient {i}"
        )
    assert_unchanged(args, before)

    # the unoptimized adjoint, with the value, agrees
    value, plain_grads = call(
        sg.value_and_grad(f, wrt=tuple(range(len(args))), optimize=False), *args
    )
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(np.sum(value), np.sum(f(*args)), rtol=1e-12, atol=1e-12)
    for got, want in zip(plain_grads, grads, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)

    if any(shape == () for shape in program.shapes):  # the 0-d array specialization agrees
        arrays = tuple(np.array(a) if isinstance(a, float) else a for a in args)
        again = call(df, *arrays)
        for got, want in zip(again, grads, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


# ---- 2. anything else: only documented errors ------------------------------------------------


def _origin(error: BaseException) -> traceback.FrameSummary:
    return traceback.extract_tb(error.__traceback__)[-1]


def _in_compiler(frame: traceback.FrameSummary, dirs: tuple[str, ...] = COMPILER_DIRS) -> bool:
    return str(Path(frame.filename).resolve()).startswith(dirs)


def check_documented_error(
    error: Exception, path: str, source: str, plain: Exception | None
) -> str | None:
    """Fail unless `error` is one s2sgrad documents (or the user's own, shown through).

    Allowed: TransformError (located in the program's file), LookupError itself (no rule),
    TypeError/ValueError raised on purpose by s2sgrad (a `raise` statement of its own), and, when
    the program itself fails when called, a TypeError/ValueError or any error raised while
    running the generated code (not inside the compiler's passes). Returns what is wrong, or
    None.
    """
    if isinstance(error, sg.TransformError):
        lines = source.splitlines()
        header = next(
            i
            for i, line in enumerate(lines, 1)
            if line.lstrip().startswith(("def f", "async def f"))
        )
        if error.filename != path or not header <= error.lineno <= len(lines):
            return f"TransformError at {error.filename}:{error.lineno}, not in {path}:{header}-"
        if not str(error).startswith(f"{path}:{error.lineno}:"):
            return f"TransformError message does not start with {path}:{error.lineno}:"
        return None
    if type(error) is LookupError:
        return None
    origin = _origin(error)
    on_purpose = _in_compiler(origin) and (origin.line or "").lstrip().startswith("raise")
    if isinstance(error, (TypeError, ValueError)) and on_purpose:
        return None
    if plain is not None:  # the program is broken: its gradient may fail differently
        if isinstance(error, (TypeError, ValueError)):
            return None
        frames = traceback.extract_tb(error.__traceback__)
        if not any(_in_compiler(frame, TRANSFORMS_DIR) for frame in frames):
            return None  # raised while running generated code, not while compiling
    return f"undocumented {type(error).__name__} (the program itself " + (
        f"raises {plain!r})" if plain else "runs)"
    )


@settings(
    max_examples=250,
    deadline=None,
    derandomize=True,
    phases=PHASES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(program=random_grammar.wild_programs())
def test_random_wild_program_raises_only_documented_errors(program_dir, program):
    module = load(program.source, program_dir)
    path, f = module.__file__, module.f
    args = program.arguments()
    plain = None
    try:
        with np.errstate(all="ignore"):
            result = f(*copy.deepcopy(args))
        if inspect.iscoroutine(result):
            result.close()
    except Exception as error:
        plain = error
    problem = None
    try:
        df = sg.grad(f, wrt=program.wrt)
        with np.errstate(all="ignore"):
            df(*args)
        event("gradient computed")
    except Exception as error:
        event(type(error).__name__)
        calling = "df" in locals()
        problem = check_documented_error(error, path, program.source, plain if calling else None)
        if problem is not None:
            problem += f" from {'the first call' if calling else 'sg.grad'}:\n"
            problem += "".join(traceback.format_exception(error))
    if problem is not None:  # raised here, outside the handler: one failure, one origin
        raise AssertionError(problem)


# ---- 3. regressions: the shrunk programs the properties found wrong --------------------------

REGRESSIONS = {
    "local_named_like_a_helper": (np.array([0.5, -1.0, 2.0]),),
    "constant_named_like_a_helper": (0.7,),
    "unpack_an_expression": (0.5,),
    "unpack_swap_arguments": (2.0, 3.0),
    "unpack_swap_with_local": (2.0,),
    "unpack_swap_after_self_assignment": (2.0,),
    "negated_maximum": (0.7,),
    "negated_maximum-array": (np.array([0.2, 0.7]),),
    "size_one_axes_broadcast": (np.array([[1.5]]), np.array([1.0, 2.0, 3.0])),
    "scalar_through_size_one_axes": (0.3, np.array([0.5, -1.0, 2.0]), np.array([[0.2], [0.7]])),
    "method_of_a_folded_constant": (2.0,),
    "loop_then_math_function": (np.full((2, 3), 0.1),),
}


@pytest.mark.parametrize(("name", "args"), REGRESSIONS.items(), ids=list(REGRESSIONS))
def test_random_regression(name, args):
    f = getattr(random_regressions, name.split("-")[0])
    grads = sg.grad(f, wrt=tuple(range(len(args))))(*args)
    for i, (got, arg) in enumerate(zip(grads, args, strict=True)):
        assert np.shape(got) == np.shape(arg), f"gradient {i} has shape {np.shape(got)}"
        want = numerical_gradient(f, args, i)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8, err_msg=f"gradient {i}")


def test_random_regression_identical_functions_in_two_files(tmp_path):
    """Two files holding the same function (equal code objects): each error names its own file."""
    source = "def f(x):\n    try:\n        return x\n    except ValueError:\n        return x\n"
    for _ in range(2):
        module = load(source, tmp_path)
        with pytest.raises(sg.TransformError) as info:
            sg.grad(module.f)
        assert info.value.filename == module.__file__
        assert str(info.value).startswith(f"{module.__file__}:2:")


def test_random_regression_mean_of_an_empty_slice():
    """The value is nan (mean of nothing), but the empty slice contributes no gradient."""
    with np.errstate(all="ignore"):
        got = sg.grad(random_regressions.mean_of_an_empty_slice)(np.array([0.5]))
    np.testing.assert_array_equal(got, [1.0])
