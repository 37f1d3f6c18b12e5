"""The bounded run of the whole-language differential fuzzer (tests/fuzz/).

A fixed range of seeds, each program checked in every mode (grad, value_and_grad, vjp, jvp,
both Jacobians, hessian, hvp, grad of grad, mixed grad of grad, unoptimized, simplified on a
share, under a GradientTape, exported) against central differences, with inputs and globals
unchanged and no result aliasing them. The long run is ``python -m tests.fuzz --minutes 30``;
it reduces each failure to a reproducer.

The contract is "every derivative is right, or there is a clear error": a wrong number, a
crash, a hang, a changed input or an aliased result fails the run at once. A clear refusal
(TransformError or LookupError at the user's line) of a program the grammar drew is allowed,
but only for a small share of the programs, so a regression that refuses everything fails.
"""

from __future__ import annotations

import pytest
from fuzz import oracle
from fuzz.campaign import class_of
from fuzz.runner import Worker
from fuzz.statements import generate

SEEDS = range(100_000, 100_000 + 96)
CHUNKS = 8
REFUSED_AT_MOST = 0.15  # the share of programs a clear error may refuse
# the tape and sg.export have refusals of their own, for programs the transforms take: a list
# of Tensors given to NumPy leaves the tape (a constant, as in TensorFlow), and a module cannot
# hold an object of the program's own class; most programs must still pass them
MODE_REFUSED_AT_MOST = 0.4


@pytest.fixture(scope="module")
def worker():
    worker = Worker()
    yield worker
    worker.stop()


@pytest.fixture(scope="module")
def refused() -> dict:
    return {"transforms": [], "tape or export": []}


def _report(seed: int, program, failure) -> str:
    return (
        f"seed {seed} ({class_of(failure)}): {failure}\n{program.render()}\n"
        f"reproduce and reduce: python -m tests.fuzz --seed {seed} --programs 1"
    )


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_random_programs_are_right_in_every_mode(worker, refused, chunk):
    failures = []
    for seed in SEEDS[chunk::CHUNKS]:
        program = generate(seed)
        outcome = worker.check(program, timeout=120)
        wrong = [f for f in outcome.failures if f.kind != "rejected"]
        if wrong:
            failures.append(_report(seed, program, wrong[0]))
        elif outcome.failures:
            general = [f for f in outcome.failures if f.mode not in oracle.MODE_SPECIFIC]
            which = "transforms" if general else "tape or export"
            refused[which].append(_report(seed, program, (general or outcome.failures)[0]))
    assert not failures, "\n\n".join(failures[:3]) + f"\n\n{len(failures)} programs failed"


def test_few_programs_are_refused(refused):
    # runs after the chunks (same module, declared later)
    for which, at_most in (
        ("transforms", REFUSED_AT_MOST),
        ("tape or export", MODE_REFUSED_AT_MOST),
    ):
        reports = refused[which]
        assert len(reports) / len(SEEDS) <= at_most, (
            f"{len(reports)} of {len(SEEDS)} programs refused by the {which}:\n\n"
            + "\n\n".join(reports[:3])
        )
