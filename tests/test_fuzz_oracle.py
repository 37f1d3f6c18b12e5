"""The fuzzer's own parts can fail: the oracle catches a wrong derivative and a hang, the reducer
keeps the failure while it shrinks, the grammar only writes programs that run."""

from __future__ import annotations

import numpy as np
from fuzz import oracle
from fuzz.campaign import class_of
from fuzz.program import Block, Function, Program, Return, Simple, Text
from fuzz.reduce import reduce
from fuzz.runner import Worker
from fuzz.statements import generate
from s2sgrad.runtime import registry

import s2sgrad as sg

WRONG_RULE = """
import s2sgrad as sg


@sg.custom_gradient
def square(x):
    def backward(g):
        return g * 3.0 * x  # the right adjoint is g * 2 x

    return x * x, backward
"""


def function(header: str, line: str) -> Function:
    """A helper of one line (a decorator may lead its header)."""
    return Function(header, [Simple(Text.plain(line))])


# a primitive whose rules say 3 where its derivative is 2
twice = [
    function("@sg.primitive\ndef twice(x):", "return 2.0 * x"),
    function("@sg.register_vjp(twice)\ndef twice_vjp(g, ans, x):", "return g * 3.0"),
    function("@sg.register_jvp(twice)\ndef twice_jvp(tangents, ans, x):", "return 3.0"),
]


def _program(body: list[str], header: str = "def f(x):") -> Program:
    statements = [Simple(Text.plain(line)) for line in body]
    return Program([WRONG_RULE], [], Function(header, statements), [("x", "S")], "S", seed=3)


def test_the_oracle_reports_a_wrong_gradient(tmp_path):
    outcome = oracle.check(_program(["return square(x) + x"]), tmp_path, ("grad", "vjp"))
    assert outcome.status == "failed"
    assert [failure.kind for failure in outcome.failures] == ["wrong", "wrong"]


def test_the_oracle_passes_a_right_gradient(tmp_path):
    outcome = oracle.check(_program(["return x * x + np.sin(x)"]), tmp_path)
    assert outcome.status == "ok", [str(f) for f in outcome.failures]


def test_a_steep_hessian_is_told_with_a_finer_step(tmp_path):
    # second differences at h=1e-4 move 1e5 x by 10 radians: they said -5e6 sin(1e5 x) where
    # the Hessian is -1e8 sin(1e5 x), and the oracle reported s2sgrad's right Hessian as wrong
    # (fuzz seed 3305595: np.sin of values near 1e5)
    program = _program(["return 1e-2 * np.sin(1e5 * x)"])
    outcome = oracle.check(program, tmp_path, ("hessian", "hvp", "grad_of_grad"))
    assert outcome.status == "ok", [str(f) for f in outcome.failures]
    x = 0.3
    hess, _ = oracle.second_differences(lambda x: 1e-2 * np.sin(1e5 * x), (x,), 0)
    assert abs(hess - (-1e8 * np.sin(1e5 * x))) < 1e-3 * 1e8


def test_a_hessian_no_step_can_tell_leaves_second_order_unchecked(tmp_path):
    # 1e7 x turns by a radian even at the smallest step: no reference, so no verdict either way
    hess, noise = oracle.second_differences(lambda x: 1e-5 * np.sin(1e7 * x), (0.3,), 0)
    assert hess is None and noise == np.inf
    outcome = oracle.check(_program(["return 1e-5 * np.sin(1e7 * x) + x * x"]), tmp_path)
    assert outcome.status == "first order only", [str(f) for f in outcome.failures]
    assert "grad" in outcome.modes and not set(outcome.modes) & set(oracle.SECOND_ORDER)


def test_a_difference_step_across_a_kink_is_refined(tmp_path):
    # (1e5 x) % 2.0 is 0.05 from its jump, past the margin the oracle keeps in the kink's own
    # units, and a step of 1e-6 in x moves it by 0.1: central differences measured the jump,
    # and the oracle reported s2sgrad's right gradient as wrong (fuzz seed 3601383: an
    # operand of % a thousand times as sensitive as the input)
    src = "return 1e-2 * ((1e5 * x) % 2.0) + np.tanh(x)"
    line = Text(src, "return 1e-2 * _mod(1e5 * x, 2.0) + np.tanh(x)")
    main = Function("def f(x):", [Simple(line)])
    program = Program([WRONG_RULE], [], main, [("x", "S")], "S", seed=3)
    module = oracle.load(program.render(), tmp_path)
    x = (2 * 15000 + 1.95) / 1e5
    rng = np.random.default_rng(0)
    ref = oracle.reference(program, module, module.f, (x,), rng, oracle._twin(program))
    assert abs(float(ref.jac[0]) - (1e3 + 1 / np.cosh(x) ** 2)) < 1e-3
    if ref.hess is not None:  # (or unchecked, where no step is both fine and exact enough)
        assert abs(float(ref.hess) - (-2 * np.tanh(x) / np.cosh(x) ** 2)) < 0.05


def test_a_check_twin_computing_another_function_is_an_invalid_program(tmp_path):
    # ``3.0 * (x) % 2.0`` is ``(3.0 * x) % 2.0``; the twin's ``3.0 * _mod(x, 2.0)`` is not:
    # finite differences of the twin judged s2sgrad's right gradient wrong (fuzz seed 3706352)
    line = Text("return 3.0 * (x) % 2.0 + x", "return 3.0 * _mod(x, 2.0) + x")
    main = Function("def f(x):", [Simple(line)])
    program = Program([WRONG_RULE], [], main, [("x", "S")], "S", seed=3)
    outcome = oracle.check(program, tmp_path, ("grad",))
    assert [(f.kind, f.detail.split(":")[0]) for f in outcome.failures] == [
        ("invalid", "TwinMismatch")
    ]


def test_the_reducer_keeps_the_failure_and_drops_the_rest(tmp_path):
    body = ["a = np.sin(x)", "b = a * 2.0", "c = square(x)", "d = b + 1.0", "return c + d"]
    program = _program(body)
    signature = ("grad", "wrong")

    def still_fails(candidate) -> bool:
        outcome = oracle.check(candidate, tmp_path, ("grad",))
        return any((f.mode, f.kind) == signature for f in outcome.failures)

    small = reduce(program, still_fails)
    lines = [s.text.src for s in small.main.body]
    assert "c = square(x)" in lines and len(lines) < len(body), lines


def test_a_hang_is_a_result():
    loop = Block(Text.plain("while x > -10.0:"), [Simple(Text.plain("x = x + 0.0"))])
    program = Program(
        [WRONG_RULE],
        [],
        Function("def f(x):", [loop, Simple(Text.plain("return x"))]),
        [("x", "S")],
        "S",
        seed=1,
    )
    worker = Worker()
    try:
        outcome = worker.check(program, ("grad",), timeout=3)
    finally:
        worker.stop()
    assert [failure.kind for failure in outcome.failures] == ["hang"]


def test_generated_programs_run(tmp_path):
    # (3630823: a list grown in a nested loop; 3905557: a row scaled after the loop's body
    # rebound its name to np.diag's read-only view)
    for seed in [*range(200), 3630823, 3905557]:
        # (from a file: a program's own gradient rules are read from their source; forgotten
        # afterwards, as the oracle forgets them)
        with registry.scratch():
            module = oracle.load(generate(seed).render(), tmp_path)
            kinds = [kind for _, kind in generate(seed).params]
            record = np.full(3, 0.3)
            values = {
                "S": 0.3,
                "V": record,
                "R": module.Rec(0.3, record),
                "RD": module.RecD(0.3, record),
                "X": np.full((3, 3), 0.3),
            }
            module.f(*[values[kind] for kind in kinds])


def test_a_loop_inside_one_that_may_not_append_may_not_either():
    """An append in a nested loop made a list longer in the outer body's next iteration,
    where a statement had read it at the length it knew (``GV * L2``: an invalid program,
    fuzz seed 3630823)."""
    from fuzz.grammar import Loop
    from fuzz.statements import ProgramGenerator

    fixed = Loop(trips=3, exits=True, grows=False)
    assert not ProgramGenerator.may_grow(fixed, exits=False)
    assert ProgramGenerator.may_grow(Loop(trips=3, exits=False, grows=True), exits=False)
    assert ProgramGenerator.may_grow(None, exits=False)
    assert not ProgramGenerator.may_grow(None, exits=True)


def test_a_refusal_pointing_into_generated_code_is_a_crash():
    # a second-order mode transforms the code the first order generated: a refusal located
    # there is the compiler failing on its own output, no answer to the program's author, and
    # the oracle counted it as a clear refusal (a hessian through a callee's loop writing
    # y[i] in a branch: "no gradient registered for dy_3[...] ... (used at <s2sgrad ...>)")
    inside = [
        sg.TransformError("'y' is written into here", "<s2sgrad dfdx (guarded) #7>", 27, 8),
        LookupError("no gradient registered for dy_3[...] (used at <s2sgrad _fwd_g #1>:62:13)"),
    ]
    placed = [
        sg.TransformError("'y' is written into here", "/tmp/fuzz_program_1_2.py", 5, 4),
        LookupError("no gradient registered for numpy.interp (used at /tmp/p.py:3:12)"),
        LookupError("no gradient registered for numpy.fft.fft"),
    ]
    assert all(oracle._refused_inside_generated_code(error) for error in inside)
    assert not any(oracle._refused_inside_generated_code(error) for error in placed)
    failure = oracle.Failure("hessian", "crash", f"{oracle.REFUSED_INSIDE}LookupError: x", "")
    assert class_of(failure)[:2] == ("crash", "refused inside generated code")


def test_the_mixed_second_derivative_is_checked_against_second_differences(tmp_path):
    # d/dw of the gradient in x: generated code transformed again with respect to a value
    # the first transform held constant (a mode of its own; the others differentiate twice
    # with respect to the same argument)
    block, noise = oracle.second_differences(lambda x, w: x**2 * w**3, (0.5, 1.2), 0, 1)
    assert abs(float(block) - 2 * 0.5 * 3 * 1.2**2) < 1e-6 and noise < 1e-6
    vector, _ = oracle.second_differences(
        lambda x, w: np.sum(x * w**2), (np.ones(3), np.array([1.0, 2.0, 3.0])), 0, 1
    )
    np.testing.assert_allclose(vector, np.diag([2.0, 4.0, 6.0]), atol=1e-6)

    def two(line):
        main = function("def f(x, w):", line)
        return Program([], twice, main, [("x", "S"), ("w", "S")], "S", seed=3)

    right = oracle.check(two("return np.sin(x * w) + x * w * w"), tmp_path)
    assert right.status == "ok", [str(f) for f in right.failures]
    assert "grad_of_grad_mixed" in right.modes
    wrong = oracle.check(two("return twice(x) * w"), tmp_path, ("grad_of_grad_mixed",))
    assert [(f.mode, f.kind) for f in wrong.failures] == [("grad_of_grad_mixed", "wrong")]


def test_the_tape_runs_the_program_on_variables_and_tells_a_constant_from_a_wrong_gradient(
    tmp_path,
):
    def one(line):
        return Program([], twice, function("def f(x):", line), [("x", "S")], "S", seed=3)

    right = oracle.check(one("return np.sin(x) * x + np.sum(np.stack([x, x * x]))"), tmp_path)
    assert right.status == "ok" and "tape" in right.modes, [str(f) for f in right.failures]
    wrong = oracle.check(one("return twice(x) + x"), tmp_path, ("tape",))
    assert [(f.mode, f.kind) for f in wrong.failures] == [("tape", "wrong")]
    # a list of Tensors given to NumPy is a constant to the tape (and s2sgrad warns): a
    # refusal the program made, not a wrong gradient
    left = oracle.check(one("return np.sum([x * x, x]) + x"), tmp_path, ("tape",))
    assert [(f.mode, f.kind) for f in left.failures] == [("tape", "rejected")]
    assert "LeftTheTape" in left.failures[0].detail


def test_has_aux_returns_the_value_and_an_aux_at_every_return_and_checks_both(
    tmp_path, monkeypatch
):
    # f rendered returning (value, aux) at each of its own returns (not at those of the
    # functions defined inside it): the value is differentiated, the aux must come back as f
    # computed it, from sg.value_and_grad and sg.grad alike
    def returning(last: str) -> Program:
        early = Text.plain("x * 3.0")
        body = [
            Block(Text.plain("def inner(u):"), [Simple(Text.plain("return u * u"))]),
            Block(Text.plain("if x > 5.0:"), [Return(early.map("return {}"), early)]),
            Return(Text.plain(last).map("return {}"), Text.plain(last)),
        ]
        return Program([], twice, Function("def f(x):", body), [("x", "S")], "S", seed=3)

    program = returning("np.sin(x) * inner(x)")
    source = program.render(aux=True)
    assert 'return x * 3.0, {"twice": (x * 3.0) * 2.0, "tag": "aux"}' in source
    assert "        return u * u\n" in source  # a function of its own: no aux
    right = oracle.check(program, tmp_path)
    assert right.status == "ok" and "has_aux" in right.modes, [str(f) for f in right.failures]
    wrong = oracle.check(returning("twice(x) + x"), tmp_path, ("has_aux",))
    assert [(f.mode, f.kind) for f in wrong.failures] == [("has_aux", "wrong")]

    real = sg.grad

    def aux_changed(f, wrt=0, *, has_aux=False):
        gradient = real(f, wrt=wrt, has_aux=has_aux)
        return lambda *args: (gradient(*args)[0], {"twice": 0.0, "tag": "aux"})

    monkeypatch.setattr(oracle.sg, "grad", aux_changed)
    changed = oracle.check(program, tmp_path, ("has_aux",))
    assert [(f.mode, f.kind) for f in changed.failures] == [("has_aux", "wrong")]
    assert "aux" in changed.failures[0].detail


def test_writing_into_np_asarray_of_a_variable_is_the_tapes_refusal(tmp_path):
    # np.asarray(t) is a read-only view (it was the Tensor's buffer, and writing it changed
    # what the tape recorded): the tape modes' warning, then NumPy's read-only ValueError
    body = ["y = np.asarray(x)", "y[0] = 2.0", "return np.sum(y * x)"]
    statements = [Simple(Text.plain(line)) for line in body]
    function = Function("def f(x):", statements)
    program = Program([WRONG_RULE], [], function, [("x", "V")], "S", seed=3)
    outcome = oracle.check(program, tmp_path, ("tape",))
    assert [failure.kind for failure in outcome.failures] == ["rejected"], outcome.failures
