"""The sympy pass (`simplify=True`): fewer statements where a chain collapses, the same values
as without it (hypothesis, on random elementwise programs), shapes kept under broadcasting, and
code sympy cannot represent left as it was."""

from __future__ import annotations

import importlib.util
import itertools
import math
import textwrap

import libcst as cst
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numerical import numerical_gradient, numerical_jacobian
from s2sgrad.transforms.codegen import Parenthesize
from s2sgrad.transforms.simplify import simplify

import s2sgrad as sg


def sigmoid_weighted(x):
    return x**2 * np.sin(x) / (1 + np.exp(-x))


def scalar_chain(x, y):
    a = x * y + math.sin(x)
    b = math.exp(-0.5 * a) + math.log(1.0 + x * x)
    return a * b - math.cos(y) * b


def rational_chain(x, y):
    c = math.sqrt(y * y + 1.0) * math.tanh(x)
    return x / (1.0 + c * c) + 3.0 * c


def broadcast_cancel(x, y):
    return np.sum(x - x + y * 2.0 - y)


def _statements(source: str, entry: str) -> int:
    module = cst.parse_module(source.split("\n\n# ")[0])
    funcdef = next(
        s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == entry
    )
    return len(funcdef.body.body)


def test_readme_example_gets_shorter_and_agrees():
    plain = sg.grad(sigmoid_weighted)
    simple = sg.grad(sigmoid_weighted, simplify=True)
    x = np.linspace(-4.0, 4.0, 101)
    np.testing.assert_allclose(simple(x), plain(x), rtol=1e-12, atol=1e-12)
    assert simple(0.7) == pytest.approx(plain(0.7), rel=1e-13)
    before, after = sg.source(plain, x), sg.source(simple, x)
    assert _statements(after, "dsigmoid_weighteddx") < _statements(before, "dsigmoid_weighteddx")
    assert "# adjoint of line" in after  # the source comments survive


def test_scalar_code_keeps_math_functions():
    df = sg.grad(scalar_chain, wrt=("x", "y"), simplify=True)
    source = sg.source(df, 0.3, -1.2)
    assert "math." in source and "np." not in source.split("def ")[1]
    expected = sg.grad(scalar_chain, wrt=("x", "y"))(0.3, -1.2)
    assert df(0.3, -1.2) == pytest.approx(expected, rel=1e-12)
    assert all(type(v) is float for v in df(0.3, -1.2))


def test_a_cancelled_name_keeps_its_broadcasting():
    x = np.arange(6.0).reshape(2, 3)
    y = np.array([[1.0], [2.0]])
    for args in ((x, y), (x, 3.0)):
        plain = sg.grad(broadcast_cancel, wrt=("x", "y"))(*args)
        simple = sg.grad(broadcast_cancel, wrt=("x", "y"), simplify=True)(*args)
        for a, b in zip(plain, simple, strict=True):
            assert np.shape(a) == np.shape(b)
            np.testing.assert_allclose(a, b, rtol=1e-12)


def _run(function_source: str, name: str, *args):
    namespace = {"np": np, "math": math}
    exec(function_source, namespace)
    return namespace[name](*args)


def _simplified(source: str, scalars: frozenset[str] = frozenset()) -> str:
    funcdef = cst.parse_module(textwrap.dedent(source)).body[0]
    simplified = simplify(funcdef, scalars=scalars)
    return cst.Module(body=(simplified.visit(Parenthesize()),)).code


def _central_differences(f, args: tuple, h: float = 1e-6) -> list[float]:
    slopes = []
    for i in range(len(args)):
        up, down = list(args), list(args)
        up[i] += h
        down[i] -= h
        slopes.append((f(*up) - f(*down)) / (2 * h))
    return slopes


def test_pass_leaves_what_sympy_cannot_represent():
    source = """
    def f(x, c):
        a = x * 2.0 + x * 3.0
        b = a if c else -a
        print(b)
        m = b > 0
        d = np.random.normal(size=np.shape(x)) * 0.0 + a * 1.0
        return b, m, d
    """
    out = _simplified(source)
    assert "b = a if c else -a" in out and "print(b)" in out and "m = b > 0" in out
    assert "np.random.normal(" in out  # not pure: never moved, merged or dropped
    assert "a = 5.0 * x" in out


def lists_joined_in_order(w):
    pieces = [1.5 * w, np.cumsum(w) * 0.5]
    pieces = [w * w] + pieces  # noqa: RUF005 (a join: not pieces + [w * w])
    return np.sum(np.cross(w, pieces[2])) + np.sum(pieces[0] * pieces[1])


def test_a_join_of_lists_keeps_its_order():
    """``+`` of two lists joins them; sympy's ``+`` commutes. The pass knows which values
    may be lists and keeps arithmetic reading one as written (it wrote ``pieces + [w * w]``,
    and the gradient was silently wrong: fuzz seed 3000088)."""
    w = np.array([0.3, -0.8, 0.5])
    expected = numerical_jacobian(lists_joined_in_order, w)
    got = sg.grad(lists_joined_in_order, simplify=True)(w)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def squares_of_split_pieces(w):
    sums = [np.sum(np.square(np.split(w, 3))) for _ in w]
    return sums[-1] * w[0]


def test_a_function_of_a_list_is_not_rewritten_as_arithmetic_of_it():
    """``np.square(pieces)`` is no ``pieces * pieces`` when `pieces` is a list (TypeError in
    the simplified gradient: fuzz seed 3101700)."""
    w = np.array([0.3, -0.8, 0.5])
    expected = numerical_jacobian(squares_of_split_pieces, w)
    got = sg.grad(squares_of_split_pieces, simplify=True)(w)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def squares_of_a_row_of_a_list_of_lists(y):
    rows = [[np.sum(GV_ROW), 0.1 * GV_ROW[-1], y], [1.25, np.sum(GV_ROW), np.median(GV_ROW)]]
    s = np.var(rows[0]) + np.sum(np.square(rows[1]) * y)
    c = np.full(3, 0.5)
    return np.tensordot(np.diag(np.outer(c, c)), np.full(3, fill_value=s), axes=1)


GV_ROW = np.array([0.5, -1.0, 0.25])


def test_a_function_of_an_item_of_a_list_of_lists_is_not_rewritten_as_arithmetic_of_it():
    """``rows[1]`` of a list of lists is a list: ``np.square(rows[1])`` is no
    ``rows[1] * rows[1]`` (TypeError in the simplified gradient: fuzz seed 3610859)."""
    for y in (0.3, -1.1):
        expected = numerical_jacobian(squares_of_a_row_of_a_list_of_lists, y)
        got = sg.grad(squares_of_a_row_of_a_list_of_lists, simplify=True)(y)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def squashed_after_a_loop(v, y, w):
    for _ in reversed(range(3)):
        y /= 1.0 + (np.sum(0.5 * w)) ** 2
    y *= np.tanh(y)
    return y / (1.0 + y**2)


def test_forms_sympy_factors_over_the_complex_numbers_are_not_chosen():
    """sympy.simplify wrote (y**2 * t**2 + 1)**2 as (I*y*t - 1)**2 * (I*y*t + 1)**2: a crash
    in the pass's cost (TypeError: Cannot convert complex to float, fuzz seed 3704449), and
    code computing with complex numbers had it been chosen."""
    v, w = np.array([0.1, 0.2, 0.3]), np.array([0.5, -0.3, 0.8])
    for y in (0.4, -1.3):
        got = sg.grad(squashed_after_a_loop, wrt=(1, 2), simplify=True)(v, y, w)
        for index, part in zip((1, 2), got, strict=True):
            expected = numerical_gradient(squashed_after_a_loop, (v, y, w), index)
            assert np.isrealobj(part)
            np.testing.assert_allclose(part, expected, rtol=1e-6, atol=1e-9)


def test_pass_never_aliases_an_array_written_in_place():
    source = """
    def f(y):
        b = y * 1.0
        y[0] = 5.0
        return b
    """
    out = _simplified(source)
    assert _run(out, "f", np.ones(3))[0] == 1.0


def test_pass_keeps_loop_carried_values():
    source = """
    def f(x, n):
        s = 0.0
        t = 1.0
        for i in range(n):
            u = t * 2.0
            t = u + x
            s = s + t
        return s
    """
    out = _simplified(source)
    assert _run(out, "f", 0.5, 4) == _run(textwrap.dedent(source), "f", 0.5, 4)


# -- random elementwise programs ------------------------------------------------------------

_UNARY = ["np.sin({})", "np.cos({})", "np.exp(-{})", "np.tanh({})", "np.log(1.5 + {} * {})"]
_BINARY = ["{} + {}", "{} - {}", "{} * {}", "{} / (2.0 + {} * {})", "({}) ** 2"]
_counter = itertools.count()


@st.composite
def programs(draw):
    """Straight-line elementwise programs over x and y, each line reading earlier values."""
    names = ["x", "y"]
    lines = []
    for i in range(draw(st.integers(2, 6))):
        if draw(st.booleans()):
            template = draw(st.sampled_from(_UNARY))
            arg = draw(st.sampled_from(names))
            expr = template.format(arg, arg)
        else:
            template = draw(st.sampled_from(_BINARY))
            a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
            expr = template.format(a, b, b) if template.count("{}") == 3 else template.format(a, b)
        factor = draw(st.sampled_from(["", "0.5 * ", "3.0 * "]))
        lines.append(f"v{i} = {factor}{expr}")
        names.append(f"v{i}")
    lines.append(f"return np.sum({names[-1]} * {draw(st.sampled_from(names))})")
    return lines


def _module(tmp_path, lines: list[str]):
    name = f"simplify_program_{next(_counter)}"
    path = tmp_path / f"{name}.py"
    body = "\n".join(f"    {line}" for line in lines)
    path.write_text(f"import numpy as np\n\n\ndef f(x, y):\n{body}\n")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    lines=programs(),
    x=st.lists(st.floats(-2.0, 2.0), min_size=3, max_size=3),
    y=st.floats(-2.0, 2.0),
)
def test_simplified_agrees_with_unsimplified(tmp_path, lines, x, y):
    f = _module(tmp_path, lines)
    args = (np.array(x), y)
    plain = sg.grad(f, wrt=("x", "y"))
    simple = sg.grad(f, wrt=("x", "y"), simplify=True)
    with np.errstate(all="ignore"):
        expected, got = plain(*args), simple(*args)
        for a, b in zip(expected, got, strict=True):
            assert np.shape(a) == np.shape(b)
            np.testing.assert_allclose(b, a, rtol=1e-7, atol=1e-9)
        # the float specialization too
        floats = (float(x[0]), y)
        expected, got = plain(*floats), simple(*floats)
        np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-9)


def test_readme_example_folds_into_three_statements():
    source = sg.source(sg.grad(sigmoid_weighted, simplify=True), np.zeros(3))
    assert _statements(source, "dsigmoid_weighteddx") <= 3
    assert "return dx" not in source  # the adjoint moved into the return


def test_whole_numbers_stay_integers_where_the_value_may_be_an_integer():
    source = """
    def f(x, i):
        j = i * 2 + 1
        a = math.sin(x) * 2
        b = a * 3 + j
        return b, j
    """
    out = _simplified(source)
    b, j = _run(out, "f", 0.5, 3)
    assert type(j) is int and j == 7
    assert b == pytest.approx(math.sin(0.5) * 6 + 7, rel=1e-15)


def test_safe_divide_keeps_its_zero_where_the_divisor_may_be_zero():
    from s2sgrad.runtime import safe_divide

    source = """
    def f(g, y):
        a = g * 2.0
        b = safe_divide(a, y)
        c = safe_divide(a, 1.0 + np.exp(y))
        return b * 3.0 + c
    """
    out = _simplified(source)
    assert "safe_divide(" in out  # b's divisor may be 0
    namespace = {"np": np, "math": math, "safe_divide": safe_divide}
    exec(out, namespace)
    assert namespace["f"](0.0, 0.0) == 0.0
    assert namespace["f"](1.5, 2.0) == pytest.approx(4.5 + 3.0 / (1.0 + math.exp(2.0)))


def test_an_adjoint_another_one_is_written_with_stays_defined():
    """Simplification may write dy in terms of dx (dv1 is -dx); dx is then read twice and
    must stay an assignment rather than move into the return (found by hypothesis)."""
    import passes_input

    x, y = np.array([-0.9, -0.3, 0.2]), 3e-141
    plain = sg.grad(passes_input.shared_difference, wrt=("x", "y"))(x, y)
    simple = sg.grad(passes_input.shared_difference, wrt=("x", "y"), simplify=True)(x, y)
    for got, want in zip(simple, plain, strict=True):
        np.testing.assert_allclose(got, want)


def test_safe_divide_by_a_name_bounded_away_from_zero_is_a_division():
    """``q = c * c + 1.0`` is at least 1, so ``safe_divide(g, q)`` is ``g / q`` and folds with
    the arithmetic around it (no helper call left)."""
    from s2sgrad.runtime import safe_divide

    source = """
    def f(g, c):
        q = c * c + 1.0
        r = safe_divide(g, q)
        return r * c + r, q
    """
    out = _simplified(source)
    assert "safe_divide(" not in out
    namespace = {"np": np, "math": math, "safe_divide": safe_divide}
    exec(out, namespace)
    for g, c in ((0.0, 0.0), (1.5, 0.0), (-2.0, 3.0), (0.0, 1e200)):
        r, q = namespace["f"](g, c)
        assert q == c * c + 1.0
        assert r == pytest.approx(g / (c * c + 1.0) * (c + 1.0), rel=1e-14)
    c = np.array([-1.0, 0.0, 2.0])
    r, _ = namespace["f"](np.array([1.0, 0.0, -3.0]), c)
    np.testing.assert_allclose(r, np.array([1.0, 0.0, -3.0]) / (c * c + 1.0) * (c + 1.0))


def test_cheap_scalar_temporaries_are_recomputed_where_read():
    """On numbers, ``u = x * y`` read twice is written at both readers; ``math.sin(x)`` is
    never computed twice, and on arrays (no scalars known) ``u`` stays a temporary."""
    source = """
    def f(x, y):
        u = x * y
        s = math.sin(x)
        a = math.exp(u) * s
        b = math.cos(u) - s
        return a, b
    """
    on_numbers = _simplified(source, scalars=frozenset({"x", "y"}))
    assert "u =" not in on_numbers
    assert on_numbers.count("math.sin(") == 1
    on_arrays = _simplified(source)
    assert "u = x * y" in on_arrays
    for x, y in ((0.3, -1.2), (2.0, 0.5)):
        expected = (math.exp(x * y) * math.sin(x), math.cos(x * y) - math.sin(x))
        assert _run(on_numbers, "f", x, y) == pytest.approx(expected, rel=1e-14)
        assert _run(on_arrays, "f", x, y) == pytest.approx(expected, rel=1e-14)


def test_scalar_gradient_without_safe_divide_is_shorter_and_right():
    """The divisor ``1.0 + c * c`` cannot be 0, so the gradient divides directly (the default
    reverse pass already sees it: transforms/signs.py), and the simplified one recomputes its
    cheap temporaries: fewer statements, same derivatives."""
    plain = sg.grad(rational_chain, wrt=("x", "y"))
    simple = sg.grad(rational_chain, wrt=("x", "y"), simplify=True)
    entry = "drational_chaindx_y"
    before, after = sg.source(plain, 0.4, -0.8), sg.source(simple, 0.4, -0.8)
    assert "safe_divide(" not in before and "safe_divide(" not in after.split("def ")[1]
    assert _statements(after, entry) < _statements(before, entry)
    for args in ((0.4, -0.8), (-1.3, 2.1), (0.0, 0.0)):
        got = simple(*args)
        assert got == pytest.approx(plain(*args), rel=1e-12, abs=1e-14)
        assert got == pytest.approx(_central_differences(rational_chain, args), rel=1e-6)
