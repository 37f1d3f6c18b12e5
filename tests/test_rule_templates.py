"""Reverse-rule templates called directly, checked against finite differences and sympy.

Templates are ordinary Python functions, so ``rule.vjp(g, ans, *args, **kwargs)`` runs. For each
row of `tests/rule_table.py` and each input ``x`` the check is the inner-product identity

    <vjp(g), v>  ==  <g, (f(x + eps v) - f(x - eps v)) / (2 eps)>

for a random adjoint ``g`` and a random direction ``v``. Contributions of elementwise rules are
first reduced with `unbroadcast`, as the compiler does; every contribution must then broadcast
to its input's shape (lazily broadcast adjoints are allowed).
"""

from __future__ import annotations

import ast
import inspect
import textwrap

import numpy as np
import pytest
import sympy as sp
from rule_table import NONDIFFERENTIABLE, SYMBOLIC, SYMBOLIC_SKIPPED, TABLE
from s2sgrad.runtime import registry, unbroadcast
from s2sgrad.runtime.containers import ContainerAdjoint

from s2sgrad import runtime

EPS = 1e-6
CASES = [(row, shapes) for row in TABLE for shapes in row.shapes]


def differentiable_rules():
    return [r for r in registry if r.differentiable and r.vjp is not None]


# -- building inputs and calling templates ----------------------------------------------------


def _draw(domain, shape, rng):
    if callable(domain):
        return domain(rng, shape)
    value = rng.uniform(*domain, size=shape)
    return float(value) if shape == () else value


def make_inputs(row, shapes, rng):
    """Random inputs for one shape case (or the row's fixed `values`)."""
    if row.values is not None:
        return list(row.values)
    per_input = isinstance(row.domain, tuple) and not isinstance(row.domain[0], float)
    domains = row.domain if per_input else [row.domain] * len(shapes)
    return [_draw(d, s, rng) for d, s in zip(domains, shapes, strict=True)]


def locate(args, x):
    """Where input `x` sits in the call's positional `args`: (position,) or (position, item)."""
    for pos, arg in enumerate(args):
        if arg is x:
            return (pos,)
        if isinstance(arg, (list, tuple)):
            for item, element in enumerate(arg):
                if element is x:
                    return (pos, item)
    raise AssertionError("an input is not among the call's arguments")


def returns_tuple_literal(template) -> bool:
    """Whether the template's ``return`` is a tuple literal (one contribution per parameter)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(template)))
    ret = next(node for node in ast.walk(tree) if isinstance(node, ast.Return))
    return isinstance(ret.value, ast.Tuple)


def has_argnum(template) -> bool:
    return "argnum" in inspect.signature(template).parameters


def contribution(rule, g, ans, args, kwargs, path):
    """The template's contribution for the input at `path`, as the compiler must use it.

    An elementwise contribution is summed back to its argument's shape with
    ``unbroadcast(contribution, arg, ans)``: when ``g`` is lazily broadcast the contribution may
    be smaller than ``ans`` (``g * y`` with ``g = 1.0``), and only ``ans`` tells how many times
    the argument was repeated.
    """
    pos = path[0]
    if has_argnum(rule.vjp):
        out = rule.vjp(g, ans, *args, argnum=pos, **kwargs)
    else:
        out = rule.vjp(g, ans, *args, **kwargs)
        if returns_tuple_literal(rule.vjp):
            out = out[pos]
        else:
            assert pos == 0, "a single-expression template only covers its first parameter"
    if len(path) == 2:
        out = out[path[1]]
    if rule.elementwise:
        out = unbroadcast(out, args[pos], ans)
    return out


def _inner(a, b) -> float:
    if isinstance(b, list):  # a primitive returning a list (np.split): its pieces
        return sum(_inner(x, y) for x, y in zip(a, b, strict=True))
    return float(np.real(np.sum(np.asarray(a) * np.asarray(b))))  # Re(sum(g * dz))


def _difference(plus, minus):
    if isinstance(plus, list):
        return [_difference(p, m) for p, m in zip(plus, minus, strict=True)]
    return (np.asarray(plus) - minus) / (2 * EPS)


def _random_like(value, rng):
    if isinstance(value, list):
        return [_random_like(v, rng) for v in value]
    return rng.standard_normal(np.shape(value))


def check_row(row, shapes, seed, lazy_g=False):
    rng = np.random.default_rng(seed)
    rule = registry.lookup(row.primitive)
    inputs = make_inputs(row, shapes, rng)
    args = row.args(*inputs)
    ans = row.primitive(*args, **row.kwargs)
    value = row.call(*inputs)
    g = 1.0 if lazy_g else _random_like(value, rng)
    g_full = np.ones(np.shape(value)) if lazy_g else g
    if row.output is not None and rule.output is None:  # one piece of a list result is used
        g = ContainerAdjoint({row.output: g})
    for i, x in enumerate(inputs):
        path = locate(args, x)
        if row.argnums is not None and path[0] not in row.argnums:
            continue
        contrib = contribution(rule, g, ans, args, row.kwargs, path)
        assert contrib is not None, f"{row.id}: no contribution for input {i}"
        contrib = np.broadcast_to(contrib, np.shape(x))  # raises if it does not fit the input
        v = rng.standard_normal(np.shape(x))
        plus = list(inputs)
        minus = list(inputs)
        plus[i] = x + EPS * (v if np.ndim(x) else float(v))
        minus[i] = x - EPS * (v if np.ndim(x) else float(v))
        numeric = _inner(g_full, _difference(row.call(*plus), row.call(*minus)))
        analytic = _inner(contrib, v)
        scale = max(1.0, abs(numeric), abs(analytic))
        assert abs(numeric - analytic) <= row.tol * scale, (
            f"{row.id} shapes={shapes} input {i}: vjp gives {analytic}, "
            f"finite differences {numeric}"
        )


# -- the table covers the registry ------------------------------------------------------------


def test_every_differentiable_rule_has_a_row():
    covered = {id(row.primitive) for row in TABLE}
    missing = [r.name for r in differentiable_rules() if id(r.primitive) not in covered]
    assert not missing, f"rules without a row in tests/rule_table.py: {missing}"


def test_every_row_has_a_rule():
    for row in TABLE:
        rule = registry.lookup(row.primitive)
        assert rule is not None and rule.vjp is not None, row.id


@pytest.mark.parametrize(
    ("row", "shapes"), CASES, ids=[f"{row.id}-{shapes}" for row, shapes in CASES]
)
def test_vjp_matches_finite_differences(row, shapes):
    check_row(row, shapes, seed=0)


ELEMENTWISE_CASES = [
    (row, s)
    for row, s in CASES
    if registry.lookup(row.primitive).elementwise or registry.lookup(row.primitive).broadcast_g
]


@pytest.mark.parametrize(
    ("row", "shapes"),
    ELEMENTWISE_CASES,
    ids=[f"{row.id}-{shapes}" for row, shapes in ELEMENTWISE_CASES],
)
def test_elementwise_vjp_accepts_lazily_broadcast_g(row, shapes):
    # (and every rule registered with broadcast_g=True, which the compiler gives such a g)
    check_row(row, shapes, seed=1, lazy_g=True)


# -- elementwise rules against sympy ----------------------------------------------------------


def _derivatives(entry, nargs):
    symbols = sp.symbols(f"x0:{nargs}", real=True)
    expr = entry.formula(*symbols)
    result = []
    for s in symbols:
        d = sp.diff(expr, s)
        # floor and friends are piecewise constant: their derivative is 0 almost everywhere
        d = d.subs({sub: 0 for sub in d.atoms(sp.Subs, sp.Derivative)})
        result.append(sp.lambdify(symbols, d, "numpy"))
    return result


def _template_arity(template) -> int:
    params = list(inspect.signature(template).parameters.values())[2:]
    return len(params)


@pytest.mark.parametrize("entry", SYMBOLIC, ids=[f"{e.primitive!r}" for e in SYMBOLIC])
def test_elementwise_rule_matches_sympy(entry):
    rule = registry.lookup(entry.primitive)
    assert rule is not None and rule.elementwise
    # the parameters the template gives contributions for (a single expression: the first;
    # nan_to_num's replacement values are constants)
    nargs = _template_arity(rule.vjp) if returns_tuple_literal(rule.vjp) else 1
    derivatives = _derivatives(entry, nargs)
    rng = np.random.default_rng(2)
    domains = entry.domain if isinstance(entry.domain[0], tuple) else [entry.domain] * nargs
    for _ in range(5):
        point = [float(rng.uniform(*d)) for d in domains]
        ans = entry.primitive(*point)
        out = rule.vjp(1.0, ans, *point)
        out = out if returns_tuple_literal(rule.vjp) else (out,)
        for i, d in enumerate(derivatives):
            np.testing.assert_allclose(float(out[i]), float(d(*point)), rtol=1e-9, atol=1e-12)


def test_every_elementwise_rule_has_a_symbolic_formula():
    covered = {id(e.primitive) for e in SYMBOLIC} | {id(p) for p in SYMBOLIC_SKIPPED}
    missing = [
        r.name for r in differentiable_rules() if r.elementwise and id(r.primitive) not in covered
    ]
    assert not missing, f"elementwise rules without an entry in SYMBOLIC: {missing}"


# -- special points ---------------------------------------------------------------------------


TIES = [
    (np.max, [3.0, 1.0, 3.0, 3.0], {}, [1 / 3, 0.0, 1 / 3, 1 / 3]),
    (np.amax, [[2.0, 2.0], [1.0, 0.0]], {"axis": 1}, [[0.5, 0.5], [1.0, 0.0]]),
    (np.min, [[1.0, 2.0], [1.0, 0.0]], {"axis": 0}, [[0.5, 0.0], [0.5, 1.0]]),
    (np.amin, [0.0, 0.0], {"keepdims": True}, [0.5, 0.5]),
    (np.linalg.norm, [-2.0, 1.0, 2.0], {"ord": np.inf}, [-0.5, 0.0, 0.5]),
]


@pytest.mark.parametrize(("primitive", "x", "kwargs", "expected"), TIES)
def test_ties_share_the_adjoint_equally(primitive, x, kwargs, expected):
    x = np.array(x)
    ans = primitive(x, **kwargs)
    got = registry.lookup(primitive).vjp(np.ones(np.shape(ans)), ans, x, **kwargs)
    np.testing.assert_allclose(np.broadcast_to(got, x.shape), expected)


ZEROS = [
    (np.linalg.norm, np.zeros(3), {}),
    (np.linalg.norm, np.zeros((2, 3)), {"axis": 1}),
    (np.linalg.norm, np.zeros((2, 3)), {"ord": "fro"}),
    (np.linalg.norm, np.zeros(3), {"ord": 3}),
    (np.std, np.ones((2, 3)), {"axis": 0}),
]


@pytest.mark.parametrize(("primitive", "x", "kwargs"), ZEROS)
def test_adjoint_at_a_zero_result_is_zero_not_nan(primitive, x, kwargs):
    ans = primitive(x, **kwargs)
    got = registry.lookup(primitive).vjp(np.ones(np.shape(ans)), ans, x, **kwargs)
    np.testing.assert_array_equal(np.broadcast_to(got, x.shape), np.zeros_like(x))


def test_hypot_at_the_origin_has_the_subgradient_zero_not_nan():
    x, y = np.array([0.0, 1.0, -2.0]), np.array([0.0, 0.5, 0.0])
    gx, gy = registry.lookup(np.hypot).vjp(np.ones(3), np.hypot(x, y), x, y)
    np.testing.assert_allclose(gx, [0.0, 1 / np.sqrt(1.25), -1.0])
    np.testing.assert_allclose(gy, [0.0, 0.5 / np.sqrt(1.25), 0.0])


def test_sinc_near_zero_matches_its_series_to_second_order():
    """The quotient form of sinc's slope is 0/0 at 0; the rule switches to the Taylor
    polynomial there, so the Hessian at 0 is -pi**2 / 3, not 0 or NaN."""
    x = np.array([0.0, 1e-4, -5e-4, 2e-3])
    exact = [0.0, *[(np.cos(np.pi * v) - np.sinc(v)) / v for v in x[1:]]]
    np.testing.assert_allclose(registry.lookup(np.sinc).vjp(1.0, np.sinc(x), x), exact, atol=1e-12)


def test_prod_with_two_zeros_in_a_slice():
    x = np.array([0.0, 2.0, 0.0, 3.0])
    got = registry.lookup(np.prod).vjp(1.0, np.prod(x), x)
    np.testing.assert_array_equal(got, np.zeros(4))
    x = np.array([0.0, 2.0, 5.0, 3.0])
    np.testing.assert_array_equal(registry.lookup(np.prod).vjp(1.0, 0.0, x), [30.0, 0, 0, 0])


# -- flags and registration -------------------------------------------------------------------


@pytest.mark.parametrize("primitive", NONDIFFERENTIABLE, ids=repr)
def test_nondifferentiable_functions_are_registered_as_such(primitive):
    rule = registry.lookup(primitive)
    assert rule is not None and not rule.differentiable and rule.vjp is None


def test_reductions_give_scalars_without_axis():
    x = np.arange(1.0, 7.0).reshape(2, 3)
    for rule in registry:
        if rule.reduction:
            assert np.ndim(rule.primitive(x)) == 0, rule.name


def test_rows_pick_the_component_the_rule_differentiates():
    for row in TABLE:
        rule = registry.lookup(row.primitive)
        # (a rule with no `output` differentiates every piece: a row may use any one)
        assert rule.output is None or row.output == rule.output, row.id


def test_amax_and_max_share_a_rule():
    assert registry.lookup(np.amax).vjp is registry.lookup(np.max).vjp


# -- templates obey the inlining conventions ----------------------------------------------------


FORBIDDEN = (
    ast.If,
    ast.For,
    ast.While,
    ast.Try,
    ast.Lambda,
    ast.FunctionDef,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.With,
    ast.IfExp,
)
RUNTIME_NAMES = {"np", "math", "None", *runtime.__all__}


@pytest.mark.parametrize("rule", differentiable_rules(), ids=lambda r: r.name)
def test_template_is_straight_line(rule):
    tree = ast.parse(textwrap.dedent(inspect.getsource(rule.vjp)))
    fn = tree.body[0]
    *assigns, ret = fn.body
    assert all(isinstance(s, ast.Assign) for s in assigns), rule.name
    assert isinstance(ret, ast.Return), rule.name
    params = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    local = {
        t.id
        for s in assigns
        for t in ast.walk(s)
        if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)
    }
    for stmt in fn.body:
        for node in ast.walk(stmt):
            assert not isinstance(node, FORBIDDEN), f"{rule.name}: {type(node).__name__}"
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                assert node.id in params | local | RUNTIME_NAMES, f"{rule.name}: {node.id}"
