"""Random programs over the whole language of API.md, in combination.

`generate(seed)` draws a `Program`: globals, helper functions (defaults, keyword-only
parameters, recursion, a callee returning a tuple) and ``f`` (sometimes a closure made by a
factory). Its body mixes assignments, chained and augmented assignment (every operator; bitwise
ones on masks and integers), nested tuple unpacking, ``if``/``elif``/``else`` and one-line
compound statements, conditional expressions on loop-carried values, ``for`` over
``range``/``reversed``/arrays/lists/``enumerate``/``zip``, ``while`` with a counter and a value
condition, ``break``/``continue``, returns inside loops, lists/dicts/tuples whose slots are
written and read inside loops (``append``/``pop``, negative indices, ``h[i], c[i] =
cell(...)``), writes into local arrays (``y[i] =``, ``y[mask] =``, ``y[1:3] +=``),
comprehensions, globals and comments at column 0.

Values are Python floats ("S"), 3-vectors ("V") and 3x3 matrices ("X", whose rows are views:
``for row in X``, ``X[i]``, ``X[i][j] = s``) built from well-conditioned operations, so that
derivatives stay moderate; every kink goes through the recorder in the check twin. What
API.md rejects is never drawn: no argument is changed in place (a callee appending to its
caller's list included), and an array written in place is never shared with another name or a
container (a stored value reads it through ``.copy()``). Static knowledge (kinds, list lengths,
index bounds) keeps every program valid Python that runs without error: the fuzzer tests the
compiler, not the grammar.
"""

from __future__ import annotations

import dataclasses
import random

from .program import Function, Text, fmt, kink

LITERALS = ("0.5", "1.5", "0.25", "2.0", "0.75", "1e-1", "3.")
GLOBALS = [
    "G0 = 0.7",
    "G1 = -0.4",
    "GV = np.array([0.5, -1.0, 0.25])",
    "GL = [0.3, -0.2]",
    "GM = np.array([[0.5, -0.2, 0.1], [0.3, 0.8, -0.6], [-0.4, 0.2, 0.9]])",
    "\n\nclass Rec(typing.NamedTuple):\n    a: float\n    b: np.ndarray\n    c: float = 0.5\n",
    "\n@dataclasses.dataclass(frozen=True)\nclass RecD:\n    a: float\n    b: np.ndarray\n"
    "    c: float = 0.5\n",
]
# names that collide with what the compiler invents, drawn now and then
TRICKY = ("dx", "_t1", "tx", "_batch", "dv", "_stack", "unbroadcast", "d_t1", "ans", "g")
S_UNARY = (
    "np.sin({})",
    "np.cos({})",
    "np.tanh({})",
    "math.sin({})",
    "np.sqrt(1.0 + ({0}) * ({0}))",
    "pow({}, 2)",
    "pow(1.0 + ({0}) * ({0}), 0.5)",
)
V_COMPLEX = (
    "np.real(({}) * (0.5 - 0.8j))",
    "np.imag(np.exp(1j * ({})))",
    "np.abs(({}) + 0.7j)",
    "np.real(({})[::-1] * np.array([1 + 1j, 2.0, 3j]))",
    "np.real(np.fft.ifft(np.fft.fft({}) * (1.0 + 0.5j)))",
)
V_UNARY = (
    "np.sin({})",
    "np.cos({})",
    "np.tanh({})",
    "np.sqrt(1.0 + ({0}) * ({0}))",  # (parenthesized: {0} may be a sum)
    "np.exp(-({0}) * ({0}))",
)


@dataclasses.dataclass
class Var:
    kind: str  # S float, V 3-vector, X 3x3 matrix, I int, M bool 3-vector, LS/LV list, D dict,
    # T tuple
    mutable: bool = False  # a V or X whose memory is its own: slot writes and += allowed
    bound: int = 0  # I: the largest value it takes
    length: int = 0  # lists: the length known to hold (the minimum)
    exact: bool = True  # lists: `length` is the exact length
    items: tuple = ()  # D: keys; T: kinds of the items


@dataclasses.dataclass
class Loop:
    trips: int | None  # None when data-dependent
    exits: bool  # break/continue allowed
    grows: bool  # append allowed
    iterated: frozenset = frozenset()
    is_while: bool = False


class Generator:
    def __init__(self, seed: int, size: int = 6):
        self.rng = random.Random(seed)
        self.seed = seed
        self.size = size
        self.counter = 0
        self.tricky_given: set[str] = set()
        self.helpers: list[Function] = []
        self.helper_sigs: list[tuple] = []  # (name, kind, signature kind)
        self.outermost = True  # the next expression drawn is a whole value, not an operand

    # ---- small utilities -------------------------------------------------------------------

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def choice(self, seq):
        return self.rng.choice(list(seq))

    def fresh(self, scope: dict, stem: str) -> str:
        if self.chance(0.08):
            name = self.choice(TRICKY)
            if name not in scope and name not in self.tricky_given:
                # (once a program: two fresh names asked for before either is in scope, a
                # loop's total and its rows, were the same tricky name; seed 30000379)
                self.tricky_given.add(name)
                return name
        self.counter += 1
        return f"{stem}{self.counter}"

    def of_kind(self, scope: dict, kind: str, mutable: bool | None = None) -> list[str]:
        return [
            n
            for n, v in scope.items()
            if v.kind == kind and (mutable is None or v.mutable == mutable)
        ]

    # ---- expressions -----------------------------------------------------------------------

    def lit(self) -> Text:
        return Text.plain(self.choice(LITERALS))

    def index(self, scope: dict, size: int) -> str:
        """An index valid for a sequence of length `size`."""
        ints = [n for n in self.of_kind(scope, "I") if scope[n].bound < size]
        if ints and self.chance(0.5):
            name = self.choice(ints)
            return f"-1 - {name}" if self.chance(0.2) else name
        return str(self.rng.randrange(-size, size))

    def scalar_leaf(self, scope: dict) -> Text:
        options = [lambda: self.lit(), lambda: Text.plain(self.choice(("G0", "G1", "GL[0]")))]
        names = self.of_kind(scope, "S")
        if names:
            options += [lambda: Text.plain(self.choice(names))] * 4
        vectors = [*self.of_kind(scope, "V"), "GV"]
        options.append(lambda: Text.plain(f"{self.choice(vectors)}[{self.index(scope, 3)}]"))
        lists = [n for n in self.of_kind(scope, "LS") if scope[n].length > 0]
        if lists:
            options.append(lambda: self.list_read(scope, self.choice(lists)))
        dicts = self.of_kind(scope, "D")
        if dicts:
            d = self.choice(dicts)
            options.append(lambda: Text.plain(f'{d}["{self.choice(scope[d].items)}"]'))
            options.append(  # d.get: a key it has, or one it lacks (the default)
                lambda: Text.plain(f'{d}.get("{self.choice((*scope[d].items, "z"))}", 0.5)')
            )
        tuples = [n for n in self.of_kind(scope, "T") if "S" in scope[n].items]
        if tuples:
            t = self.choice(tuples)
            k = self.choice([i for i, kind in enumerate(scope[t].items) if kind == "S"])
            options.append(lambda: Text.plain(f"{t}[{k}]"))
        if "k" in scope and scope["k"].kind == "CLOSURE":
            options.append(lambda: Text.plain("k"))
        return self.choice(options)()

    def list_read(self, scope: dict, name: str) -> Text:
        return Text.plain(f"{name}[{self.index(scope, scope[name].length)}]")

    def vector_leaf(self, scope: dict, stored: bool = False) -> Text:
        """A vector name; a `stored` value (the whole right side of an assignment, an item of
        a container) reads a mutable array through a copy, so that a later in-place write to
        it changes nothing else (aliasing with in-place writes is refused by design)."""
        names = self.of_kind(scope, "V")
        options = [lambda: Text.plain("GV")]

        def name() -> Text:
            chosen = self.choice(names)
            return Text.plain(f"{chosen}.copy()" if stored and scope[chosen].mutable else chosen)

        if names:
            options += [name] * 4
        lists = [n for n in self.of_kind(scope, "LV") if scope[n].length > 0]
        if lists:
            options.append(lambda: self.list_read(scope, self.choice(lists)))
        return self.choice(options)()

    def scalar(self, scope: dict, depth: int = 0) -> Text:
        outermost, self.outermost = self.outermost, False
        try:
            return self._scalar(scope, depth)
        finally:
            self.outermost = outermost

    def vector(self, scope: dict, depth: int = 0) -> Text:
        outermost, self.outermost = self.outermost, False
        try:
            if depth >= 2 or self.chance(0.25):
                return self.vector_leaf(scope, stored=outermost)
            return self._vector(scope, depth)
        finally:
            self.outermost = outermost

    def _scalar(self, scope: dict, depth: int) -> Text:
        if depth >= 2 or self.chance(0.25):
            return self.scalar_leaf(scope)
        a = lambda: self.scalar(scope, depth + 1)  # noqa: E731
        v = lambda: self.vector(scope, depth + 1)  # noqa: E731
        m = lambda: self.matrix(scope, depth + 1)  # noqa: E731
        options = [
            lambda: fmt("{} + {}", a(), a()),
            lambda: fmt("{} - {}", a(), a()),
            lambda: fmt("{} * {}", self.lit(), a()),
            lambda: fmt("({}) * ({})", a(), a()),
            lambda: fmt("({}) / (1.0 + ({}) ** 2)", a(), a()),
            lambda: fmt(self.choice(S_UNARY), a()),
            lambda: fmt("np.sum({})", v()),
            lambda: fmt("np.mean({})", v()),
            lambda: fmt("np.dot({}, {})", v(), v()),
            lambda: fmt("({}) @ ({})", v(), v()),
            lambda: fmt("({}) ** 2", a()),
            lambda: kink("abs({})", "_abs({})", a()),
            lambda: kink("max({}, {})", "_max({}, {})", a(), a()),
            lambda: kink("np.max({})", "_rmax({})", v()),
            lambda: fmt("({} if {} else {})", a(), self.condition(scope), a()),
            lambda: fmt("np.sum({} * {})", v(), v()),
            lambda: fmt("np.sum(({})[1:] * ({})[:-1])", v(), v()),
            # (parenthesized whole: ``v * (k) % 2.0`` is ``(v * k) % 2.0``, the twin's
            # ``v * _mod(k, 2.0)`` another function: fuzz seed 3706352)
            lambda: kink("(({}) % 2.0)", "_mod({}, 2.0)", a()),
            # assembling functions (moved elements, keyword arguments that vary)
            lambda: fmt("np.tensordot({}, {}, axes=1)", v(), v()),
            lambda: fmt("np.sum(np.diff({}) ** 2)", v()),
            lambda: fmt("np.sum(np.kron({}, ({})[:2]))", v(), v()),
            lambda: fmt("np.sum(np.tril(np.outer({}, {}), -1))", v(), v()),
            # functions differentiated through their definitions (runtime/definitions.py)
            lambda: fmt("np.trapezoid({}, dx={})", v(), a()),
            lambda: fmt("np.average({}, weights=({}) ** 2 + 1.0)", v(), v()),
            lambda: kink("np.median({})", "_quantile({}, 0.5)", v()),
            lambda: kink("np.quantile({}, 0.3)", "_quantile({}, 0.3)", v()),
            lambda: kink("np.ptp({})", "_ptp({})", v()),
            lambda: fmt("sum([{}, {}], {})", a(), a(), a()),
            # a primitive's list of arrays read as one array
            lambda: fmt("np.var(np.split({}, 3)) + np.sum(np.square(np.split({}, 3)))", v(), v()),
            lambda: fmt("np.abs(np.dot({}, {}) + 0.5j)", v(), v()),
            lambda: fmt("np.real(np.sum(({}) * (0.3 + 1j)) ** 2)", v()),
        ]
        matrices = [  # (one option among the others: matrices in about half the programs)
            lambda: fmt("np.trace({})", m()),
            lambda: fmt("np.sum({})", m()),
            lambda: fmt(f"({{}})[{self.index(scope, 3)}, {self.index(scope, 3)}]", m()),
            lambda: fmt("np.sum(({}) * ({}))", m(), m()),
            lambda: fmt("({}) @ ({}) @ ({})", v(), m(), v()),
            lambda: fmt('np.einsum("ii->", {})', m()),
            lambda: fmt("np.linalg.det(np.eye(3) + 0.2 * ({}))", m()),
            lambda: fmt("np.var({})", m()),
        ]
        options += [lambda: self.choice(matrices)()] * 2
        lists = [n for n in self.of_kind(scope, "LS") if scope[n].length > 0]
        if lists:  # NumPy reductions of a Python list, and of one repeated (``L * 2``)
            options.append(
                lambda: fmt(
                    f"np.{self.choice(('sum', 'mean', 'var', 'prod'))}({self.choice(lists)})"
                )
            )
            options.append(
                lambda: fmt(f"np.mean(np.array({self.choice(lists)} * 2) * ({{}}))", a())
            )
        triples = [n for n in self.of_kind(scope, "LS") if scope[n].length == 3 and scope[n].exact]
        if triples:  # a list of numbers as an operand read as one array (batched sweeps
            # stack its tangents directions first)
            options.append(lambda: fmt(f"np.dot({self.choice(triples)}, {{}})", v()))
            options.append(lambda: fmt(f'np.einsum("i,i->", {self.choice(triples)}, {{}})', v()))
            options.append(lambda: fmt(f"np.sum(np.cross({self.choice(triples)}, {{}}))", v()))
        rows = [n for n in self.of_kind(scope, "LV") if scope[n].length > 0]
        if rows:  # a list of vectors (rows of a matrix) as an operand read as one array
            options.append(lambda: fmt(f"np.sum(np.dot({self.choice(rows)}, {{}}) ** 2)", v()))
            options.append(lambda: fmt(f"np.sum(np.matmul({self.choice(rows)}, {{}}))", v()))
            options.append(
                lambda: fmt(f"np.sum(np.tensordot({self.choice(rows)}, {{}}, axes=1))", v())
            )
        if self.helper_sigs:
            options.append(lambda: self.helper_call(scope, "S", depth))
        return self.choice(options)()

    def _vector(self, scope: dict, depth: int) -> Text:
        a = lambda: self.scalar(scope, depth + 1)  # noqa: E731
        v = lambda: self.vector(scope, depth + 1)  # noqa: E731
        m = lambda: self.matrix(scope, depth + 1)  # noqa: E731
        options = [
            lambda: fmt("{} + {}", v(), v()),
            lambda: fmt("{} - {}", v(), a()),
            lambda: fmt("{} * {}", self.lit(), v()),
            lambda: fmt("({}) * ({})", v(), a()),
            lambda: fmt("({}) * ({})", v(), v()),
            lambda: fmt(self.choice(V_UNARY), v()),
            lambda: fmt("({})[::-1]", v()),
            lambda: fmt("np.cumsum({}) * 0.5", v()),
            lambda: fmt("np.array([{}, {}, {}])", a(), a(), a()),
            lambda: kink("np.abs({})", "_npabs({})", v()),
            lambda: kink("np.maximum({}, {})", "_maximum({}, {})", v(), a()),
            lambda: kink(
                "np.where({} > {}, {}, {})", "np.where(_gt({}, {}), {}, {})", v(), a(), v(), v()
            ),
            lambda: fmt("np.concatenate([({})[:1], ({})[1:] * 0.5])", v(), v()),
            lambda: fmt("({})[[0, 2, 2], 1]", m()),  # an integer list beside a number
            lambda: fmt("({}) / (1.0 + ({}) ** 2)", v(), v()),
            # assembling functions (moved elements, keyword arguments that vary)
            lambda: fmt("np.roll({}, 1)", v()),
            lambda: fmt("np.take({}, [2, 0, 0])", v()),
            lambda: fmt("np.flipud({})", v()),
            lambda: fmt("np.tile(({})[:1], 3)", v()),
            lambda: fmt("np.append(({})[:2], {})", v(), a()),
            lambda: fmt("np.hstack([({})[:1], ({})[1:]])", v(), v()),
            lambda: fmt("np.pad(({})[1:], (1, 0), constant_values={})", v(), a()),
            lambda: fmt("np.full(3, fill_value={})", a()),
            lambda: fmt("np.linspace({}, stop={}, num=3)", a(), a()),
            lambda: fmt("np.cross({}, {})", v(), v()),
            lambda: fmt("np.diag(np.outer({}, {}))", v(), v()),
            lambda: kink("np.sort({})", "_sort({})", v()),
            # builtin sum of a vector and a number, from a start that varies
            lambda: fmt("sum([{}, {}], {})", v(), a(), a()),
            # complex values on the way (a real input's derivative is real): a complex
            # constant, a slice of one, exponentials, the FFT there and back
            lambda: fmt(self.choice(V_COMPLEX), v()),
            # Python lists of numbers among the pieces (their tangents are lists too)
            lambda: fmt("np.concatenate([[{}], ({})[1:]])", a(), v()),
            lambda: fmt("np.hstack([[{}], [{}], [2.0]])", a(), a()),
        ]
        matrices = [  # products, a row (a view), a column, reductions along an axis
            lambda: fmt("({}) @ ({})", m(), v()),
            lambda: fmt("({}) @ ({})", v(), m()),
            lambda: fmt(f"({{}})[{self.index(scope, 3)}]", m()),
            lambda: fmt(f"({{}})[:, {self.index(scope, 3)}]", m()),
            lambda: fmt(
                f"np.{self.choice(('sum', 'mean'))}({{}}, axis={self.rng.randrange(2)})", m()
            ),
            lambda: fmt("np.diag({})", m()),
            lambda: fmt("np.linalg.solve(np.eye(3) * 3.0 + 0.2 * ({}), {})", m(), v()),
            lambda: fmt('np.einsum("ij,j->i", {}, {})', m(), v()),
        ]
        options += [lambda: self.choice(matrices)()] * 2
        masks = self.of_kind(scope, "M")
        if masks:
            options.append(lambda: fmt("np.where({}, {}, {})", self.choice(masks), v(), a()))
        stackable = [n for n in self.of_kind(scope, "LV") if scope[n].length > 0]
        if stackable:  # a list of vectors stacked, in either order
            options.append(
                lambda: Text.plain(f"np.sum(np.stack({self.choice(stackable)}), axis=0)")
            )
            options.append(
                lambda: Text.plain(f"np.mean(np.array({self.choice(stackable)}[::-1]), axis=0)")
            )
        triples = [n for n in self.of_kind(scope, "LS") if scope[n].length == 3 and scope[n].exact]
        if triples:
            options.append(lambda: Text.plain(f"np.array({self.choice(triples)})"))
            # a list as one operand of ``+`` / ``*`` with an array is read as one array
            # (parenthesized: ``0.25 * L + v`` would multiply the list first)
            options.append(lambda: fmt(f"({self.choice(triples)} + ({{}}))", v()))
            options.append(lambda: fmt(f"({{}}) * {self.choice(triples)}", v()))
            options.append(lambda: fmt(f"np.cross({self.choice(triples)}, {{}})", v()))
            options.append(lambda: fmt(f"np.cumprod({self.choice(triples)}) * ({{}})", v()))
        square = [n for n in stackable if scope[n].length == 3 and scope[n].exact]
        if square:  # three rows as a matrix operand
            options.append(lambda: fmt(f"np.matmul({self.choice(square)}, {{}})", v()))
            options.append(lambda: fmt(f'np.einsum("ij,j->i", {self.choice(square)}, {{}})', v()))
        if self.helper_sigs:
            options.append(lambda: self.helper_call(scope, "V", depth))
        return self.choice(options)()

    def matrix_leaf(self, scope: dict, stored: bool = False) -> Text:
        """A matrix name (a mutable one through a copy when `stored`, as `vector_leaf`)."""
        names = self.of_kind(scope, "X")
        if not names or self.chance(0.25):
            return Text.plain("GM")
        chosen = self.choice(names)
        return Text.plain(f"{chosen}.copy()" if stored and scope[chosen].mutable else chosen)

    def matrix(self, scope: dict, depth: int = 0) -> Text:
        outermost, self.outermost = self.outermost, False
        try:
            if depth >= 2 or self.chance(0.3):
                return self.matrix_leaf(scope, stored=outermost)
            return self._matrix(scope, depth)
        finally:
            self.outermost = outermost

    def _matrix(self, scope: dict, depth: int) -> Text:
        a = lambda: self.scalar(scope, depth + 1)  # noqa: E731
        v = lambda: self.vector(scope, depth + 1)  # noqa: E731
        m = lambda: self.matrix(scope, depth + 1)  # noqa: E731
        options = [
            lambda: fmt("np.outer({}, {})", v(), v()),
            lambda: fmt("{} + {}", m(), m()),
            lambda: fmt("({}) * ({})", m(), a()),
            lambda: fmt("{} * {}", self.lit(), m()),
            lambda: fmt("({}) * ({})", m(), v()),  # (broadcast along the rows)
            lambda: fmt(self.choice(V_UNARY), m()),
            lambda: fmt("({}).T", m()),
            lambda: fmt("np.transpose({})", m()),
            lambda: fmt("({}) @ ({}) / 3.0", m(), m()),
            lambda: fmt("np.vstack([{}, {}, {}])", v(), v(), v()),
            lambda: fmt("np.stack([{}, {}, {}], axis=1)", v(), v(), v()),
            lambda: fmt("np.diag({})", v()),
            lambda: kink(
                "np.where({} > {}, {}, {})", "np.where(_gt({}, {}), {}, {})", m(), a(), m(), m()
            ),
            lambda: fmt("np.triu({})", m()),
            lambda: fmt("np.tril({}, -1) + np.eye(3)", m()),
            lambda: fmt("({})[::-1]", m()),
            lambda: fmt("({})[:, ::-1]", m()),
            lambda: fmt("np.eye(3) * ({}) + {}", a(), m()),
            lambda: fmt("np.linalg.inv(np.eye(3) * 3.0 + 0.2 * ({}))", m()),
            lambda: fmt("np.linalg.multi_dot([{}, {}, {}]) / 9.0", m(), m(), m()),
            lambda: fmt("np.vstack([{}, [1.0, {}, {}], {}])", v(), a(), a(), v()),
            lambda: fmt("np.real(({}) * (1.0 + 0.5j))", m()),
            # an integer list beside a slice: columns or rows, a slot repeated
            lambda: fmt("({})[:, [2, 2, 0]]", m()),
            lambda: fmt("({})[[1, 0, 1], :]", m()),
            lambda: fmt("({})[np.ix_([0, 2, 1], [1, 0, 2])]", m()),
        ]
        return self.choice(options)()

    def value(self, scope: dict, kind: str, depth: int = 0) -> Text:
        if kind == "X":
            return self.matrix(scope, depth)
        return self.scalar(scope, depth) if kind == "S" else self.vector(scope, depth)

    def fresh_value(self, scope: dict, kind: str) -> Text:
        """A value that shares memory with nothing (what a mutable array starts from)."""
        if kind == "S":
            return self.scalar(scope)
        if kind == "X":
            return self.choice(
                [
                    lambda: fmt("({}) * 1.0", self.matrix(scope, 1)),
                    lambda: fmt("np.copy({})", self.matrix_leaf(scope)),
                    lambda: fmt("({}).copy()", self.matrix_leaf(scope)),
                    lambda: Text.plain("np.zeros((3, 3))"),
                    lambda: fmt("np.outer({}, {})", self.vector(scope, 1), self.vector(scope, 1)),
                ]
            )()
        return self.choice(
            [
                lambda: fmt("({}) * 1.0", self.vector(scope, 1)),
                lambda: fmt("np.copy({})", self.vector_leaf(scope)),
                lambda: fmt("({}).copy()", self.vector_leaf(scope)),
                lambda: Text.plain("np.zeros(3)"),
                lambda: fmt("np.sin({})", self.vector(scope, 1)),
            ]
        )()

    def condition(self, scope: dict) -> Text:
        ints = self.of_kind(scope, "I")
        options = [
            lambda: kink("{} > {}", "_gt({}, {})", self.scalar(scope, 1), self.scalar(scope, 2)),
            lambda: kink("{} < {}", "_lt({}, {})", self.scalar(scope, 1), self.lit()),
        ]
        if ints:
            i = self.choice(ints)
            options += [
                lambda: Text.plain(f"{i} % 2 == 0"),
                lambda: Text.plain(f"{i} == {self.rng.randrange(0, scope[i].bound + 1)}"),
            ]
        cond = self.choice(options)()
        if self.chance(0.15):
            joiner = self.choice((" and ", " or "))
            other = self.choice(options)()
            cond = fmt("{}" + joiner + "{}", cond, other)
        return cond

    def mask(self, scope: dict) -> Text:
        return kink("{} > {}", "_gt({}, {})", self.vector(scope, 1), self.scalar(scope, 2))

    def helper_call(self, scope: dict, kind: str, depth: int) -> Text:
        fitting = [s for s in self.helper_sigs if s[1] == kind]
        if not fitting:
            return self.value(scope, kind, 2)
        name, _, params = self.choice(fitting)
        if name.startswith("rec"):
            return fmt(f"{name}({{}}, {self.rng.randrange(0, 3)})", self.scalar(scope, 2))
        if name.startswith("ls"):  # def ls(a, xs, n): a list, read as one array
            lists = [n for n in self.of_kind(scope, "LS") if scope[n].length > 0]
            if lists and self.chance(0.6):
                items = Text.plain(self.choice(lists))
            else:  # (three numbers: as many as a vector argument's directions)
                items = fmt("[{}, {}, {}]", *(self.scalar(scope, 2) for _ in range(3)))
            count = self.rng.randrange(0, 3)
            return fmt(f"{name}({{}}, {{}}, {count})", self.scalar(scope, 2), items)
        if name.startswith("pr"):  # a primitive: one argument
            return fmt(f"{name}({{}})", self.value(scope, params[0], 2))
        if name.startswith("va"):  # def va(a, *rest, **opts): extra numbers, and opts["s"]
            args = [self.value(scope, params[0], 2)]
            args += [self.scalar(scope, 2) for _ in range(self.rng.randrange(0, 3))]
            text = fmt(f"{name}(" + ", ".join(["{}"] * len(args)), *args)
            return fmt("{}, s={})", text, self.lit())
        args = [self.value(scope, p, 2) for p in params]
        if self.chance(0.2):  # spread from literals: h(*(a, b), **{"c": v})
            args.append(self.scalar(scope, 2))
            text = fmt(f"{name}(*(" + ", ".join(["{}"] * len(args)) + ")", *args)
            if self.chance(0.5):
                text = fmt('{}, **{{"c": {}}}', text, self.lit())
            return text.map("{})")
        text = fmt(f"{name}(" + ", ".join(["{}"] * len(args)), *args)
        if self.chance(0.4):
            text = fmt("{}, b={}", text, self.scalar(scope, 2))
        if self.chance(0.4):
            text = fmt("{}, c={}", text, self.lit())
        return text.map("{})")
