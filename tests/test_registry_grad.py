"""Every row of `tests/rule_table.py` differentiated end to end, through `sg.grad`.

`tests/test_rule_templates.py` calls the reverse-rule templates directly; this file checks what
the compiler makes of them. For each row it writes the source of a small function applying the
primitive to the inputs, spelled as users spell it (``x0 * x1`` for `operator.mul`, ``x0[1:3]``
for `operator.getitem`, ``np.sum(x0, axis=1, keepdims=True)``, ``math.sin(x0)``, ``abs(x0)``,
``y0, y1 = np.linalg.slogdet(x0)`` then ``return y1``), imports those functions from a module
written under pytest's temporary directory (`sg.grad` parses real source), and compares the
gradient of every differentiable input with central finite differences in float64. A non-scalar
result is differentiated as the sum of its elements, as `sg.grad` does.

A row that passes its template test but fails here points at the compiler, not at the rule.
"""

from __future__ import annotations

import builtins
import dataclasses
import importlib.util
import math
import operator
import sys
import types

import numpy as np
import pytest
from numerical import numerical_gradient
from rule_table import TABLE
from s2sgrad.runtime import registry

import s2sgrad as sg
from s2sgrad import nn, runtime

CASES = [(row, shapes) for row in TABLE for shapes in row.shapes]
MODULE = "registry_generated_functions"

# -- spelling a call of a primitive as source --------------------------------------------------

BINARY_SYNTAX = {
    operator.add: "+",
    operator.sub: "-",
    operator.mul: "*",
    operator.truediv: "/",
    operator.floordiv: "//",
    operator.mod: "%",
    operator.pow: "**",
    operator.matmul: "@",
}
UNARY_SYNTAX = {operator.neg: "-", operator.pos: "+"}
try:  # SciPy is optional at run time; the dev extra installs it, so these rows run
    import scipy.linalg
    import scipy.signal
    import scipy.special
    import scipy.stats

    SCIPY_NAMESPACES = tuple(
        (f"scipy.{name}", getattr(scipy, name)) for name in ("special", "stats", "linalg", "signal")
    )
except ImportError:
    SCIPY_NAMESPACES = ()

NAMESPACES = (
    ("np", np),
    ("np.linalg", np.linalg),
    ("np.fft", np.fft),
    *SCIPY_NAMESPACES,
    ("math", math),
    ("", builtins),
    ("runtime", runtime),
    ("nn", nn),
)


@dataclasses.dataclass(frozen=True)
class Input:
    """Stands for input number `index` while a row's `args` lambda is traced."""

    index: int

    @property
    def name(self) -> str:
        return f"x{self.index}"


def callee(primitive) -> str:
    """The dotted name a user calls `primitive` by: ``np.sum``, ``np.linalg.inv``, ``abs``,
    ``scipy.stats.norm.logpdf`` (a method of a distribution object: each access makes a new
    bound method, equal to the row's)."""
    name = getattr(primitive, "__name__", None)
    for prefix, namespace in NAMESPACES:
        if name and getattr(namespace, name, None) is primitive:
            return f"{prefix}.{name}" if prefix else name
    owner = getattr(primitive, "__self__", None)
    if name and owner is not None and not isinstance(owner, types.ModuleType):
        for prefix, namespace in SCIPY_NAMESPACES:
            for key, value in vars(namespace).items():
                if value is owner and getattr(owner, name, None) == primitive:
                    return f"{prefix}.{key}.{name}"
    if getattr(operator, name or "", None) is primitive:
        return f"operator.{name}"
    raise LookupError(f"no public spelling for {primitive!r}")


class Writer:
    """Renders call arguments as source; arrays become module-level constants (``F3_C0``)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.constants: list[str] = []

    def constant(self, array: np.ndarray) -> str:
        name = f"{self.prefix}_C{len(self.constants)}"
        self.constants.append(f"{name} = np.array({array.tolist()!r}, dtype=np.{array.dtype})")
        return name

    def value(self, v) -> str:
        if isinstance(v, Input):
            return v.name
        if isinstance(v, np.ndarray):
            return self.constant(v)
        if isinstance(v, (bool, str, type(None))):
            return repr(v)
        if isinstance(v, (int, np.integer)):
            return repr(int(v))
        if isinstance(v, (float, np.floating)):
            if math.isinf(v):
                return "np.inf" if v > 0 else "-np.inf"
            return repr(float(v))
        if v is Ellipsis:
            return "..."
        if isinstance(v, slice):
            return f"slice({self.value(v.start)}, {self.value(v.stop)}, {self.value(v.step)})"
        if isinstance(v, list):
            return "[" + ", ".join(self.value(item) for item in v) + "]"
        if isinstance(v, tuple):
            items = [self.value(item) for item in v]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        raise TypeError(f"cannot write {v!r} as source")

    def index(self, v) -> str:
        """An index as it appears between brackets: ``1:3``, ``:, [1, 1, 3]``, ``..., None, 2``."""
        if isinstance(v, tuple):
            return ", ".join(self.index(item) for item in v)
        if isinstance(v, slice):
            parts = ["" if p is None else self.value(p) for p in (v.start, v.stop, v.step)]
            return ":".join(parts if v.step is not None else parts[:2])
        return self.value(v)

    def operand(self, v) -> str:
        text = self.value(v)
        return text if isinstance(v, Input) else f"({text})"


@dataclasses.dataclass(frozen=True)
class Generated:
    """The source of one row's test function and which of its parameters are differentiated."""

    name: str
    source: str
    call: str
    constants: tuple[str, ...]
    wrt: tuple[int, ...]


def expression(row, args, writer: Writer) -> str:
    """The call ``row.primitive(*args, **row.kwargs)`` as a Python expression."""
    p = row.primitive
    if not row.kwargs:
        if p is operator.getitem:
            return f"{writer.operand(args[0])}[{writer.index(args[1])}]"
        if p in BINARY_SYNTAX:
            return f"{writer.operand(args[0])} {BINARY_SYNTAX[p]} {writer.operand(args[1])}"
        if p in UNARY_SYNTAX:
            return f"{UNARY_SYNTAX[p]}{writer.operand(args[0])}"
    parts = [writer.value(a) for a in args]
    parts += [f"{key}={writer.value(v)}" for key, v in row.kwargs.items()]
    return f"{callee(p)}({', '.join(parts)})"


def generate(row, n_inputs: int, name: str, sample_inputs) -> Generated:
    inputs = [Input(i) for i in range(n_inputs)]
    args = row.args(*inputs)
    writer = Writer(name.upper())
    call = expression(row, args, writer)
    params = ", ".join(x.name for x in inputs)
    if row.output is None:
        body = f"    return {call}\n"
    else:
        arity = len(row.primitive(*row.args(*sample_inputs), **row.kwargs))
        targets = ", ".join(f"y{k}" for k in range(arity))
        body = f"    {targets} = {call}\n    return y{row.output}\n"
    wrt = tuple(x.index for x in inputs if row.argnums is None or position(args, x) in row.argnums)
    source = f"def {name}({params}):\n{body}"
    return Generated(name, source, call, tuple(writer.constants), wrt)


def position(args, x) -> int:
    """The positional argument of the call that holds input `x` (directly or in a list)."""
    for pos, arg in enumerate(args):
        if arg is x or (isinstance(arg, (list, tuple)) and any(item is x for item in arg)):
            return pos
    raise AssertionError(f"input {x.name} is not among the call's arguments")


# -- inputs ------------------------------------------------------------------------------------


def _draw(domain, shape, rng):
    if callable(domain):
        return domain(rng, shape)
    value = rng.uniform(*domain, size=shape)
    return float(value) if shape == () else value


def make_inputs(row, shapes, seed=0):
    """The inputs `tests/test_rule_templates.py` uses for this case (shape ``()``: a float)."""
    if row.values is not None:
        return [np.array(v, dtype=np.float64) if np.ndim(v) else v for v in row.values]
    rng = np.random.default_rng(seed)
    per_input = isinstance(row.domain, tuple) and not isinstance(row.domain[0], float)
    domains = row.domain if per_input else [row.domain] * len(shapes)
    return [_draw(d, s, rng) for d, s in zip(domains, shapes, strict=True)]


# -- the generated module ----------------------------------------------------------------------


def function_key(row, n_inputs: int) -> tuple[int, int]:
    return (id(row), n_inputs)


def _generate_all() -> dict[tuple[int, int], Generated | Exception]:
    """One function per row (and input count), or the error that prevented writing it."""
    out: dict[tuple[int, int], Generated | Exception] = {}
    for number, row in enumerate(TABLE):
        for shapes in row.shapes:
            key = function_key(row, len(shapes))
            if key in out:
                continue
            name = f"f{number}_{len(shapes)}"
            try:
                out[key] = generate(row, len(shapes), name, make_inputs(row, shapes))
            except Exception as error:  # reported by the test of that row
                out[key] = error
    return out


GENERATED = _generate_all()


def case_id(row, shapes) -> str:
    """The generated call and the input shapes: ``x0[1:3]-((5,),)``, ``np.exp(x0)-((),)``."""
    g = GENERATED[function_key(row, len(shapes))]
    return f"{g.call if isinstance(g, Generated) else row.id}-{shapes}"


CASE_IDS = [case_id(row, shapes) for row, shapes in CASES]


@pytest.fixture(scope="session")
def generated_module(tmp_path_factory):
    """All generated functions in one module, written to a file and imported from it."""
    lines = [
        "import math",
        "import operator",
        "",
        "import numpy as np",
        *[f"import {prefix}" for prefix, _ in SCIPY_NAMESPACES],
        "from s2sgrad import nn, runtime",
        "",
    ]
    for g in GENERATED.values():
        if isinstance(g, Generated):
            lines += [*g.constants, "", "", g.source]
    path = tmp_path_factory.mktemp("registry_grad") / f"{MODULE}.py"
    path.write_text("\n".join(lines))
    spec = importlib.util.spec_from_file_location(MODULE, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(MODULE, None)


def function_for(module, row, n_inputs: int):
    g = GENERATED[function_key(row, n_inputs)]
    if isinstance(g, Exception):
        raise AssertionError(f"{row.id}: could not write a test function") from g
    return getattr(module, g.name), g


def _describe(g: Generated, df, inputs) -> str:
    """The test function and, when the compiler got that far, the gradient it generated."""
    if df is None:
        return f"function (rejected by sg.grad):\n{g.source}"
    try:
        generated = sg.source(df, *inputs)
    except Exception as error:  # compilation itself failed
        generated = f"<no generated source: {type(error).__name__}: {error}>"
    return f"function:\n{g.source}\ngenerated gradient:\n{generated}"


# -- the tests ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("row", "shapes"), CASES, ids=CASE_IDS)
def test_sg_grad_matches_finite_differences(row, shapes, generated_module):
    f, g = function_for(generated_module, row, len(shapes))
    inputs = make_inputs(row, shapes)
    # the generated source computes exactly the row's primitive
    np.testing.assert_array_equal(f(*inputs), row.call(*inputs))
    df = None
    try:
        df = sg.grad(f, wrt=g.wrt)
        grads = df(*inputs)
    except Exception as error:
        error.add_note(_describe(g, df, inputs))
        raise
    assert isinstance(grads, tuple) and len(grads) == len(g.wrt), _describe(g, df, inputs)
    for i, got in zip(g.wrt, grads, strict=True):
        want = numerical_gradient(f, inputs, i)
        context = f"{row.id} shapes={shapes}: gradient of x{i}\n{_describe(g, df, inputs)}"
        assert np.shape(got) == np.shape(inputs[i]), context
        assert np.all(np.isfinite(got)), context
        scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
        np.testing.assert_allclose(got, want, rtol=row.tol, atol=row.tol * scale, err_msg=context)


def test_every_rule_with_a_vjp_is_differentiated_here():
    exercised = {id(row.primitive) for row, _ in CASES}
    missing = [r.name for r in registry if r.vjp is not None and id(r.primitive) not in exercised]
    assert not missing, f"rules never differentiated through sg.grad: {missing}"


def test_every_row_has_a_generated_function():
    broken = {
        row.id: repr(g)
        for row, shapes in CASES
        if isinstance(g := GENERATED[function_key(row, len(shapes))], Exception)
    }
    assert not broken, f"rows whose test function could not be written: {broken}"


def test_generated_calls_spell_the_rows_primitive(generated_module):
    """A call spelled ``np.mod``/``np.linalg.inv`` names the very object the row registers."""
    for row in TABLE:
        p = row.primitive
        if p in BINARY_SYNTAX or p in UNARY_SYNTAX or p is operator.getitem:
            continue
        spelled = eval(callee(p), vars(generated_module))
        assert spelled is p or (isinstance(p, types.MethodType) and spelled == p), row.id


def test_gradient_call_leaves_inputs_unchanged(generated_module):
    changed = []
    for row, shapes in CASES:
        f, g = function_for(generated_module, row, len(shapes))
        inputs = make_inputs(row, shapes)
        before = [np.copy(x) for x in inputs]
        try:
            sg.grad(f, wrt=g.wrt)(*inputs)
        except Exception:  # reported by test_sg_grad_matches_finite_differences
            pass
        for i, (x, old) in enumerate(zip(inputs, before, strict=True)):
            if not np.array_equal(x, old):
                changed.append(f"{row.id} shapes={shapes}: x{i}")
    assert not changed, f"the gradient call modified its inputs: {changed}"
