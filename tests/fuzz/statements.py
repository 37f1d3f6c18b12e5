"""Statements, blocks and whole programs for the fuzzer (expressions are in grammar.py)."""

from __future__ import annotations

import copy

from .grammar import GLOBALS, Generator, Loop, Var
from .idioms import IdiomStatements
from .program import Block, Comment, Function, Program, Return, Simple, Text, fmt, kink

PARAMS = (("x", "S"), ("v", "V"), ("y", "S"), ("w", "V"))
# what f is when it reads a captured k (`Program.entry`): a function a factory made, a bound
# method or a callable object reading self.k, a functools.partial or a lambda fixing k
ENTRIES = ("closure", "method", "callable", "partial", "lambda")


class ProgramGenerator(IdiomStatements, Generator):
    """Draws statements with static knowledge of every local's kind and every list's length."""

    # ---- blocks and scopes -----------------------------------------------------------------

    def block(self, scope: dict, depth: int, loop: Loop | None, count: int) -> list:
        body: list = []
        for _ in range(count):
            body += self.statement(scope, depth, loop)
            if self.chance(0.06):
                body.append(Comment(f"# note {self.counter}"))
        return body

    def inner(self, scope: dict) -> dict:
        return {name: copy.copy(var) for name, var in scope.items()}

    def merge(self, scope: dict, *branches: dict, trips: int | None = 1) -> None:
        """Update `scope` after blocks ran: new names are dropped, lists keep the length
        every branch guarantees (times `trips` for a loop body that appended)."""
        for name, var in scope.items():
            if var.kind not in ("LS", "LV"):
                continue
            lengths = [b[name].length for b in branches]
            exact = all(b[name].exact for b in branches) and len(set(lengths)) == 1
            grown = min(lengths) - var.length
            if trips is None:
                var.length += min(grown, 0)
                var.exact = exact and grown == 0 and var.exact
            else:
                var.length += grown * trips if grown > 0 else grown
                var.exact = exact and var.exact

    # ---- statements ------------------------------------------------------------------------

    def statement(self, scope: dict, depth: int, loop: Loop | None) -> list:
        kinds = [
            ("assign", 6),
            ("reassign", 6),
            ("aug", 4),
            ("chain", 1),
            ("unpack", 2),
            ("list", 2),
            ("list_write", 4),
            ("pairs", 1),
            ("dict", 1),
            ("dict_write", 2),
            ("tuple", 1),
            ("array", 2),
            ("array_write", 4),
            ("mask", 1),
            ("comprehension", 1),
            ("int", 1),
            ("assert", 1),
            ("idiom", 2),
            ("nested_def", 1),
        ]
        if depth < 2:
            kinds += [("if", 4), ("for", 4), ("while", 1)]
        if depth > 0 and self.main_function:
            kinds.append(("return", 1))
        if loop is not None and loop.exits:
            kinds.append(("exit", 2))
        names = [k for k, w in kinds for _ in range(w)]
        for _ in range(20):
            made = getattr(self, "s_" + self.choice(names))(scope, depth, loop)
            if made:
                return made
        return self.s_assign(scope, depth, loop)

    def assignable(self, scope: dict) -> list[str]:
        # (not a global, not a field of a record argument: ``r.a = ...`` is no assignment)
        return [
            n
            for n, v in scope.items()
            if v.kind in ("S", "V", "X") and not n.startswith("G") and "." not in n
        ]

    def s_assign(self, scope, depth, loop):
        kind = self.choice("SSVSSVX")
        name = self.fresh(scope, {"S": "s", "V": "a", "X": "A"}[kind])
        mutable = kind != "S" and self.chance(0.4)
        value = self.fresh_value(scope, kind) if mutable else self.value(scope, kind)
        if self.chance(0.1):
            value = fmt("{}  # trailing", value)
        scope[name] = Var(kind, mutable=mutable)
        return [Simple(fmt(f"{name} = {{}}", value))]

    def s_reassign(self, scope, depth, loop):
        names = self.assignable(scope)
        if not names:
            return None
        name = self.choice(names)
        var = scope[name]
        if var.mutable:
            return [Simple(fmt(f"{name} = {{}}", self.fresh_value(scope, var.kind)))]
        if var.kind == "S" and self.chance(0.3):
            cond = self.condition(scope)
            return [
                Simple(
                    fmt(
                        f"{name} = {{}} if {{}} else {{}}",
                        self.scalar(scope, 1),
                        cond,
                        kink(f"-{name}", f"-{name}") if self.chance(0.5) else self.scalar(scope, 1),
                    )
                )
            ]
        return [Simple(fmt(f"{name} = {{}}", self.value(scope, var.kind)))]

    def s_aug(self, scope, depth, loop):
        names = [n for n in self.assignable(scope) if scope[n].kind == "S" or scope[n].mutable]
        if not names:
            return None
        name = self.choice(names)
        kind = scope[name].kind
        op = self.choice(("+=", "-=", "*=", "/=", "**=", "%="))
        if op == "%=":
            return [Simple(kink(f"{name} %= 2.0", f"{name} = _mod({name}, 2.0)"))]
        if op == "/=":
            return [Simple(fmt(f"{name} /= 1.0 + ({{}}) ** 2", self.value(scope, kind, 1)))]
        if op == "**=":
            return [Simple(Text.plain(f"{name} **= 2"))] if kind == "S" else None
        if op == "*=":
            return [Simple(fmt(f"{name} *= np.tanh({{}})", self.value(scope, kind, 1)))]
        return [Simple(fmt(f"{name} {op} {{}}", self.value(scope, kind)))]

    def s_chain(self, scope, depth, loop):
        kind = self.choice("SV")
        a, b = self.fresh(scope, "c"), self.fresh(scope, "c")
        if a == b:
            return None
        names = [
            n for n in self.assignable(scope) if scope[n].kind == kind and not scope[n].mutable
        ]
        value = self.value(scope, kind)
        scope[a] = Var(kind)
        if names and self.chance(0.4):  # y = z = y * x: rebinds an existing name too
            b = self.choice(names)
        else:
            scope[b] = Var(kind)
        return [Simple(fmt(f"{a} = {b} = {{}}", value))]

    def s_unpack(self, scope, depth, loop):
        choice = self.rng.randrange(4)
        if choice == 0:
            a, b = self.fresh(scope, "u"), self.fresh(scope, "u")
            if a == b:  # (before `scope` knows them: no statement defines them then)
                return None
            text = fmt(f"{a}, {b} = {{}}, {{}}", self.scalar(scope), self.vector(scope))
            scope[a], scope[b] = Var("S"), Var("V")
            return [Simple(text)]
        if choice == 1:
            a, b, c = (self.fresh(scope, "u") for _ in range(3))
            if len({a, b, c}) < 3:
                return None
            text = fmt(
                f"({a}, {b}), {c} = ({{}}, {{}}), {{}}",
                self.scalar(scope),
                self.scalar(scope),
                self.vector(scope),
            )
            scope[a], scope[b], scope[c] = Var("S"), Var("S"), Var("V")
            return [Simple(text)]
        if choice == 2:
            lists = [
                n
                for n in self.of_kind(scope, "LS") + self.of_kind(scope, "LV")
                if scope[n].exact and 1 < scope[n].length <= 3
            ]
            if not lists:
                return None
            name = self.choice(lists)
            targets = [self.fresh(scope, "u") for _ in range(scope[name].length)]
            if len(set(targets)) < len(targets):
                return None
            for t in targets:
                scope[t] = Var(scope[name].kind[1])
            return [Simple(Text.plain(f"{', '.join(targets)} = {name}"))]
        a, b, c = (self.fresh(scope, "u") for _ in range(3))
        if len({a, b, c}) < 3:
            return None
        text = fmt(f"{a}, {b}, {c} = {{}}", self.vector(scope))
        scope[a], scope[b], scope[c] = Var("S"), Var("S"), Var("S")
        return [Simple(text)]

    def s_list(self, scope, depth, loop):
        kind = self.choice("SSV")
        n = self.rng.randrange(1, 4)
        name = self.fresh(scope, "L")
        items = [self.value(scope, kind, 1) for _ in range(n)]
        scope[name] = Var("L" + kind, length=n)
        return [Simple(fmt(f"{name} = [" + ", ".join(["{}"] * n) + "]", *items))]

    def s_pairs(self, scope, depth, loop):
        """A list of pairs, each slot written in a loop (``states[t] = (m, P)``, a filter's
        per-step state), then one unpacked: a tuple a list's slot holds as it is."""
        if loop is not None:
            return None
        name, i = self.fresh(scope, "P"), self.fresh(scope, "i")
        m, s = self.fresh(scope, "m"), self.fresh(scope, "s")
        if len({name, i, m, s}) < 4:
            return None
        vector, scalar = self.value(scope, "V", 1), self.value(scope, "S", 1)
        body = [Simple(fmt(f"{name}[{i}] = (({{}}) * ({i} + 1.0), {{}})", vector, scalar))]
        scope[m], scope[s] = Var("V"), Var("S")
        which = self.choice(("0", "1", "-1"))
        return [
            Simple(Text.plain(f"{name} = [None] * 2")),
            Block(Text.plain(f"for {i} in range(2):"), body),
            Simple(Text.plain(f"{m}, {s} = {name}[{which}]")),
        ]

    def s_list_write(self, scope, depth, loop):
        lists = self.of_kind(scope, "LS") + self.of_kind(scope, "LV")
        if not lists:
            return None
        name = self.choice(lists)
        var = scope[name]
        kind = var.kind[1]
        op = self.rng.randrange(7)
        if op == 5 and (loop is None or (loop.grows and name not in loop.iterated)):
            # a join rebinds the list: ``L = L + [v]`` or ``L = [v] + L``
            value = self.value(scope, kind, 1)
            text = fmt(f"{name} = {name} + [{{}}]", value)
            if self.chance(0.5):
                text = fmt(f"{name} = [{{}}] + {name}", value)
            var.length += 1
            return [Simple(text)]
        if op == 6 and loop is None and 0 < var.length <= 3:  # a repeat: ``L = L * 2``
            var.length *= 2
            return [Simple(Text.plain(f"{name} = {name} * 2"))]
        if op == 0 and var.length > 0:  # slot write, reading a slot
            index = self.index(scope, var.length)
            read = self.list_read(scope, name)
            return [Simple(fmt(f"{name}[{index}] = {{}} * {{}}", read, self.value(scope, kind, 1)))]
        if op == 1 and var.length > 0:
            index = self.index(scope, var.length)
            if kind == "V":  # += on an array item would change the array in place
                return [
                    Simple(
                        fmt(f"{name}[{index}] = {name}[{index}] + {{}}", self.value(scope, kind, 1))
                    )
                ]
            return [Simple(fmt(f"{name}[{index}] += {{}}", self.value(scope, kind, 1)))]
        if op == 2 and (loop is None or (loop.grows and name not in loop.iterated)):
            text = fmt(f"{name}.append({{}})", self.value(scope, kind, 1))
            var.length += 1
            return [Simple(text)]
        if op == 3 and loop is None and var.length >= 2:
            helpers = [
                h for h, k, _ in self.helper_sigs if h[:2] in ("h0", "h1", "lp") and k == kind
            ]
            if kind == "S" and helpers and self.chance(0.3):
                # keywords out of the parameters' order: Python evaluates them as written
                var.length -= 2
                target = self.fresh(scope, "p")
                scope[target] = Var(kind)
                call = f"{self.choice(helpers)}(b={name}.pop(), a={name}.pop())"
                return [Simple(Text.plain(f"{target} = {call}"))]
            var.length -= 1
            if self.chance(0.5):
                target = self.fresh(scope, "p")
                scope[target] = Var(kind)
                return [Simple(Text.plain(f"{target} = {name}.pop()"))]
            return [Simple(Text.plain(f"{name}.pop()"))]
        if op == 4 and var.length > 0 and self.cell_helper:
            others = [
                n
                for n in lists
                if n != name
                and scope[n].kind == var.kind
                and scope[n].length > 0
                and var.kind == "LS"
            ]
            if not others:
                return None
            other = self.choice(others)
            size = min(var.length, scope[other].length)
            i = self.index(scope, size)
            return [
                Simple(
                    fmt(
                        f"{name}[{i}], {other}[{i}] = {self.cell_helper}("
                        f"{name}[{i}], {other}[{i}], {{}})",
                        self.scalar(scope, 1),
                    )
                )
            ]
        return None

    def s_dict(self, scope, depth, loop):
        name = self.fresh(scope, "D")
        literal = f'{name} = {{{{"a": {{}}, "b": {{}}}}}}'
        if self.chance(0.4):  # the builtin with keywords: a literal
            literal = f"{name} = dict(a={{}}, b={{}})"
        text = fmt(literal, self.scalar(scope, 1), self.scalar(scope, 1))
        scope[name] = Var("D", items=("a", "b"))
        return [Simple(text)]

    def s_dict_write(self, scope, depth, loop):
        dicts = self.of_kind(scope, "D")
        if not dicts:
            return None
        name = self.choice(dicts)
        key = self.choice(scope[name].items)
        if self.chance(0.3):
            return [Simple(fmt(f'{name}["{key}"] += {{}}', self.scalar(scope, 1)))]
        return [Simple(fmt(f'{name}["{key}"] = {{}}', self.scalar(scope)))]

    def s_tuple(self, scope, depth, loop):
        name = self.fresh(scope, "T")
        text = fmt(f"{name} = ({{}}, {{}})", self.scalar(scope, 1), self.vector(scope, 1))
        scope[name] = Var("T", items=("S", "V"))
        return [Simple(text)]

    def s_array(self, scope, depth, loop):
        kind = "X" if self.chance(0.25) else "V"
        name = self.fresh(scope, "Y" if kind == "X" else "y")
        value = self.fresh_value(scope, kind)
        scope[name] = Var(kind, mutable=True)
        return [Simple(fmt(f"{name} = {{}}", value))]

    def s_array_write(self, scope, depth, loop):
        arrays = self.of_kind(scope, "V", mutable=True) + self.of_kind(scope, "X", mutable=True)
        if not arrays:
            return None
        name = self.choice(arrays)
        if scope[name].kind == "X":
            return [Simple(self.matrix_write(scope, name))]
        masks = self.of_kind(scope, "M")
        forms = [
            lambda: fmt(f"{name}[{self.index(scope, 3)}] = {{}}", self.scalar(scope, 1)),
            lambda: fmt(f"{name}[{self.index(scope, 3)}] += {{}}", self.scalar(scope, 1)),
            lambda: fmt(f"{name}[1:3] += {{}}", self.scalar(scope, 1)),
            lambda: fmt(f"{name}[:2] = {name}[1:] * ({{}})", self.scalar(scope, 1)),
            lambda: fmt(f"{name}[::2] *= {{}}", self.scalar(scope, 1)),
            lambda: Text.plain(f"{name}[::-1] = {name}"),  # the array onto itself (overlap)
            # slots written from a list or tuple of numbers (one array, as NumPy reads it)
            lambda: fmt(f"{name}[:2] = [{{}}, {{}}]", self.scalar(scope, 1), self.scalar(scope, 1)),
            lambda: fmt(f"{name}[1:] = ({{}}, 0.5)", self.scalar(scope, 1)),
            lambda: fmt(f"{name}[0:2] = {{}}, {{}}", self.scalar(scope, 1), self.scalar(scope, 1)),
        ]
        if masks:
            forms.append(lambda: fmt(f"{name}[{self.choice(masks)}] = {{}}", self.scalar(scope, 1)))
        if self.chance(0.3):  # integer lists, which may name one slot twice (NumPy keeps the
            # last value written there; ``+=`` reads the slots once, so it adds one value)
            three = self.slots(3)
            forms = [
                lambda: fmt(f"{name}[{three}] = {{}}", self.vector(scope, 1)),
                lambda: fmt(f"{name}[{three}] += {{}}", self.vector(scope, 1)),
                lambda: fmt(f"{name}[{self.slots(2)}] = {{}}", self.scalar(scope, 1)),
                lambda: fmt(f"{name}[{self.slots(2)}] *= {{}}", self.scalar(scope, 1)),
            ]
        return [Simple(self.choice(forms)())]

    def slots(self, count: int) -> str:
        """An integer list indexing a 3-vector, often with a slot named twice (``[0, 0, -1]``,
        ``[2, -1]``)."""
        return "[" + ", ".join(self.choice(("0", "1", "2", "-1", "-3")) for _ in range(count)) + "]"

    def matrix_write(self, scope, name: str) -> Text:
        """A write into the matrix `name`: a row, an element (``Y[i][j] = s`` writes through the
        row's view), a column, a block."""
        i, j = self.index(scope, 3), self.index(scope, 3)
        forms = [
            lambda: fmt(f"{name}[{i}] = {{}}", self.vector(scope, 1)),
            lambda: fmt(f"{name}[{i}, {j}] = {{}}", self.scalar(scope, 1)),
            lambda: fmt(f"{name}[{i}][{j}] = {{}}", self.scalar(scope, 1)),
            lambda: fmt(f"{name}[:, {j}] += {{}}", self.vector(scope, 1)),
            lambda: fmt(f"{name}[{i}] *= {{}}", self.scalar(scope, 1)),
            lambda: fmt(
                f"{name}[{i}] = [{{}}, {{}}, 1.0]", self.scalar(scope, 1), self.scalar(scope, 1)
            ),
            lambda: fmt(
                f"{name}[:, {j}] = ({{}}, {{}}, {{}})", *(self.scalar(scope, 1) for _ in "abc")
            ),
            lambda: fmt(f"{name}[1:, :2] -= {{}}", self.scalar(scope, 1)),
            # pairs of integer lists, which may name one element twice
            lambda: fmt(f"{name}[{self.slots(3)}, {self.slots(3)}] = {{}}", self.vector(scope, 1)),
        ]
        return self.choice(forms)()

    def s_mask(self, scope, depth, loop):
        masks = self.of_kind(scope, "M")
        if masks and self.chance(0.6):
            name = self.choice(masks)
            op = self.choice(("&=", "|=", "^="))
            return [Simple(fmt(f"{name} {op} {{}}", self.mask(scope)))]
        name = self.fresh(scope, "m")
        text = fmt(f"{name} = {{}}", self.mask(scope))
        scope[name] = Var("M")
        return [Simple(text)]

    def s_comprehension(self, scope, depth, loop):
        sources = [n for n in self.of_kind(scope, "LS") if scope[n].length > 0]
        sources += [*self.of_kind(scope, "V"), "GV"]
        source = self.choice(sources)
        item = self.fresh(scope, "e")
        inner = self.inner(scope)
        inner[item] = Var("S")
        element = self.scalar(inner, 1)
        name = self.fresh(scope, "L")
        if source in scope and scope[source].kind == "LS":
            length = scope[source].length
        else:
            length = 3
        text = fmt(f"[{{}} for {item} in {source}]", element)
        if self.chance(0.4):
            target = self.fresh(scope, "s")
            scope[target] = Var("S")
            return [Simple(fmt(f"{target} = np.sum(np.array({{}}))", text))]
        scope[name] = Var("LS", length=length, exact=scope.get(source, Var("V")).exact)
        return [Simple(fmt(f"{name} = {{}}", text))]

    def s_int(self, scope, depth, loop):
        name = self.fresh(scope, "k")
        start = self.rng.randrange(0, 3)
        op = self.choice(
            ("+= 1", "//= 2", "%= 3", "<<= 1", ">>= 1", "^= 1", "|= 1", "&= 2", "-= 1", "*= 2")
        )
        namespace = {"k": start}
        exec(f"k {op}", namespace)
        value = namespace["k"]
        scope[name] = Var("I" if 0 <= value <= 2 else "IX", bound=value)
        return [Simple(Text.plain(f"{name} = {start}")), Simple(Text.plain(f"{name} {op}"))]

    def s_assert(self, scope, depth, loop):
        return [Simple(fmt("assert np.all(np.isfinite({})), 'finite'", self.vector(scope, 1)))]

    def s_exit(self, scope, depth, loop):
        word = "break" if loop.is_while or self.chance(0.5) else "continue"
        return [
            Block(
                fmt("if {}:", self.condition(scope)),
                [Simple(Text.plain(word))],
                inline=self.chance(0.4),
            )
        ]

    def s_return(self, scope, depth, loop):
        value = self.value(scope, self.out_kind)
        return [
            Block(
                fmt("if {}:", self.condition(scope)),
                [Return(fmt("return {}", value), value)],
                inline=self.chance(0.3),
            )
        ]

    def s_nested_def(self, scope, depth, loop):
        """A function defined inside ``f`` and called at once: its parameter is named like a
        local of ``f`` when one of its kind exists (its reads are its own), its body reads
        its parameters and the globals (normal form inlines it where it is called)."""
        arrays = self.of_kind(scope, "V", mutable=True)
        if arrays and self.chance(0.6):  # no result: it writes into an array of f's
            array, name = self.choice(arrays), self.fresh(scope, "put")
            own = {"k": Var("I", bound=2), "r": Var("S"), array: scope[array]}
            write = self.choice(("{}[k] = {}", "{}[k] += {} * r", "{}[[k, 0]] = {}"))
            body = [Simple(fmt(write.format(array, "{}"), self.scalar(own, 1)))]
            call = fmt(f"{name}({self.index(scope, 3)}, {{}})", self.scalar(scope))
            return [Block(Text.plain(f"def {name}(k, r):"), body), Simple(call)]
        kind = self.choice("SV")
        same = [n for n in self.assignable(scope) if scope[n].kind == kind]
        param = self.choice(same) if same and self.chance(0.7) else ("p" if kind == "S" else "q")
        name = self.fresh(scope, "nd")
        own = {param: Var(kind), "r": Var("S")}
        body = []
        if self.chance(0.5):  # the parameter rebound inside: Python's own local
            body.append(Simple(fmt(f"{param} = {{}}", self.value(own, kind))))
        body.append(Simple(fmt("return {}", self.value(own, kind))))
        target = self.fresh(scope, "s" if kind == "S" else "a")
        call = fmt(f"{target} = {name}({{}}, {{}})", self.value(scope, kind, 1), self.scalar(scope))
        scope[target] = Var(kind)
        return [Block(Text.plain(f"def {name}({param}, r):"), body), Simple(call)]

    # ---- compound statements ---------------------------------------------------------------

    def s_if(self, scope, depth, loop):
        cond = self.condition(scope)
        first = self.inner(scope)
        body = self.block(first, depth + 1, loop, self.rng.randrange(1, 3))
        branches = [first]
        statement = Block(fmt("if {}:", cond), body, inline=self.chance(0.3))
        if self.chance(0.6):
            other = self.inner(scope)
            branches.append(other)
            if self.chance(0.4):  # elif: an if nested in the else, rendered flat
                statement.orelse = self.s_if(other, depth + 1, loop)
                statement.else_header = "elif"
            else:
                statement.orelse = self.block(other, depth + 1, loop, self.rng.randrange(1, 3))
        else:
            branches.append(self.inner(scope))  # the path that skips the body
        self.merge(scope, *branches)
        return [statement]

    @staticmethod
    def may_grow(outer: Loop | None, exits: bool) -> bool:
        """Whether a loop's body may append: not where it may break (the lengths after it are
        not known), nor inside a loop that may not (a list read at a length the outer body
        knew would be longer in its next iteration: fuzz seed 3630823, an invalid program)."""
        return not exits and (outer is None or outer.grows)

    def loop_body(self, scope, depth, loop, index: tuple | None = None):
        inner = self.inner(scope)
        if loop.grows:  # a later statement of the body may append: lengths vary by iteration
            for var in inner.values():
                var.exact = False
        for name, kind, bound in index or ():
            inner[name] = Var(kind, bound=bound)
        body = self.block(inner, depth + 1, loop, self.rng.randrange(1, 4))
        self.merge(scope, inner, trips=loop.trips)
        if loop.trips is None or loop.exits:
            self.merge(scope, self.inner(scope))
        return body

    def s_for(self, scope, depth, loop):
        exits = self.chance(0.5)
        i = self.fresh(scope, "i")
        form = self.rng.randrange(9)
        lists = [
            n
            for n in self.of_kind(scope, "LS") + self.of_kind(scope, "LV")
            if scope[n].exact and scope[n].length > 0
        ]
        iterated = frozenset()
        matrices = [*self.of_kind(scope, "X"), "GM"]
        if self.chance(0.15):  # the rows of a matrix (views: ``row *= s`` writes into it)
            e = self.fresh(scope, "e")
            source = self.choice(matrices)
            by = self.rng.randrange(3)
            header = (
                f"for {i} in {source}:",
                f"for {e}, {i} in enumerate({source}):",
                f"for {i}, {e} in zip({source}, {self.choice([*self.of_kind(scope, 'V'), 'GV'])}):",
            )[by]
            index = (
                ((i, "V", 0),)
                if by == 0
                else (((e, "I", 2), (i, "V", 0)) if by == 1 else ((i, "V", 0), (e, "S", 0)))
            )
            trips = 3
            # a row of a local matrix of its own is written into now and then: the matrix
            # changes (a row of an argument's or a global's: refused)
            row_written = source in scope and scope[source].mutable and self.chance(0.3)
            if len({name for name, _, _ in index}) < len(index) or any(
                n in scope for n, _, _ in index
            ):
                return None
            inner_loop = Loop(
                trips, exits, self.may_grow(loop, exits), loop.iterated if loop else frozenset()
            )
            body = self.loop_body(scope, depth, inner_loop, index)
            if row_written:  # (first: the body may rebind the name, to a read-only view too)
                body.insert(0, Simple(fmt(f"{i} *= np.tanh({{}})", self.scalar(scope, 2))))
            return [Block(Text.plain(header), body, inline=self.chance(0.15))]
        if form == 6:  # a list of (vector, number) pairs: ``for W, b in params``
            e = self.fresh(scope, "e")
            pairs = [fmt("({}, {})", self.vector(scope, 1), self.scalar(scope, 1)) for _ in "ab"]
            header = fmt(f"for {i}, {e} in [{{}}, {{}}]:", *pairs)
            index, trips = ((i, "V", 0), (e, "S", 0)), 2
        elif form == 8:  # ``for i, (p, q) in enumerate(zip(a, b))``
            e, f = self.fresh(scope, "e"), self.fresh(scope, "e")
            first, second = (self.choice([*self.of_kind(scope, "V"), "GV"]) for _ in "ab")
            header = f"for {i}, ({e}, {f}) in enumerate(zip({first}, {second})):"
            index, trips = ((i, "I", 2), (e, "S", 0), (f, "S", 0)), 3
        elif form == 7 and lists:  # by position: ``for i in range(len(xs))``
            source = self.choice(lists)
            header = f"for {i} in range(len({source})):"
            index, trips = ((i, "I", scope[source].length - 1),), scope[source].length
        elif form == 0 or (form >= 3 and not lists and form != 5):
            n = self.rng.randrange(1, 4)
            header = (
                f"for {i} in range({n}):"
                if self.chance(0.7)
                else f"for {i} in reversed(range({n})):"
            )
            index, trips = ((i, "I", n - 1),), n
        elif form == 1:
            source = self.choice([*self.of_kind(scope, "V"), "GV"])
            header, index, trips = f"for {i} in {source}:", ((i, "S", 0),), 3
        elif form == 2:
            e = self.fresh(scope, "e")
            source = self.choice([*self.of_kind(scope, "V"), "GV"])
            header = f"for {i}, {e} in enumerate({source}):"
            index, trips = ((i, "I", 2), (e, "S", 0)), 3
        elif form == 3:
            source = self.choice(lists)
            kind = scope[source].kind[1]
            header = (
                f"for {i} in {source}:" if self.chance(0.7) else f"for {i} in reversed({source}):"
            )
            index, trips, iterated = ((i, kind, 0),), scope[source].length, frozenset([source])
        elif form == 4:
            source = self.choice(lists)
            e = self.fresh(scope, "e")
            kind = scope[source].kind[1]
            header = f"for {i}, {e} in enumerate({source}):"
            index = ((i, "I", scope[source].length - 1), (e, kind, 0))
            trips, iterated = scope[source].length, frozenset([source])
        else:
            e = self.fresh(scope, "e")
            other = self.choice([*self.of_kind(scope, "V"), "GV"])
            header = (
                f"for {i}, {e} in zip({self.choice([*self.of_kind(scope, 'V'), 'GV'])}, {other}):"
            )
            index, trips = ((i, "S", 0), (e, "S", 0)), 3
        if len({name for name, _, _ in index}) < len(index) or any(n in scope for n, _, _ in index):
            return None
        inner_loop = Loop(
            trips,
            exits,
            self.may_grow(loop, exits),
            iterated | (loop.iterated if loop else frozenset()),
        )
        body = self.loop_body(scope, depth, inner_loop, index)
        header = header if isinstance(header, Text) else Text.plain(header)
        return [Block(header, body, inline=self.chance(0.15))]

    def s_while(self, scope, depth, loop):
        counter = self.fresh(scope, "n")
        if counter in scope:
            return None
        limit = self.rng.randrange(1, 4)
        inner = self.inner(scope)
        inner[counter] = Var("I", bound=limit - 1)
        header = Text.plain(f"while {counter} < {limit}:")
        data_dependent = self.chance(0.4)
        if data_dependent:
            header = fmt(f"while {counter} < {limit} and ({{}}):", self.condition(inner))
        exits = data_dependent or self.chance(0.4)
        while_loop = Loop(
            None if data_dependent else limit,
            exits,
            self.may_grow(loop, exits),
            loop.iterated if loop else frozenset(),
            is_while=True,
        )
        if while_loop.grows:  # a later statement of the body may append
            for var in inner.values():
                var.exact = False
        body = self.block(inner, depth + 1, while_loop, self.rng.randrange(1, 3))
        body.append(Simple(Text.plain(f"{counter} += 1")))
        self.merge(scope, inner, trips=while_loop.trips)
        if while_loop.trips is None or exits:
            self.merge(scope, self.inner(scope))
        return [Block(header, body, setup=[Simple(Text.plain(f"{counter} = 0"))])]

    # ---- helpers and the program -----------------------------------------------------------

    def make_helpers(self) -> None:
        self.cell_helper = None
        self.main_function = False
        self.made = []
        for number in range(self.rng.randrange(0, 3)):
            form = self.rng.randrange(10)
            name = f"h{number}"
            if form == 0:
                kind = self.choice("SV")
                scope = {"a": Var(kind), "b": Var("S"), "c": Var("S")}
                self.out_kind = kind
                body = self.block(scope, 1, None, self.rng.randrange(0, 3))
                body.append(Simple(fmt("return {}", self.value(scope, kind))))
                header = f"def {name}(a, b=0.5, *, c=1.0):"
                self.helpers.append(Function(header, body))
                self.helper_sigs.append((name, kind, (kind,)))
            elif form == 1:
                name = f"rec{number}"
                body = [
                    Block(Text.plain("if n <= 0:"), [Simple(Text.plain("return a"))]),
                    Simple(Text.plain(f"return {name}(np.tanh(a) * 0.9 + G0 * 0.1, n - 1)")),
                ]
                self.helpers.append(Function(f"def {name}(a, n):", body))
                self.helper_sigs.append((name, "S", ("S",)))
            elif form == 2:
                name = f"cell{number}"
                body = [
                    Simple(Text.plain("h2 = np.tanh(h * u + c)")),
                    Simple(Text.plain("c2 = 0.5 * c + 0.25 * h2")),
                    Simple(Text.plain("return h2, c2")),
                ]
                self.helpers.append(Function(f"def {name}(h, c, u):", body))
                self.cell_helper = name
            elif form == 5:  # a primitive of the user's, with both rules registered
                kind = self.choice("SV")
                name = f"pr{number}"
                rules = [
                    (f"@sg.primitive\ndef {name}(a):", "return np.sin(a) * a"),
                    (
                        f"@sg.register_vjp({name})\ndef {name}_vjp(g, ans, a):",
                        "return g * (np.cos(a) * a + np.sin(a))",
                    ),
                    (
                        f"@sg.register_jvp({name})\ndef {name}_jvp(tangents, ans, a):",
                        "return tangents[0] * (np.cos(a) * a + np.sin(a))",
                    ),
                ]
                for header, line in rules:
                    self.helpers.append(Function(header, [Simple(Text.plain(line))]))
                self.helper_sigs.append((name, kind, (kind,)))
            elif form == 4:  # *args and **kwargs
                kind = self.choice("SV")
                name = f"va{number}"
                scope = {"a": Var(kind), "rest": Var("T", items=("S",)), "opts": Var("CLOSURE")}
                inner = self.value({"a": Var(kind)}, kind)
                text = fmt('return ({}) * opts["s"] + sum(r * r for r in rest)', inner)
                self.helpers.append(Function(f"def {name}(a, *rest, **opts):", [Simple(text)]))
                self.helper_sigs.append((name, kind, (kind,)))
            elif form == 6:  # a loop with an early return (inlined where it is called unless
                # its random statements change something in place)
                kind = self.choice("SV")
                name = f"lp{number}"
                scope = {"a": Var(kind), "b": Var("S"), "c": Var("S")}
                self.out_kind = kind
                body = self.block(scope, 1, None, self.rng.randrange(0, 2))
                body.append(Simple(fmt("t = {}", self.value(scope, kind))))
                scope["t"] = Var(kind)
                loop_body = [
                    Simple(fmt("t = t * 0.5 + b * ({})", self.value(scope, kind, 1))),
                    Block(
                        fmt("if {}:", self.condition(scope)),
                        [Simple(fmt("return {}", self.value(scope, kind, 1)))],
                    ),
                ]
                if self.chance(0.5):
                    body.append(Block(Text.plain("for _ in range(3):"), loop_body))
                else:  # a counter the callee saves, as an exponent of a base of any sign
                    loop_body.insert(1, Simple(Text.plain("t = t + (a * 0.5) ** k / (k + 1)")))
                    loop_body.append(Simple(Text.plain("k += 1")))
                    body.append(Simple(Text.plain("k = 0")))
                    body.append(Block(Text.plain("while k < 3:"), loop_body))
                body.append(Simple(fmt("return {}", self.value(scope, kind))))
                self.helpers.append(Function(f"def {name}(a, b=0.5, *, c=1.0):", body))
                self.helper_sigs.append((name, kind, (kind,)))
            elif form == 8:  # an array built by slot writes and returned: a callee that
                # changes something in place is a call (its backward half undoes its writes)
                kind = self.choice("SV")
                name = f"bd{number}"
                scope = {"a": Var(kind), "b": Var("S"), "c": Var("S")}
                start = self.choice(("np.zeros(3)", "np.ones(3) * b", "({}) * 1.0"))
                body = [Simple(fmt("y = " + start, self.vector(scope, 1)))]
                scope["y"] = Var("V", mutable=True)
                body.append(Simple(fmt(f"y[{self.index(scope, 3)}] = {{}}", self.scalar(scope, 1))))
                for _ in range(self.rng.randrange(0, 3)):
                    body += self.s_array_write(scope, 1, None)
                ending = self.choice(("return y", "return y[::-1]", "return y * c"))
                body.append(Simple(Text.plain(ending)))
                self.helpers.append(Function(f"def {name}(a, b=0.5, *, c=1.0):", body))
                self.helper_sigs.append((name, "V", (kind,)))
            elif form == 9:  # a complex argument (a default) of a callee that stays a call:
                # the real argument's adjoint must be real where the complex one met it
                kind = self.choice("SV")
                name = f"cz{number}"
                body = [
                    Simple(Text.plain("t = a * 0.5")),
                    Block(
                        Text.plain("for k in range(2):"),
                        [
                            Simple(Text.plain("t = t + a * z * b")),
                            Block(
                                Text.plain("if k > 5:"), [Simple(Text.plain("return np.abs(t)"))]
                            ),
                        ],
                    ),
                    Simple(Text.plain("return np.abs(t + 1.0)")),
                ]
                header = f"def {name}(a, b=0.5, *, c=1.0, z=0.5 + 1.0j):"  # (as h0 is called)
                self.helpers.append(Function(header, body))
                self.helper_sigs.append((name, kind, (kind,)))
            elif form == 7:  # a list argument read as one array, in a callee that stays a
                # call (recursive): it cannot see that its parameter is a list
                name = f"ls{number}"
                body = [
                    Block(
                        Text.plain("if n <= 0:"),
                        [Simple(Text.plain("return a * np.var(xs) + np.sum(np.sin(xs) - xs)"))],
                    ),
                    Simple(Text.plain(f"return {name}(a * 0.9, xs, n - 1)")),
                ]
                self.helpers.append(Function(f"def {name}(a, xs, n):", body))
                self.helper_sigs.append((name, "S", ("S", "LS")))
            else:  # two closures of one factory: one code, two captured values
                kind = self.choice("SV")
                scope = {"a": Var(kind), "b": Var("S"), "c": Var("S"), "k": Var("S")}
                inner = [Simple(fmt("return ({}) * (k + 2.0)", self.value(scope, kind)))]
                body = [
                    Block(Text.plain("def scaled(a, b=0.5, *, c=1.0):"), inner),
                    Simple(Text.plain("return scaled")),
                ]
                self.helpers.append(Function(f"def factory{number}(k):", body))
                for made, value in ((f"sc{number}a", "0.5"), (f"sc{number}b", "-1.25")):
                    self.made.append(f"{made} = factory{number}({value})")
                    self.helper_sigs.append((made, kind, (kind,)))

    def program(self) -> Program:
        self.make_helpers()
        self.main_function = True
        params = [p for p in PARAMS if self.chance(0.5)] or [self.choice(PARAMS)]
        if self.chance(0.05):
            params = [("dx" if k == "S" else "_t1", k) for _, k in params[:1]] + params[1:]
        if self.chance(0.15):  # a record argument (the Rec NamedTuple), read by field
            params.append(("r", self.choice(("R", "RD"))))
        if self.chance(0.15):  # a matrix argument
            params.append(("m", "X"))
        self.out_kind = "V" if self.chance(0.2) else "S"
        scope = {name: Var(kind) for name, kind in params if not kind.startswith("R")}
        if any(kind.startswith("R") for _, kind in params):
            scope.update({"r.a": Var("S"), "r.b": Var("V"), "r.c": Var("S")})
        closure, entry = None, "closure"
        if self.chance(0.3):  # f reads a captured k: a closure, a method, a partial, ...
            scope["k"] = Var("CLOSURE")
            value = self.choice(("0.3", "-0.6", "1.1"))
            entry = self.choice(ENTRIES)
            names = ", ".join(name for name, _ in params)
            closure = {
                "closure": f"f = make({value})",
                "method": f"f = Model({value}).f",
                "callable": f"f = Model({value})",
                "partial": f"f = functools.partial(g, k={value})",
                "lambda": f"f = lambda {names}: g({names}, k={value})",
            }[entry]
        if entry in ("method", "callable"):  # f may call another method of its class
            self.helper_sigs += [("self.scaled", "S", ("S",)), ("self.scaled", "V", ("V",))]
        body = self.block(scope, 0, None, self.rng.randrange(2, self.size + 1))
        value = self.value(scope, self.out_kind)
        body.append(Return(fmt("return {}", value), value))
        header = "def f(" + ", ".join(name for name, _ in params) + "):"
        return Program(
            list(GLOBALS),
            self.helpers,
            Function(header, body),
            params,
            self.out_kind,
            closure,
            self.seed,
            self.made,
            entry,
        )


def generate(seed: int, size: int = 6) -> Program:
    """The program of `seed` (the same seed always gives the same program)."""
    return ProgramGenerator(seed, size).program()
