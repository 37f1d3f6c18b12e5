"""Pass-level tests: before/after text for each pass plus a run-it check of its output."""

import inspect
import re
import traceback

import libcst as cst
import numpy as np
import passes_input
import pytest
from s2sgrad.transforms import codegen
from s2sgrad.transforms.anf import normalize
from s2sgrad.transforms.fence import fence
from s2sgrad.transforms.naming import Namer
from s2sgrad.transforms.optimize import optimize
from s2sgrad.transforms.parse import parse_function
from s2sgrad.transforms.pipeline import GradSpec, analyze
from s2sgrad.transforms.resolve import resolve

import s2sgrad as sg


def code(node) -> str:
    return cst.Module(body=(node.visit(codegen.Parenthesize()),)).code


def body_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()[1:] if line.strip()]


def normal_form(fn):
    parsed = fence(parse_function(fn))
    resolution = resolve(parsed, fn)
    return normalize(parsed, resolution, Namer(resolution.locals)), resolution


def run(funcdef, namespace, *args):
    source = code(funcdef)
    scope = {"np": np, **namespace}
    exec(compile(source, "<test>", "exec"), scope)
    return scope[funcdef.name.value](*args)


def test_normal_form_one_operation_per_line_and_single_assignment():
    nf, resolution = normal_form(passes_input.five_lines)
    first = inspect.getsourcelines(passes_input.five_lines)[1]
    assert body_lines(code(nf.funcdef)) == [
        f"# line {first + 1}: h = np.tanh(x * w)",
        "_t1 = x * w",
        "h = np.tanh(_t1)",
        f"# line {first + 2}: h += 0.5 * x",
        "_t2 = 0.5 * x",
        "h_1 = h + _t2",
        f"# line {first + 3}: out = h**2 - onp.exp(-x)",
        "_t3 = h_1**2",
        "_t4 = -x",
        "_t5 = np.exp(_t4)",
        "out = _t3 - _t5",
        f"# line {first + 4}: return np.sum(out)",
        "_t6 = np.sum(out)",
        "return _t6",
    ]
    x, w = np.linspace(0.1, 1, 4), np.linspace(1, 2, 4)
    assert run(nf.funcdef, resolution.namespace(), x, w) == pytest.approx(
        passes_input.five_lines(x, w)
    )


def test_resolve_spells_numpy_aliases_canonically():
    nf, resolution = normal_form(passes_input.aliases)
    text = code(nf.funcdef)
    assert "np.sin(x)" in text and "np.cos(x)" in text and "np.pi" in text
    statements = [line for line in body_lines(text) if not line.startswith("#")]
    assert not any("onp" in line for line in statements)
    assert run(nf.funcdef, resolution.namespace(), 0.3) == pytest.approx(passes_input.aliases(0.3))


def parse_def(text: str) -> cst.FunctionDef:
    return cst.parse_module(text).body[0]


def test_optimize_propagates_folds_inlines_and_removes_dead_code():
    before = parse_def(
        "def f(x):\n"
        "    _t1 = np.sin(x)\n"
        "    unused = x * 3\n"
        "    _dt2 = 1.0\n"
        "    _t3 = _dt2 * 2 * x ** (2 - 1)\n"
        "    dx = _t3 * _t1 + 0\n"
        "    return dx\n"
    )
    after = optimize(before)
    assert body_lines(code(after)) == ["dx = 2.0 * x * np.sin(x)", "return dx"]
    assert run(after, {}, 0.4) == pytest.approx(run(before, {}, 0.4))


def test_optimize_keeps_in_place_updates_and_their_order():
    before = parse_def(
        "def f(x, g):\n"
        "    dx = np.zeros_like(x)\n"
        "    _t1 = g * 2.0\n"
        "    dx[1:] += _t1\n"
        "    dx[:-1] += g\n"
        "    return dx\n"
    )
    after = optimize(before)
    x, g = np.arange(4.0), np.ones(3)
    np.testing.assert_array_equal(run(after, {}, x, g), run(before, {}, x, g))
    assert "dx[1:] += 2.0 * g" in code(after)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(a + b) * c", "(a + b) * c"),
        ("a + (b * c)", "a + b * c"),
        ("a - (b - c)", "a - (b - c)"),
        ("(a - b) - c", "a - b - c"),
        ("(-a) ** 2", "(-a) ** 2"),
        ("-(a ** 2)", "-a**2"),
        ("a ** (-b)", "a**-b"),
        ("(a ** b) ** c", "(a**b) ** c"),
        ("(a + b).sum()", "(a + b).sum()"),
        ("f((a + b))", "f(a + b)"),
        ("-(a * b)", "-(a * b)"),
    ],
)
def test_parenthesize_keeps_only_needed_parentheses(text, expected):
    expr = cst.parse_expression(text)
    stripped = expr.visit(_StripParens())
    rendered = cst.Module(()).code_for_node(cst.Expr(stripped).visit(codegen.Parenthesize()))
    assert rendered == expected
    values = {"a": np.float64(1.5), "b": np.float64(2.5), "c": np.float64(0.5), "f": abs}
    assert eval(rendered, values) == pytest.approx(eval(text, values))


class _StripParens(cst.CSTTransformer):
    """Drops every parenthesis, as passes that build expressions do."""

    def on_leave(self, original, updated):
        if hasattr(updated, "lpar") and not isinstance(updated, cst.Tuple):
            return updated.with_changes(lpar=(), rpar=())
        return updated


def test_generated_source_is_readable():
    df = sg.grad(passes_input.five_lines)
    text = sg.source(df, 0.5, 2.0)
    body = text[text.index("def ") :]
    first = inspect.getsourcelines(passes_input.five_lines)[1]
    assert f"# line {first + 1}: h = np.tanh(x * w)" in body
    assert f"# adjoint of line {first + 3}" in body
    assert "dh" in body and "dx" in body
    for noise in ("* 1.0", "1.0 *", "unbroadcast", "match_shape", "_dt"):
        assert noise not in body, noise
    assert not re.search(r"[+-] 0(\.0)?(?![.\d])", body)
    assert len(body.splitlines()) <= 16
    assert text.startswith('"""Generated by s2sgrad')
    assert '__all__ = ["dfive_linesdx"]' in text


def test_generated_module_imports_only_numpy_and_runtime():
    text = sg.source(sg.grad(passes_input.five_lines))
    imports = [line for line in text.splitlines() if line.startswith(("import", "from"))]
    assert all(
        line == "import numpy as np" or line.startswith("from s2sgrad.runtime import")
        for line in imports
    )


def test_scalar_specialization_is_what_a_person_writes():
    df = sg.grad(passes_input.scalar_formula, wrt=("x", "y"))
    text = sg.source(df, 0.5, 2.0)
    body = text[text.index("def ") :]
    assert "np.cos(x)" in body
    assert "unbroadcast" not in body and "match_shape" not in body
    got = df(0.5, 2.0)
    eps = 1e-6
    f = passes_input.scalar_formula
    assert got[0] == pytest.approx((f(0.5 + eps, 2.0) - f(0.5 - eps, 2.0)) / (2 * eps), rel=1e-6)


def test_tracebacks_show_generated_lines():
    df = sg.grad(passes_input.log_times)
    with pytest.raises(ValueError, match="math domain error") as info:
        df(-1.0)
    frames = traceback.extract_tb(info.tb)
    generated = [f for f in frames if f.filename.startswith("<s2sgrad dlog_timesdx")]
    assert generated and generated[-1].line.strip() != ""


def test_debug_switch_prints_every_pass(capsys):
    analysis = analyze(passes_input.scalar_formula, GradSpec(wrt=("x",)), debug=True)
    from s2sgrad.transforms.pipeline import generate_gradient

    generate_gradient(analysis, debug=True)
    err = capsys.readouterr().err
    for stage in ("parse", "normalize", "activity", "reverse", "optimize", "codegen"):
        assert f"---- after {stage} ----" in err


def test_fold_keeps_a_quotient_in_a_denominator_a_quotient():
    # regression: x / (a / b) was folded to x / (a * b)
    from s2sgrad.transforms.fold import fold

    lines, _ = fold([cst.parse_statement("y = 2 * t / (a / b - 0)")])
    folded = cst.Module(body=[line.visit(codegen.Parenthesize()) for line in lines]).code
    namespace = {"t": 3.0, "a": 8.0, "b": 2.0}
    exec(folded, namespace)
    assert namespace["y"] == 1.5, folded


def test_masks_from_two_rules_add_as_numbers_not_as_a_logical_or():
    """Each clip's adjoint is 1.0 * mask with a seed of 1.0; folded to the bare masks, their
    sum would be a logical or (1 where both clips pass the gradient, instead of 2)."""
    x = np.array([0.1, 0.25, 0.5, 0.8, 1.0])
    np.testing.assert_array_equal(sg.grad(passes_input.two_clips)(x), [0.0, 1.0, 2.0, 1.0, 0.0])


def test_a_removed_lines_comment_goes_to_the_next_kept_line_the_latest_winning():
    from s2sgrad.transforms.lines import carry_comments

    def line(text, comment=None):
        statement = cst.parse_statement(text)
        if comment is None:
            return statement
        return statement.with_changes(leading_lines=(cst.EmptyLine(comment=cst.Comment(comment)),))

    def comments(kept):
        return [[e.comment.value for e in k.leading_lines if e.comment] for k in kept]

    # two alias lines dropped in a row: the kept line belongs to the second one's source line
    decisions = [
        ("drop", line("dt2 = dt3", "# adjoint of line 9")),
        ("drop", line("d_t = dt2", "# adjoint of line 8")),
        ("keep", line("dx4 = dt3.sum(axis=0)")),
        ("keep", line("dt0 = dt1 * m", "# adjoint of line 7")),
    ]
    assert comments(carry_comments(decisions)) == [["# adjoint of line 8"], ["# adjoint of line 7"]]
    # a kept line's own comment is never replaced
    decisions = [("drop", line("a = b", "# line 3")), ("keep", line("c = a", "# line 4"))]
    assert comments(carry_comments(decisions)) == [["# line 4"]]
