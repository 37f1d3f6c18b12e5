"""Statements of issue 18's idioms for the fuzzer: dict views, ``map`` over a lambda, loops
over list literals, a lambda defining a function, ``with np.errstate(...)`` (a mixin of
`statements.ProgramGenerator`: it uses the generator's scope helpers and expressions)."""

from __future__ import annotations

from .grammar import Var
from .program import Block, Simple, Text, fmt


class IdiomStatements:
    def s_idiom(self, scope, depth, loop):
        forms = [self._over_literal, self._mapped, self._local_lambda, self._errstate]
        if self.of_kind(scope, "D"):
            forms += [self._items, self._values]
        return self.choice(forms)(scope)

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

    def _errstate(self, scope):
        name = self.fresh(scope, "s")
        body = [Simple(fmt(f"{name} = {{}}", self.scalar(scope, 1)))]
        scope[name] = Var("S")
        return [Block(Text.plain('with np.errstate(all="ignore"):'), body)]
