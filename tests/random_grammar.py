"""Random NumPy programs, as hypothesis strategies, for the property tests in test_random_programs.

`programs()` draws a straight-line program s2sgrad must differentiate: 1-3 parameters (Python
floats or arrays of a shape drawn per example), 2-8 assignments, augmented assignments (only
to locals that share memory with nothing), annotated assignments and tuple unpackings, built
from well-conditioned operations (safe denominators, powers of positive values, bounded
exponents, reductions with and without axis, where/maximum/minimum/abs/clip, slices, views,
matmul, shape functions, math functions on scalars, module constants), and a return. Names
are drawn from a pool that includes the compiler's own (``dx``, ``_t1``, ``unbroadcast``).
Its ``check_source`` is the same program with every kink and every assigned value (with its
expected shape) reported to a `Recorder`, so a test can reject inputs that sit on a kink or
make values huge (finite differences would be meaningless there).

`wild_programs()` draws from a wider grammar: a valid program with unsupported or broken pieces
spliced in (control flow, lambdas, comprehensions, undefined names, in-place updates of
arguments, odd signatures, ...), for the property that the compiler fails only with its
documented exceptions.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
from hypothesis import strategies as st

# Operator precedence, loosely following Python's grammar.
ATOM, POW, UNARY, MUL, ADD, CMP = 100, 90, 80, 70, 60, 50

SHAPES = ((), (3,), (2, 3), (2, 1))
PARAM_NAMES = (("x", "y", "z"), ("p0", "p1", "p2"), ("x", "dx", "_t1"), ("w", "b", "h"))
LOCAL_NAMES = (
    "v",
    "u",
    "h_1",
    "out",
    "acc",
    "dx",
    "dv",
    "v_1",
    "_t1",
    "_t2",
    "_dt2",
    "unbroadcast",
    "match_shape",
    "unreduce",
    "reduced_count",
    "sum",
)
LITERALS = ("0.5", "2.0", "1.5", "3.0", "0.25", "1e-1", "4.")
STATEMENTS = ("assign", "reassign", "aug", "unpack", "annotated")
GLOBALS = {
    # name: (value source, shape, is a Python number)
    "SCALE": ("0.75", (), True),
    "W": ("np.array([0.5, -1.0, 2.0])", (3,), False),
    "M": ("np.array([[1.0, 0.5, -0.5], [0.25, -1.5, 1.0]])", (2, 3), False),
    "unbroadcast": ("1.25", (), True),
    "_t3": ("np.array([1.0, 2.0, -0.5])", (3,), False),
}


@dataclasses.dataclass(frozen=True)
class Expr:
    text: str  # as the program writes it
    check: str  # the same, with kinks instrumented (see module docstring)
    shape: tuple
    prec: int = ATOM
    py: bool = False  # a Python number: no array methods
    view: bool = False  # a name or a view of existing memory, not a fresh value
    root: str | None = None  # for views: the variable whose memory this shares


def _paren(e: Expr, min_prec: int) -> tuple[str, str]:
    if e.prec >= min_prec:
        return e.text, e.check
    return f"({e.text})", f"({e.check})"


def broadcast(*shapes) -> tuple | None:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


def lit(text: str) -> Expr:
    return Expr(text, text, (), ATOM, py=True)


def binop(op: str, a: Expr, b: Expr) -> Expr:
    prec = ADD if op in "+-" else MUL
    (at, ac), (bt, bc) = _paren(a, prec), _paren(b, prec + 1)
    if op == "@":
        shape = np.matmul(np.empty(a.shape), np.empty(b.shape)).shape
    else:
        shape = broadcast(a.shape, b.shape)
        assert shape is not None, (a, b)
    return Expr(f"{at} {op} {bt}", f"{ac} {op} {bc}", shape, prec, a.py and b.py)


def power(a: Expr, b: Expr) -> Expr:
    (at, ac), (bt, bc) = _paren(a, POW + 1), _paren(b, UNARY)
    shape = broadcast(a.shape, b.shape)
    return Expr(f"{at} ** {bt}", f"{ac} ** {bc}", shape, POW, a.py and b.py)


def neg(a: Expr) -> Expr:
    t, c = _paren(a, UNARY)
    return Expr(f"-{t}", f"-{c}", a.shape, UNARY, a.py)


def call(fn: str, *args: Expr, kwargs: str = "", shape=None, check_fn: str | None = None) -> Expr:
    texts = [a.text for a in args] + ([kwargs] if kwargs else [])
    checks = [a.check for a in args] + ([kwargs] if kwargs else [])
    if shape is None:
        shape = broadcast(*(a.shape for a in args))
    py = fn.startswith("math.")
    return Expr(
        f"{fn}({', '.join(texts)})",
        f"{check_fn or fn}({', '.join(checks)})",
        shape,
        ATOM,
        py,
    )


def method(a: Expr, name: str, args: str, shape: tuple, view: bool = False) -> Expr:
    t, c = _paren(a, ATOM)
    view = view and a.view
    return Expr(
        f"{t}.{name}({args})",
        f"{c}.{name}({args})",
        shape,
        ATOM,
        view=view,
        root=a.root if view else None,
    )


def _listed(*items: Expr) -> Expr:
    """A list display ``[a, b]`` (an argument of concatenate and stack)."""
    return Expr(
        f"[{', '.join(e.text for e in items)}]",
        f"[{', '.join(e.check for e in items)}]",
        (),
    )


def subscript(a: Expr, index: str) -> Expr:
    t, c = _paren(a, ATOM)
    shape = eval(f"_a[{index}]", {"_a": np.empty(a.shape)}).shape
    return Expr(f"{t}[{index}]", f"{c}[{index}]", shape, ATOM, view=a.view, root=a.root)


def transpose(a: Expr) -> Expr:
    t, c = _paren(a, ATOM)
    return Expr(f"{t}.T", f"{c}.T", a.shape[::-1], ATOM, view=a.view, root=a.root)


def indices_for(shape: tuple) -> list[str]:
    """Indexing reads valid for `shape` (integers, slices, a column)."""
    if not shape:
        return []
    out = ["0", "-1"]
    if shape[0] >= 2:
        out += ["1:", ":-1", "::2"]
    if len(shape) == 2:
        out += [":, 0", "0, -1", "..., -1"]
        if shape[1] >= 2:
            out += [":, 1:"]
            if shape[0] >= 2:
                out += ["1:, :2"]
    return out


@dataclasses.dataclass
class Var:
    shape: tuple
    py: bool
    fresh: bool  # holds memory no other name shares: `v += ...` is safe
    param: bool = False


class Builder:
    """Draws one program; `draw` is hypothesis's."""

    def __init__(self, draw):
        self.draw = draw
        self.vars: dict[str, Var] = {}
        self.globals: dict[str, tuple] = {}
        self.used_names: set[str] = set()

    # ---- expressions ----------------------------------------------------------------------
    def leaf(self) -> Expr:
        draw = self.draw
        choice = draw(st.sampled_from(("var", "var", "var", "literal", "var", "literal", "global")))
        if choice == "var" and self.vars:
            name = draw(st.sampled_from(sorted(self.vars)))
            var = self.vars[name]
            return Expr(name, name, var.shape, ATOM, var.py, view=True, root=name)
        if choice == "global":
            name = draw(st.sampled_from(sorted(GLOBALS)))
            if name not in self.used_names:
                self.globals[name] = GLOBALS[name]
                _, shape, py = GLOBALS[name]
                return Expr(name, name, shape, ATOM, py, view=True, root=name)
        return lit(draw(st.sampled_from(LITERALS)))

    def positive(self, e: Expr) -> Expr:
        """A smooth positive function of `e`, at least ~0.3 (safe to divide by)."""
        choice = self.draw(st.integers(0, 5))
        if choice == 0:
            return binop("+", lit("1.0"), binop("*", e, e))
        if choice == 1:
            return binop("+", lit("1.0"), power(e, lit("2")))
        if choice == 2:
            return call("np.exp", call("np.tanh", e))
        if choice == 3:
            return binop("+", lit("2.0"), call("np.sin", e))
        if choice == 4:
            return call("np.sqrt", binop("+", lit("1.0"), binop("*", e, e)))
        return call("np.exp", call("np.sin", e))

    def fit(self, e: Expr, target: tuple, exact: bool = False) -> Expr:
        """`e`, or a reduction of it, that broadcasts with `target` (into it, if `exact`)."""

        def ok(shape):
            joint = broadcast(shape, target)
            return joint is not None and (not exact or joint == target)

        if ok(e.shape):
            return e
        options = []
        for axis in range(len(e.shape)):
            reduced = e.shape[:axis] + e.shape[axis + 1 :]
            if ok(reduced):
                options.append(("np.sum", axis, reduced))
                options.append(("np.mean", axis, reduced))
        options += [("np.sum", None, ()), ("np.mean", None, ())]
        fn, axis, shape = self.draw(st.sampled_from(options))
        return call(fn, e, kwargs="" if axis is None else f"axis={axis}", shape=shape)

    def expr(self, depth: int) -> Expr:
        draw = self.draw
        if depth <= 0:
            return self.leaf()
        kind = draw(
            st.sampled_from(
                (
                    "leaf",
                    "arith",
                    "func",
                    "arith",
                    "div",
                    "neg",
                    "pow",
                    "reduce",
                    "where",
                    "maximum",
                    "index",
                    "matmul",
                    "view",
                    "math",
                    "more",
                    "shape",
                )
            )
        )
        sub = depth - 1
        if kind == "leaf":
            return self.leaf()
        if kind == "arith":
            a = self.expr(sub)
            b = self.fit(self.expr(sub), a.shape)
            op = draw(st.sampled_from("+-*"))
            if draw(st.booleans()):
                a, b = b, a
            return binop(op, a, b)
        if kind == "div":
            a = self.expr(sub)
            b = self.fit(self.positive(self.expr(min(sub, 1))), a.shape)
            return binop("/", a, b)
        if kind == "neg":
            return neg(self.expr(sub))
        if kind == "pow":
            e = self.expr(sub)
            form = draw(st.integers(0, 2))
            if form == 0:
                return power(e, lit(draw(st.sampled_from(("2", "3", "2.0")))))
            if form == 1:
                exponent = draw(st.sampled_from(("0.5", "1.5", "-0.5", "-1.0", "2.5", "-2")))
                return power(self.positive(e), lit(exponent))
            return power(lit(draw(st.sampled_from(("2.0", "0.5")))), call("np.tanh", e))
        if kind == "func":
            e = self.expr(sub)
            fn = draw(st.integers(0, 9))
            if fn <= 2:
                return call(("np.sin", "np.cos", "np.tanh")[fn], e)
            if fn == 3:
                return call("np.exp", call(draw(st.sampled_from(("np.tanh", "np.sin"))), e))
            if fn == 4:
                return call("np.exp", neg(power(e, lit("2"))))
            if fn == 5:
                return call("np.log", binop("+", lit("1.0"), binop("*", e, e)))
            if fn == 6:
                return call("np.sqrt", binop("+", lit("1.0"), binop("*", e, e)))
            if fn == 7:
                return call("np.square", e)
            if fn == 8:
                return call("np.arctan", e)
            return call("np.log1p", power(e, lit("2")))
        if kind == "more":  # further smooth functions, and kinks the recorder watches
            e = self.expr(sub)
            fn = draw(st.integers(0, 8))
            if fn == 0:
                return call(draw(st.sampled_from(("np.sinh", "np.cosh"))), call("np.tanh", e))
            if fn == 1:
                return call(draw(st.sampled_from(("np.log2", "np.log10"))), self.positive(e))
            if fn == 2:
                return call("np.expm1", call("np.tanh", e))
            if fn == 3:
                return power(self.positive(e), call("np.tanh", self.fit(self.expr(sub), e.shape)))
            if fn == 4:
                return call("np.logaddexp", e, self.fit(self.expr(sub), e.shape))
            if fn == 5:
                return Expr(f"np.abs({e.text})", f"np.abs(_kink({e.check}, 0))", e.shape)
            if fn == 6:
                return Expr(
                    f"np.clip({e.text}, -0.5, 0.5)",
                    f"_clip({e.check}, -0.5, 0.5)",
                    e.shape,
                )
            if fn == 7:
                return power(call("np.tanh", e), lit("2"))
            return call("np.sinh", call("np.sin", e))
        if kind == "shape":  # reductions and shape functions of the registry
            return self.shaped(self.expr(sub))
        if kind == "math":
            e = self.expr(sub)
            if e.shape != ():
                e = self.fit(e, (), exact=True)
            fn = draw(st.integers(0, 4))
            if fn <= 2:
                return call(("math.sin", "math.cos", "math.tanh")[fn], e)
            if fn == 3:
                return call("math.exp", call("math.tanh", e))
            return call("math.sqrt", binop("+", lit("1.0"), binop("*", e, e)))
        if kind == "reduce":
            e = self.expr(sub)
            fn = draw(st.sampled_from(("np.sum", "np.mean")))
            if not e.shape or draw(st.booleans()):
                if not e.py and draw(st.booleans()):
                    return method(e, fn[3:], "", ())
                return call(fn, e, shape=())
            axis = draw(st.integers(-len(e.shape), len(e.shape) - 1))
            keepdims = draw(st.booleans())
            shape = list(e.shape)
            if keepdims:
                shape[axis] = 1
            else:
                del shape[axis]
            kwargs = f"axis={axis}" + (", keepdims=True" if keepdims else "")
            if not e.py and draw(st.booleans()):
                return method(e, fn[3:], kwargs, tuple(shape))
            return call(fn, e, kwargs=kwargs, shape=tuple(shape))
        if kind == "where":
            a = self.expr(sub)
            b = self.fit(self.expr(sub), a.shape)
            joint = broadcast(a.shape, b.shape)
            c = self.fit(self.expr(sub), joint)
            t = draw(st.sampled_from(("0", "0.5", "-0.5")))
            ct, _ = _paren(c, ADD)
            cond = Expr(f"{ct} > {t}", f"_kink({c.check}, {t}) > {t}", c.shape, CMP)
            return call("np.where", cond, a, b)
        if kind == "maximum":
            a = self.expr(sub)
            b = self.fit(self.expr(sub), a.shape)
            fn = draw(st.sampled_from(("np.maximum", "np.minimum")))
            return call(fn, a, b, check_fn="_" + fn[3:])
        if kind == "index":
            e = self.expr(sub)
            options = indices_for(e.shape)
            if not options or e.py:
                return e
            return subscript(e, draw(st.sampled_from(options)))
        if kind == "view":
            e = self.expr(sub)
            if e.py or not e.shape:
                return e
            form = draw(st.integers(0, 2))
            if form == 0:
                return transpose(e)
            if form == 1:
                return method(e, "reshape", "-1", (math.prod(e.shape),), view=True)
            return dataclasses.replace(
                call("np.transpose", e, shape=e.shape[::-1]), view=e.view, root=e.root
            )
        # matmul
        a, b = self.expr(sub), self.expr(sub)
        if a.py or b.py or not a.shape or not b.shape:
            return binop("*", a, self.fit(b, a.shape))
        for right in (b, transpose(b)):
            try:
                np.matmul(np.empty(a.shape), np.empty(right.shape))
            except ValueError:
                continue
            if draw(st.booleans()):
                return binop("@", a, right)
            shape = np.dot(np.empty(a.shape), np.empty(right.shape)).shape
            return call("np.dot", a, right, shape=shape)
        return binop("*", a, self.fit(b, a.shape))

    def shaped(self, e: Expr) -> Expr:
        """prod/var/cumsum along an axis, concatenate, stack, expand_dims, broadcast_to, einsum,
        outer: the shape-changing functions (arrays only)."""
        draw = self.draw
        if e.py or not e.shape:
            return e
        ndim = len(e.shape)
        form = draw(st.integers(0, 7))
        if form <= 2:
            fn = ("np.prod", "np.var", "np.cumsum")[form]
            axis = draw(st.integers(-ndim, ndim - 1))
            shape = (
                e.shape
                if fn == "np.cumsum"
                else e.shape[: axis % ndim] + e.shape[axis % ndim + 1 :]
            )
            return call(fn, e, kwargs=f"axis={axis}", shape=shape)
        if form == 3:
            other = self.fit(self.expr(1), e.shape, exact=True)
            if other.shape != e.shape:
                other = call("np.broadcast_to", other, kwargs=f"{e.shape}", shape=e.shape)
            if draw(st.booleans()):
                shape = (2 * e.shape[0], *e.shape[1:])
                return call("np.concatenate", _listed(e, other), shape=shape)
            axis = draw(st.integers(0, ndim))
            shape = (*e.shape[:axis], 2, *e.shape[axis:])
            return call("np.stack", _listed(e, other), kwargs=f"axis={axis}", shape=shape)
        if form == 4:
            axis = draw(st.integers(0, ndim))
            shape = (*e.shape[:axis], 1, *e.shape[axis:])
            result = call("np.expand_dims", e, kwargs=f"{axis}", shape=shape)
            return dataclasses.replace(result, view=e.view, root=e.root)
        if form == 5:
            target = draw(st.sampled_from(((2, 3), (3, 3), (2, 2, 3))))
            if broadcast(e.shape, target) != target:
                return e
            result = call("np.broadcast_to", e, kwargs=f"{target}", shape=target)
            return dataclasses.replace(result, view=True, root=e.root)  # read-only
        if form == 6:
            other = self.fit(self.expr(1), (e.shape[-1],), exact=True)
            if other.shape != (e.shape[-1],):
                return e
            letters = "ij"[:ndim] if ndim <= 2 else None
            if letters is None:
                return e
            spec = f'"{letters},{letters[-1]}->{letters[:-1]}"'
            return call("np.einsum", lit(spec), e, other, shape=e.shape[:-1])
        other = self.expr(1)
        if other.py or not other.shape:
            return e
        return call("np.outer", e, other, shape=(math.prod(e.shape), math.prod(other.shape)))

    # ---- statements -----------------------------------------------------------------------
    def new_name(self) -> str | None:
        free = [n for n in LOCAL_NAMES if n not in self.used_names and n not in self.globals]
        if not free:
            return None
        name = self.draw(st.sampled_from(free))
        self.used_names.add(name)
        return name

    def bind(self, name: str, e: Expr) -> None:
        old = self.vars.get(name)
        # a name or a view (`w = v`, `w = v[1:]`, `w = v.T`) shares memory with what it reads:
        # neither may be updated in place afterwards
        if e.view and e.root in self.vars:
            self.vars[e.root].fresh = False
        self.vars[name] = Var(e.shape, e.py, fresh=not e.view)
        if old is not None and old.param:
            self.vars[name].param = True  # a rebound parameter: never augmented

    def statement(self, lines: list[str], checks: list[str]) -> None:
        draw = self.draw
        kind = draw(st.sampled_from(STATEMENTS))
        depth = draw(st.integers(0, 3))
        if kind == "aug":
            targets = [n for n, v in self.vars.items() if v.fresh and not v.param]
            if targets:
                name = draw(st.sampled_from(sorted(targets)))
                var = self.vars[name]
                e = self.fit(self.expr(depth), var.shape, exact=True)
                op = draw(st.sampled_from(("+=", "-=", "*=", "/=")))
                if op == "/=":
                    e = self.fit(self.positive(e), var.shape, exact=True)
                lines.append(f"{name} {op} {e.text}")
                checks.append(f"{name} {op} {e.check}")
                checks.append(f"_record({name}, {var.shape})")
                var.py = var.py and e.py
                return
            kind = "assign"
        if kind == "unpack":
            names = []
            for _ in range(2):
                pool = [n for n in self.vars if n not in names] if draw(st.booleans()) else []
                name = draw(st.sampled_from(sorted(pool))) if pool else self.new_name()
                if name is None:
                    return
                names.append(name)
            values = [self.expr(depth), self.expr(min(depth, 1))]
            lines.append(f"{names[0]}, {names[1]} = {values[0].text}, {values[1].text}")
            checks.append(f"{names[0]}, {names[1]} = {values[0].check}, {values[1].check}")
            for name, e in zip(names, values, strict=True):
                checks.append(f"_record({name}, {e.shape})")
            for name, e in zip(names, values, strict=True):
                self.bind(name, e)
            return
        if kind == "reassign":
            name = draw(st.sampled_from(sorted(self.vars)))
        else:
            name = self.new_name() or draw(st.sampled_from(sorted(self.vars)))
        e = self.expr(depth)
        annotation = ": float" if kind == "annotated" else ""
        lines.append(f"{name}{annotation} = {e.text}")
        checks.append(f"{name} = {e.check}")
        checks.append(f"_record({name}, {e.shape})")
        self.bind(name, e)

    def returned(self, last: list[str]) -> Expr:
        """The result: an expression, usually plus the variables assigned last (so it depends
        on most of the program)."""
        draw = self.draw
        e = self.expr(draw(st.integers(1, 3)))
        count = draw(st.integers(0, 2))
        for name in last[len(last) - count :]:
            if name in self.vars:
                var = self.vars[name]
                term = Expr(name, name, var.shape, ATOM, var.py, view=True)
                e = binop(draw(st.sampled_from("+*")), e, self.fit(term, e.shape))
        form = draw(st.integers(0, 4))
        if form == 0 or (form == 1 and e.shape):
            return call("np.sum", e, shape=())
        if form == 2 and not e.py:
            return method(e, "sum", "", ())
        if form == 3:
            return call("np.mean", e, shape=())
        return e  # a scalar, or an array the gradient sums


@dataclasses.dataclass(frozen=True)
class Program:
    source: str  # the module: imports, constants, `def f`
    check_source: str  # the instrumented module (calls _kink, _maximum, _minimum, _record)
    params: tuple[str, ...]
    shapes: tuple[tuple, ...]  # () is a Python float
    seed: int
    lines: tuple[str, ...] = ()  # the body of f
    scopes: tuple[tuple[str, ...], ...] = ()  # the variables bound before each line

    def arguments(self) -> tuple:
        rng = np.random.default_rng(self.seed)
        args = []
        for shape in self.shapes:
            value = rng.uniform(-1.5, 1.5, size=shape)
            args.append(float(value) if shape == () else value)
        return tuple(args)

    def __repr__(self) -> str:  # what hypothesis prints for a failing example
        return f"Program(seed={self.seed}, shapes={self.shapes}):\n{self.source}"


def _module(constants: dict, params, body: list[str], header: str = "") -> str:
    lines = ["import math", "", "import numpy as np", ""]
    for name, (value, _, _) in sorted(constants.items()):
        lines.append(f"{name} = {value}")
    lines += ["", "", f"{header}def f({', '.join(params)}):"]
    lines += [f"    {line}" for line in body]
    return "\n".join(lines) + "\n"


@st.composite
def programs(draw) -> Program:
    names = draw(st.sampled_from(PARAM_NAMES))
    n = draw(st.integers(1, 3))
    params = names[:n]
    shapes = tuple(draw(st.sampled_from(SHAPES)) for _ in params)
    builder = Builder(draw)
    for name, shape in zip(params, shapes, strict=True):
        builder.vars[name] = Var(shape, shape == (), fresh=False, param=True)
        builder.used_names.add(name)
    lines: list[str] = []
    checks: list[str] = []
    scopes: list[tuple[str, ...]] = []
    for _ in range(draw(st.integers(2, 8))):
        before, count = tuple(builder.vars), len(lines)
        builder.statement(lines, checks)
        scopes += [before] * (len(lines) - count)
    scopes.append(tuple(builder.vars))
    assigned = [line.split(" ")[0].rstrip(":,") for line in lines]
    result = builder.returned(assigned)
    lines.append(f"return {result.text}")
    checks.append(f"return _record({result.check}, {result.shape})")
    seed = draw(st.integers(0, 2**32 - 1))
    return Program(
        source=_module(builder.globals, params, lines),
        check_source=_module(builder.globals, params, checks),
        params=params,
        shapes=shapes,
        seed=seed,
        lines=tuple(lines),
        scopes=tuple(scopes),
    )


class Recorder:
    """The helpers `check_source` calls: the smallest distance to a kink, the largest value."""

    def __init__(self):
        self.margin = math.inf
        self.largest = 0.0
        self.finite = True

    def namespace(self) -> dict:
        return {
            "_kink": self.kink,
            "_maximum": self.maximum,
            "_minimum": self.minimum,
            "_clip": self.clip,
            "_record": self.record,
        }

    def _note_margin(self, distance) -> None:
        distance = np.asarray(distance, dtype=float)
        if distance.size:
            self.margin = min(self.margin, float(np.min(np.abs(distance))))

    def kink(self, value, threshold):
        self._note_margin(np.asarray(value) - threshold)
        return value

    def maximum(self, a, b):
        self._note_margin(np.asarray(a) - np.asarray(b))
        return np.maximum(a, b)

    def minimum(self, a, b):
        self._note_margin(np.asarray(a) - np.asarray(b))
        return np.minimum(a, b)

    def clip(self, value, low, high):
        self._note_margin(np.asarray(value) - low)
        self._note_margin(np.asarray(value) - high)
        return np.clip(value, low, high)

    def record(self, value, shape=None):
        if shape is not None and np.shape(value) != shape:  # the grammar's bookkeeping is off
            raise AssertionError(f"generated value of shape {np.shape(value)}, expected {shape}")
        array = np.asarray(value, dtype=float)
        if array.size:
            if not np.all(np.isfinite(array)):
                self.finite = False
            else:
                self.largest = max(self.largest, float(np.max(np.abs(array))))
        return value


# ---- the wider grammar ------------------------------------------------------------------------

# Statements spliced into a valid body. {p} is a parameter, {v} any variable defined so far,
# {n} a fresh name. Each is valid Python; many are not valid s2sgrad input, some raise when run.
WILD_STATEMENTS = (
    "if np.sum({v}) > 0:\n    {n} = {v} * 2.0\nelse:\n    {n} = {v} - 1.0",
    "if {p} is None:\n    return 0.0",
    "for _i in range(2):\n    {n} = {v} + 1.0",
    "while False:\n    pass",
    "{n} = lambda q: q * 2.0",
    "{n} = (lambda q: q * {v})(2.0)",
    "try:\n    {n} = {v} * 3.0\nexcept ValueError:\n    {n} = {v}",
    "with np.errstate(all='ignore'):\n    {n} = {v} / 3.0",
    "del {v}",
    "global G\nG = 1.0",
    "nonlocal_name = 1\n{n} = nonlocal_name * {v}",
    "{n} = [q * 2.0 for q in range(3)]",
    "{n} = np.sum([{v} * k for k in (1.0, 2.0)])",
    "{n} = {{k: {v} for k in 'ab'}}['a']",
    "{n} = sum(q for q in (1.0, 2.0)) * {v}",
    "{n} = undefined_function({v})",
    "{n} = np.not_a_numpy_function({v})",
    "{n} = {v}.not_an_attribute",
    "{n} = {v}.sum().not_an_attribute",
    "{n} = np.linalg.no_such_function({v})",
    "{n} = np.sum(np.abs(np.fft.fft({v})))",
    "{n} = np.sort({v})",
    "{n} = np.random.rand(3) * {v}",
    "{p} += 1.0",
    "{p} *= 2.0",
    "{n} = {p}\n{n} += 1.0",
    "{n} = {p}[1:]\n{n} *= 2.0",
    "{p}[0] = 1.0",
    "{n} = {v} * 1.0\n{n}[0] = 2.0",
    "{n} = {v} * 1.0\n{n}[...] += 2.0",
    "{v}.attr = 1",
    "{n} = {v} if np.sum({v}) > 0 else -{v}",
    "{n} = {v} and {v}",
    "{n} = not {v}",
    "{n} = ~({v} > 0)",
    "assert np.all(np.isfinite({v}))",
    "assert {v} is not None, 'message'",
    "print(end='')",
    "print(np.sum({v}), end='')",
    "{n} = len({v})",
    "{n} = {v}.shape[0] * {v}",
    "{n} = np.shape({v})",
    "{n} = np.array([{v}, {v}])",
    "{n} = np.stack([{v}, {v}])",
    "{n} = np.concatenate([np.ravel({v}), np.ravel({v})])",
    "{n} = np.zeros(3) + {v}",
    "{n} = np.ones_like({v}) * {v}",
    "{n} = ({v}, {v})\n{n}_a, {n}_b = {n}",
    "{n} = [{v}, {v}][0]",
    "{n} = {{'a': {v}}}['a']",
    "{n} = {v}[::-1]",
    "{n} = {v}[None]",
    "{n} = {v}[..., 0]",
    "{n} = {v}[{v} > 0]",
    "{n} = {v}[[0, 0]]",
    "{n} = {v}[np.array([0, -1])]",
    "{n} = abs({v})",
    "{n} = max({v}, 1.0)",
    "{n} = float({v})",
    "{n} = int({v})",
    "{n} = round({v})",
    "{n} = {v} @ {v}",
    "{n} = {v} % 1.5",
    "{n} = {v} // 2",
    "{n} = 2.0 ** {v}",
    "{n} = {v} ** {v}",
    "{n} = np.sum({v}, axis=5)",
    "{n} = np.sum({v}, axis=(0, 1))",
    "{n} = np.sum({v}, 0)",
    "{n} = np.sum({v}, where={v} > 0)",
    "{n} = np.mean({v}, axis=-1, keepdims=True)",
    "{n} = np.max({v}, axis=0)",
    "{n} = np.prod({v})",
    "{n} = np.cumsum({v})",
    "{n} = np.clip({v}, -0.5, 0.5)",
    "{n} = np.where({v} > 0, {v})",
    "{n} = np.where(0 < {v} < 1, {v}, 0.0)",
    "{n} = np.linalg.norm({v})",
    "{n} = np.linalg.inv({v})",
    "{n} = np.einsum('...->', {v})",
    "{n} = np.reshape({v}, (-1,))",
    "{n} = {v}.reshape(3, 2)",
    "{n} = {v}.astype(int) * {v}",
    "{n} = {v}.copy()",
    "{n} = {v}.T.T",
    "{n} = {v}.dot({v})",
    "{n} = np.float64({v})",
    "{n} = 1j * {v}",
    "{n} = None",
    "{n} = ...",
    "{n} = 'text'",
    "{n} = b'bytes' * 2",
    "{n} = f'{{{v}}}'",
    "{n} = {v} is None",
    "{n} = {v} in (1.0, 2.0)",
    "{n}: float",
    "{n}: float = {v}",
    "{n} = {n}_undefined = {v}",
    "{n} = ({n}_w := {v})",
    "{n}, *{n}_rest = (1.0, 2.0, 3.0)",
    "{n}, {n}_b = {v}",
    "{n}, {n}_b = 1.0, 2.0, 3.0",
    "({n}, {n}_b), {n}_c = (1.0, {v}), {v}",
    "[{n}, {n}_b] = [{v}, {v}]",
    "{n} = np.sum(*[{v}])",
    "{n} = np.sum(**{{'a': {v}}})",
    "{n} = helper({v})",
    "{n} = np.sin(x=1.0)",
    "{n} = {n}_b = {v} * 2.0",
    "{n} = +{v}",
    "{n} = (({v}))",
    "{n} = np.sum({v}, axis=None)",
    "{n} = np.sum({v}, keepdims=True)",
    "{n} = {v}.sum(0)",
    "{n} = np.mean({v}, 0)",
    "{n} = np.pi * {v}",
    "{n} = np.e ** {v}",
    "{n} = np.inf * 0 + {v}",
    "{n} = {v} * True",
    "{n} = math.pi * {v}",
    "{n} = np.where(True, {v}, 0.0)",
    "{n} = {v} == {v}",
    "{n} = np.asarray({v})",
    "{n} = np.array({v}) * 2.0",
    "{n} = np.float64(2.0) * {v}",
    "{n} = {v}.item()",
    "{n} = {v}.real",
    "{n} = np.exp({v}).astype(np.float32)",
    "{n} = np.sin({v}, dtype=np.float32)",
    "{n} = np.linalg.det(np.eye(2) * {v})",
    "{n} = np.exp({v})\n{n} = np.log({n})",
    "{n} = {v} * 1.0\n{n} = {n} * {n}\n{n} += {n}",
    "{n} = {v} * 1.0\n{n} *= {n}",
    "{n} = {v} * 1.0\n{n} -= {n}",
    "{n} = np.sum({v}) * 1.0\n{n} /= 2.0\n{n} **= 2",
    "{n} = {v} * 1.0\n{n} @= np.eye(3)",
    "{n} = {v} * 1.0\n{n} //= 2.0",
    "{n} = {v} * 1.0\n{n} %= 2.0",
    "{p} = {p} * 2.0\n{p} += 1.0",
    "{p} = {p}",
    "{p}, {v} = {v}, {p}",
    "{n} = 1.0\n{n} += {v}\n{n} += {v}",
    "{n} = np.sin({v}, out=None)",
    "{n} = math.sin({v})",
    "{n} = math.log({v})",
    "{n} = {v} / 0.0",
    "{n} = {v} / (1 - 1)",
    "{n} = {v} * {n}_later\n{n}_later = 1.0",
    "raise ValueError('no')",
    "yield {v}",
    "return",
    "return {v}",
    "return {v}, {v}",
    "return None",
    "return 'text'",
    "pass",
    "'''a docstring-like string'''",
    "{v}",
    "import os",
    "from math import sin",
    "def inner(q):\n    return q * 2.0\n{n} = inner({v})",
    "class Inner:\n    pass",
    "match {v}:\n    case _:\n        pass",
    "{n} = np\n{n}_s = {n}.sin({v})",
    "np = 2.0",
    "math = None",
    "{n} = x_undefined_local\nx_undefined_local = 1.0",
)

_NOT_STRAIGHT_LINE = re.compile(
    r"\b(if|for|while|lambda|try|with|del|global|yield|return|class|def|match|import|raise|and|"
    r"not|is|in)\b|:="
)
# the templates that are straight-line code (half the insertions), and the others
_STRAIGHT = tuple(t for t in WILD_STATEMENTS if not _NOT_STRAIGHT_LINE.search(t))
_OTHER = tuple(t for t in WILD_STATEMENTS if _NOT_STRAIGHT_LINE.search(t))

# Changes to the function's header; "{params}" is the parameter list.
WILD_HEADERS = (
    "def f({params}):",
    "def f({params}, *args):",
    "def f({params}, **kwargs):",
    "def f({params}, /):",
    "def f({params}, *, k=2.0):",
    "def f({params}, extra=np.ones(3)):",
    "def f({params}) -> float:",
    "async def f({params}):",
    "@staticmethod\ndef f({params}):",
)


@dataclasses.dataclass(frozen=True)
class WildProgram:
    source: str
    shapes: tuple[tuple, ...]
    seed: int
    wrt: object

    def arguments(self) -> tuple:
        return Program("", "", (), self.shapes, self.seed).arguments()

    def __repr__(self) -> str:
        return (
            f"WildProgram(seed={self.seed}, shapes={self.shapes}, wrt={self.wrt!r}):\n{self.source}"
        )


def _compiles(program: WildProgram) -> bool:
    try:
        compile(program.source, "<wild>", "exec")
    except SyntaxError:  # e.g. `return x` in an async generator
        return False
    return True


@st.composite
def _wild_programs(draw) -> WildProgram:
    base = draw(programs())
    insertions = []
    for k in range(draw(st.integers(1, 3))):
        position = draw(st.integers(0, len(base.lines)))
        scope = base.scopes[min(position, len(base.scopes) - 1)]
        pool = draw(st.sampled_from((_STRAIGHT, _OTHER)))
        statement = draw(st.sampled_from(pool)).format(
            p=draw(st.sampled_from(base.params)),
            v=draw(st.sampled_from(scope)),
            n=f"wild{k}",
        )
        insertions.append((position, statement.split("\n")))
    lines = list(base.lines)
    for position, block in sorted(insertions, key=lambda item: -item[0]):
        lines[position:position] = block
    header = draw(st.sampled_from(WILD_HEADERS)).format(params=", ".join(base.params))
    source = base.source.split("\ndef f(", 1)[0] + "\ndef helper(q):\n    return q * 2.0\n\n\n"
    source += header + "\n" + "\n".join(f"    {line}" for line in lines) + "\n"
    wrt = draw(st.sampled_from((0, tuple(range(len(base.params))), base.params[-1])))
    return WildProgram(source, base.shapes, base.seed, wrt)


def wild_programs() -> st.SearchStrategy[WildProgram]:
    return _wild_programs().filter(_compiles)
