"""The bounded run of the whole-language differential fuzzer (tests/fuzz/).

A fixed range of seeds, each program checked in every mode (grad, value_and_grad, vjp, jvp,
both Jacobians, hessian, hvp, grad of grad, unoptimized, simplified on a share) against
central differences, with inputs and globals unchanged and no result aliasing them. The long
run is ``python -m tests.fuzz --minutes 30``; it reduces each failure to a reproducer.
"""

from __future__ import annotations

import pytest
from fuzz.campaign import class_of
from fuzz.runner import Worker
from fuzz.statements import generate

SEEDS = range(100_000, 100_000 + 160)
CHUNKS = 8


@pytest.fixture(scope="module")
def worker():
    worker = Worker()
    yield worker
    worker.stop()


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_random_programs_are_right_in_every_mode(worker, chunk):
    failures = []
    for seed in SEEDS[chunk::CHUNKS]:
        program = generate(seed)
        outcome = worker.check(program, timeout=120)
        if outcome.failures:
            first = outcome.failures[0]
            failures.append(
                f"seed {seed} ({class_of(first)}): {first}\n{program.render()}\n"
                f"reproduce and reduce: python -m tests.fuzz --seed {seed} --programs 1"
            )
    assert not failures, "\n\n".join(failures[:3]) + f"\n\n{len(failures)} programs failed"
