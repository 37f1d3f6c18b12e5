"""Statements of issue 18's idioms for the fuzzer: dict views, ``map`` over a lambda, loops
over list literals, a lambda defining a function, ``with np.errstate(...)``, dict, set and
nested comprehensions, starred unpacking, ``list(...)``, ``[x, *xs]``, ``zip(*pairs)``,
``enumerate`` with a start, loops over ``zip(*rows)``, slots swapped by a tuple assignment,
and NamedTuples built in the function (a mixin of
`statements.ProgramGenerator`: it uses the generator's scope helpers and expressions)."""

from __future__ import annotations

from .grammar import Var
from .program import Block, Simple, Text, fmt


class IdiomStatements:
    def s_idiom(self, scope, depth, loop):
        forms = [self._over_literal, self._mapped, self._local_lambda, self._errstate]
        forms += [self._dict_comprehension, self._nested, self._starred, self._listed]
        forms += [self._columns, self._counted, self._set_of_sizes, self._record]
        forms += [self._converted, self._rows, self._zipped_rows]
        if self.of_kind(scope, "V", mutable=True) or self.of_kind(scope, "X", mutable=True):
            forms.append(self._swapped)
        if self.of_kind(scope, "D"):
            forms += [self._items, self._values, self._dict_of_items]
        return self.choice(forms)(scope)

    def _sequence(self, scope):
        """A vector, or a list of numbers known to hold at least two."""
        lists = [n for n in self.of_kind(scope, "LS") if scope[n].length >= 2]
        return self.choice([*self.of_kind(scope, "V"), "GV", *lists])

    def _dict_comprehension(self, scope):
        item, key = self.fresh(scope, "e"), self.fresh(scope, "k")
        name = self.fresh(scope, "D")
        element = self._element(scope, item)
        source = self._sequence(scope)
        keys = '["a", "b"]' if self.chance(0.5) else '("a", "b")'
        text = fmt(
            f"{name} = {{{{{key}: {{}} for {key}, {item} in zip({keys}, {source})}}}}", element
        )
        scope[name] = Var("D", items=("a", "b"))
        return [Simple(text)]

    def _nested(self, scope):
        first, second = self.fresh(scope, "e"), self.fresh(scope, "e")
        inner = self.inner(scope)
        inner[first], inner[second] = Var("S"), Var("S")
        element = self.scalar(inner, 1)
        outer, other = self._sequence(scope), self.choice(["GL", "GV", "[0.5, 2.0]"])
        guard = f" if {first} > {second}" if self.chance(0.3) else ""
        template = f"sum([{{}} for {first} in {outer} for {second} in {other}{guard}])"
        return self._result(scope, template, element)

    def _starred(self, scope):
        head, rest = self.fresh(scope, "s"), self.fresh(scope, "L")
        source = self._sequence(scope)
        scope[head] = Var("S")
        if self.chance(0.5):
            scope[rest] = Var("LS", length=1, exact=False)
            return [Simple(Text.plain(f"{head}, *{rest} = {source}"))]
        tail = self.fresh(scope, "s")
        scope[tail] = Var("S")
        scope[rest] = Var("LS", length=0, exact=False)
        return [Simple(Text.plain(f"{head}, *{rest}, {tail} = {source}"))]

    def _listed(self, scope):
        name = self.fresh(scope, "L")
        source = self._sequence(scope)
        known = scope.get(source)
        length = known.length if known is not None and known.kind == "LS" else 3
        exact = known is None or known.exact
        if self.chance(0.5):  # [x, *xs]: a join of lists
            first = self.scalar(scope, 1)
            scope[name] = Var("LS", length=length + 1, exact=exact)
            return [Simple(fmt(f"{name} = [{{}}, *{source}]", first))]
        scope[name] = Var("LS", length=length, exact=exact)
        return [Simple(Text.plain(f"{name} = list({source})"))]

    def _columns(self, scope):
        left, right = self.fresh(scope, "L"), self.fresh(scope, "L")
        pairs = [(self.scalar(scope, 1), self.scalar(scope, 1)) for _ in range(2)]
        text = fmt(f"{left}, {right} = zip(*[({{}}, {{}}), ({{}}, {{}})])", *pairs[0], *pairs[1])
        scope[left], scope[right] = Var("T", items=("S", "S")), Var("T", items=("S", "S"))
        return [Simple(text)]

    def _zipped_rows(self, scope):
        """A loop, or a sum over a generator, over the columns of rows (``zip(*rows)``: an
        item of each row at a time), as many rows as items or fewer."""
        count = self.choice((2, 3))
        names = [self.fresh(scope, "e") for _ in range(count)]
        inner = self.inner(scope)
        inner.update({n: Var("S") for n in names})
        rows = [self.vector(scope, 1) for _ in range(count)]
        rows_text = fmt("(" + ", ".join(["{}"] * count) + ")", *rows)
        element = self.scalar(inner, 1)
        targets = ", ".join(names)
        if self.chance(0.5):
            return self._result(scope, f"sum({{}} for {targets} in zip(*{{}}))", element, rows_text)
        total, source = self.fresh(scope, "s"), self.fresh(scope, "R")
        scope[total] = Var("S")
        body = [Simple(fmt(f"{total} = {total} + {{}}", element))]
        return [
            Simple(fmt(f"{source} = {{}}", rows_text)),
            Simple(Text.plain(f"{total} = 0.0")),
            Block(Text.plain(f"for {targets} in zip(*{source}):"), body),
        ]

    def _swapped(self, scope):
        """Two slots swapped by a tuple assignment: numbers of a vector (a swap), or rows of a
        matrix (views: NumPy leaves both equal, which s2sgrad refuses), or their copies."""
        vectors = self.of_kind(scope, "V", mutable=True)
        matrices = self.of_kind(scope, "X", mutable=True)
        name = self.choice(vectors + matrices)
        i, j = self.choice(("0", "1", "-1")), self.choice(("2", "-3", "1"))
        copy = ".copy()" if name in matrices and self.chance(0.5) else ""
        return [
            Simple(Text.plain(f"{name}[{i}], {name}[{j}] = {name}[{j}]{copy}, {name}[{i}]{copy}"))
        ]

    def _counted(self, scope):
        item, count = self.fresh(scope, "e"), self.fresh(scope, "i")
        element = self._element(scope, item)
        source = self._sequence(scope)
        template = f"sum({{}} * {count} for {count}, {item} in enumerate({source}, 1))"
        return self._result(scope, template, element)

    def _set_of_sizes(self, scope):
        item, name = self.fresh(scope, "j"), self.fresh(scope, "k")
        scope[name] = Var("I", bound=1)
        return [Simple(Text.plain(f"{name} = len({{{item} % 2 for {item} in range(3)}}) - 1"))]

    def _rows(self, scope):
        """A list of lists, one row of it read as one array: an item whose kind (a list) no
        analysis of the function's own can tell from an array's."""
        rows = self.fresh(scope, "R")
        cells = [self.scalar(scope, 1) for _ in range(6)]
        build = fmt(f"{rows} = [[{{}}, {{}}, {{}}], [{{}}, {{}}, {{}}]]", *cells)
        first = self.choice(("0", "1", "-1"))
        second = self.choice(("0", "1", "-2"))
        template = f"np.var({rows}[{first}]) + np.sum(np.square({rows}[{second}]) * {{}})"
        return [Simple(build), *self._result(scope, template, self.scalar(scope, 1))]

    def _element(self, scope, item: str):
        inner = self.inner(scope)
        inner[item] = Var("S")
        return self.scalar(inner, 1)

    def _result(self, scope, template: str, *parts):
        name = self.fresh(scope, "s")
        text = fmt(f"{name} = {template}", *parts)
        scope[name] = Var("S")
        return [Simple(text)]

    def _items(self, scope):
        item, key = self.fresh(scope, "e"), self.fresh(scope, "k")
        source = self.choice(self.of_kind(scope, "D"))
        element = self._element(scope, item)
        return self._result(scope, f"sum([{{}} for {key}, {item} in {source}.items()])", element)

    def _values(self, scope):
        item = self.fresh(scope, "e")
        source = self.choice(self.of_kind(scope, "D"))
        element = self._element(scope, item)
        return self._result(scope, f"sum({{}} for {item} in {source}.values())", element)

    def _mapped(self, scope):
        item = self.fresh(scope, "e")
        source = self.choice([*self.of_kind(scope, "V"), "GV"])
        element = self._element(scope, item)
        return self._result(scope, f"sum(map(lambda {item}: {{}}, {source}))", element)

    def _over_literal(self, scope):
        item = self.fresh(scope, "e")
        element = self._element(scope, item)
        first, second = self.scalar(scope, 1), self.scalar(scope, 1)
        template = f"sum([{{}} for {item} in [{{}}, {{}}]])"
        return self._result(scope, template, element, first, second)

    def _local_lambda(self, scope):
        item, function = self.fresh(scope, "e"), self.fresh(scope, "lam")
        element = self._element(scope, item)
        definition = Simple(fmt(f"{function} = lambda {item}: {{}}", element))
        scope[function] = Var("F")
        return [definition, *self._result(scope, f"{function}({{}})", self.scalar(scope, 1))]

    def _converted(self, scope):
        """``float(...)`` and ``.item()`` of a 0-d value (the same number, and derivative), and
        a choice by ``isinstance`` (a constant of the derivative)."""
        name = self.fresh(scope, "s")
        vector = self.vector(scope, 1)
        form = self.rng.randrange(3)
        if form == 0:
            text = fmt(f"{name} = float(np.sum({{}}))", vector)
        elif form == 1:
            text = fmt(f"{name} = np.sum({{}}).item()", vector)
        else:
            number = self.scalar(scope, 1)
            text = fmt(f"{name} = ({{}}) if isinstance(GL, list) else np.sum({{}})", number, vector)
        scope[name] = Var("S")
        return [Simple(text)]

    def _errstate(self, scope):
        name = self.fresh(scope, "s")
        body = [Simple(fmt(f"{name} = {{}}", self.scalar(scope, 1)))]
        scope[name] = Var("S")
        return [Block(Text.plain('with np.errstate(all="ignore"):'), body)]

    def _record(self, scope):
        name = self.fresh(scope, "r")
        first, second = self.scalar(scope, 1), self.vector(scope, 1)
        if self.chance(0.5):
            text = fmt(f"{name} = Rec(a={{}}, b={{}})", first, second)
        else:
            text = fmt(f"{name} = Rec({{}}, {{}}, {{}})", first, second, self.lit())
        scope[name] = Var("T", items=("S", "V", "S"))
        read = self.fresh(scope, "s")
        scope[read] = Var("S")
        use = f"{read} = {name}.a * np.sum({name}.b) + {name}.c"
        return [Simple(text), Simple(Text.plain(use))]

    def _dict_of_items(self, scope):
        """A dict built from another's items: its keys are read back from the (key, value)
        pairs, where no derivative may be taken for them (nor lost for the values)."""
        item, key = self.fresh(scope, "e"), self.fresh(scope, "k")
        source = self.choice(self.of_kind(scope, "D"))
        name = self.fresh(scope, "D")
        element = self._element(scope, item)
        text = fmt(f"{name} = {{{{{key}: {{}} for {key}, {item} in {source}.items()}}}}", element)
        scope[name] = Var("D", items=scope[source].items)
        return [Simple(text)]
