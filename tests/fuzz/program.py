"""The program tree the fuzzer generates, renders and reduces.

A program is a module: globals, helper functions and the differentiated function ``f`` (or a
factory ``make`` whose closure is ``f``). Every piece of text is a `Text`: the source a user
would write and its *check* twin, the same code with every kink (comparison, ``abs``, ``max``,
``np.where``...) routed through a recorder, so the oracle can reject inputs that sit close to a
kink, where finite differences are meaningless. Statements form a tree (`Simple`, `Block`), so
the reducer can delete a statement or splice a block's body in its place and render again.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Text:
    """Source text and its instrumented twin."""

    src: str
    chk: str

    @staticmethod
    def plain(text: str) -> Text:
        return Text(text, text)

    def map(self, template: str) -> Text:
        """``template`` with ``{}`` replaced by this text (in both twins)."""
        return Text(template.format(self.src), template.format(self.chk))


def fmt(template: str, *parts: Text | str) -> Text:
    """``template.format(*parts)`` in both twins (a str part is the same in both)."""
    src = [p.src if isinstance(p, Text) else p for p in parts]
    chk = [p.chk if isinstance(p, Text) else p for p in parts]
    return Text(template.format(*src), template.format(*chk))


def kink(template: str, check_template: str, *parts: Text | str) -> Text:
    """Text whose twin differs: ``check_template`` calls a recorder instead of the kink."""
    src = [p.src if isinstance(p, Text) else p for p in parts]
    chk = [p.chk if isinstance(p, Text) else p for p in parts]
    return Text(template.format(*src), check_template.format(*chk))


@dataclasses.dataclass
class Simple:
    """One line (``x = ...``, ``h.append(...)``, ``break``, ``return ...``)."""

    text: Text


@dataclasses.dataclass
class Return(Simple):
    """A ``return`` of ``f`` itself (not of a function defined inside it): ``value`` is what
    it returns, which `Program.render` can also return with an aux (the ``has_aux`` mode)."""

    value: Text | None = None

    def with_aux(self) -> Simple:
        """``return value, aux``: the aux a dict of a number or array computed from the value
        and a string (a pytree the transform must give back as ``f`` computed it)."""
        return Simple(
            fmt('return {}, {{"twice": ({}) * 2.0, "tag": "aux"}}', self.value, self.value)
        )


@dataclasses.dataclass
class Block:
    """A compound statement: ``header`` then ``body``; ``orelse`` for if/else chains.

    ``inline`` renders a one-statement body on the header's line (``if c: y = 2 * x``).
    ``setup`` lines run before the header and belong to it (a ``while`` loop's counter).
    """

    header: Text
    body: list
    orelse: list | None = None
    else_header: str = "else:"  # "elif" renders an else holding one if as elif
    inline: bool = False
    setup: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Comment:
    """A comment line written at column 0 inside an indented block."""

    text: str


@dataclasses.dataclass
class Function:
    header: str  # "def f(x, v):"
    body: list


@dataclasses.dataclass
class Program:
    """A whole module. ``params`` are ``(name, kind)`` with kind "S" (float), "V" (3-vector)
    "R" (a ``Rec(a, b, c)`` NamedTuple of a float, a 3-vector and a float) or "RD" (``RecD``,
    the same fields in a frozen dataclass)."""

    globals_: list[str]
    helpers: list[Function]
    main: Function
    params: list[tuple[str, str]]
    out_kind: str  # "S" or "V"
    closure: str | None = None  # the factory line ``f = make(0.3)`` when f is a closure
    seed: int = 0
    made: list[str] = dataclasses.field(default_factory=list)  # helpers made by factories
    entry: str = "closure"  # with `closure`, what f is (statements.ENTRIES)

    @property
    def returns_aux(self) -> bool:
        """Whether `render` can write ``f`` returning ``(value, aux)`` (programs reduced or
        pickled before `Return` existed cannot)."""
        return any(isinstance(body[i], Return) for body, i in statements_of(self.main.body))

    def render(self, check: bool = False, aux: bool = False) -> str:
        """The module's source; `check`: its check twin; `aux`: ``f`` returns ``(value, aux)``
        at each of its returns (``sg.grad(f, has_aux=True)``)."""
        if aux:
            main = Function(self.main.header, _with_aux(self.main.body))
            return dataclasses.replace(self, main=main).render(check)
        lines = ["import dataclasses", "import functools", "import math", "import typing", ""]
        lines += ["import numpy as np", ""]
        lines += ["import s2sgrad as sg", ""]
        lines += [*self.globals_, ""]
        for fn in self.helpers:
            if check and fn.header.startswith("@sg."):
                # the check twin only computes values (and has no source for the rules'
                # templates): a primitive is a plain function there, its rules are left out
                if not fn.header.startswith("@sg.primitive"):
                    continue
                fn = dataclasses.replace(fn, header=fn.header.split("\n", 1)[1])
            lines += [*_render_function(fn, check, 0), ""]
        made = getattr(self, "made", [])  # (reproducers pickled before factories lack it)
        if made:
            lines += [*made, ""]
        if self.closure is None:
            lines += _render_function(self.main, check, 0)
        else:
            lines += _render_entry(self.main, getattr(self, "entry", "closure"), check)
            lines += ["", self.closure]
        return "\n".join(lines) + "\n"


def _with_aux(body: list) -> list:
    """`body` with every `Return` of ``f`` returning an aux too (a copy)."""
    changed = []
    for statement in body:
        if isinstance(statement, Return):
            statement = statement.with_aux()
        elif isinstance(statement, Block):
            orelse = None if statement.orelse is None else _with_aux(statement.orelse)
            statement = dataclasses.replace(
                statement, body=_with_aux(statement.body), orelse=orelse
            )
        changed.append(statement)
    return changed


def _render_entry(main: Function, entry: str, check: bool) -> list[str]:
    """``f``, which reads a captured ``k``, as the function `entry` says (the line binding
    ``f`` follows): inside a factory ``make(k)``; a method (``f``, or ``__call__``) of a class
    ``Model`` holding ``self.k``; or ``g`` taking ``k`` as a keyword-only parameter (for a
    partial or a lambda to fix)."""
    params = main.header[len("def f(") : -len("):")]
    if entry == "closure":
        return ["def make(k):", *_render_function(main, check, 1), "    return f"]
    if entry in ("method", "callable"):
        name = "f" if entry == "method" else "__call__"
        method = Function(
            f"def {name}(self, {params}):", [Simple(Text.plain("k = self.k")), *main.body]
        )
        init = ["    def __init__(self, k):", "        self.k = k", ""]
        # a method f may call as self.scaled(...) (one of its helpers: `statements.program`)
        scaled = [
            "    def scaled(self, a, b=0.5, *, c=1.0):",
            "        return (a * b + c) * self.k",
            "",
        ]
        return ["class Model:", *init, *scaled, *_render_function(method, check, 1)]
    return _render_function(Function(f"def g({params}, *, k):", main.body), check, 0)


def _render_function(fn: Function, check: bool, level: int) -> list[str]:
    pad = "    " * level
    return [pad + fn.header, *_render_body(fn.body, check, level + 1)]


def _pick(text: Text, check: bool) -> str:
    return text.chk if check else text.src


def _render_body(body: list, check: bool, level: int) -> list[str]:
    lines: list[str] = []
    for statement in body:
        lines += _render_statement(statement, check, level)
    if not any(not isinstance(s, Comment) for s in body):
        lines.append("    " * level + "pass")
    return lines


def _render_statement(statement, check: bool, level: int) -> list[str]:
    pad = "    " * level
    if isinstance(statement, Comment):
        return [statement.text]
    if isinstance(statement, Simple):
        return [pad + _pick(statement.text, check)]
    lines = [pad + _pick(s.text, check) for s in statement.setup]
    body = [s for s in statement.body if not isinstance(s, Comment)]
    header = pad + _pick(statement.header, check)
    if statement.inline and len(body) == 1 and isinstance(body[0], Simple):
        lines.append(header + " " + _pick(body[0].text, check))
    else:
        lines.append(header)
        lines += _render_body(statement.body, check, level + 1)
    orelse = statement.orelse
    if orelse is not None and statement.else_header == "elif" and _is_if(orelse):
        nested = _render_statement(orelse[0], check, level)
        return [*lines, pad + "el" + nested[0].lstrip(), *nested[1:]]
    if orelse is not None:
        lines.append(pad + "else:")
        lines += _render_body(orelse, check, level + 1)
    return lines


def _is_if(body: list) -> bool:
    """An else branch that is one plain ``if`` statement (rendered as ``elif``)."""
    return (
        len(body) == 1
        and isinstance(body[0], Block)
        and body[0].header.src.startswith("if ")
        and not body[0].setup
        and not body[0].inline
    )


def statements_of(body: list):
    """Every statement list in ``body`` and below it, as ``(list, index)`` pairs, deepest
    last (the reducer's candidates)."""
    for index, statement in enumerate(body):
        yield body, index
        if isinstance(statement, Block):
            yield from statements_of(statement.body)
            if statement.orelse is not None:
                yield from statements_of(statement.orelse)


@dataclasses.dataclass
class Snippet:
    """A fixed program (a reduced reproducer kept as a regression test): its source is its own
    check twin, so it must have no kink near the inputs its seed draws."""

    source: str
    params: list[tuple[str, str]]
    out_kind: str = "S"
    seed: int = 0

    def render(self, check: bool = False) -> str:
        return "import math\n\nimport numpy as np\n\n" + self.source
