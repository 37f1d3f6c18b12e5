"""Programs the differential fuzzer found wrong, reduced, kept as regression tests: each is
checked in every mode (tests/fuzz/oracle.py) against central differences."""

from __future__ import annotations

import textwrap

import pytest
from fuzz import oracle
from fuzz.program import Snippet

GLOBALS = "GV = np.array([0.5, -1.0, 0.25])\nG0 = 0.7\n"

CASES = {
    # a name first assigned in a nested loop: the inner loop's header copy read it unbound
    # before the outer loop's first iteration (UnboundLocalError with optimize=False)
    "first assigned in a nested loop": (
        """
        def f(w):
            s1 = 0.3 * np.sum(w)
            for i2, e3 in zip(GV, w):
                for i4, e5 in zip(GV, GV):
                    L7 = [np.mean(w) * e3, np.mean(w)]
                    s1 = s1 + L7[0]
            return s1
        """,
        [("w", "V")],
    ),
    # a return inside a loop: the loop's stack keeps the returned value's shape only, and
    # match_shape took that shape for a value (TypeError with optimize=False)
    "return inside a loop, unoptimized": (
        """
        def f(w):
            dx = np.full(3, 0.5)
            for i4 in w:
                return np.concatenate([(np.array(dx))[:1], (w)[1:] * 0.5])
            return (np.cumsum(w) * 0.5) / (1.0 + (w - dx[0]) ** 2)
        """,
        [("w", "V")],
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_reduced_fuzz_program_is_right_in_every_mode(name, tmp_path):
    source, params = CASES[name]
    program = Snippet(GLOBALS + textwrap.dedent(source), params)
    outcome = oracle.check(program, tmp_path, oracle.MODES)
    assert outcome.status == "ok", "\n".join(str(f) for f in outcome.failures)
