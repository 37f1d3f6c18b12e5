"""The graph of one simplify segment: ``name -> sympy expression``, rewritten until cheap.

`transforms.simplify_segment` turns a run of arithmetic assignments into sympy expressions;
this module decides how they are written back. A `Graph` folds assignments into their readers
where that costs nothing, shares common subexpressions across all of them with `sympy.cse`,
pulls shared factors out of sums, recomputes the cheapest scalar temporaries where they are
read, and emits the result as assignments in dependency order, with its cost. It is separate
from the segment because it works on sympy expressions alone: it never sees libcst nodes
except the statements it emits, and the plans a segment compares each build one graph.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

import libcst as cst

from .sympy_code import (
    STATEMENT_COST,
    Unprintable,
    floating,
    one_operation,
    operations,
    shared_cost,
)

if TYPE_CHECKING:
    from .simplify_segment import Context, Segment

INLINE_BUDGET = 400  # a larger expression ends its segment rather than grow further
_REMATERIALIZE_OPERATIONS = 3  # recomputing a scalar temporary may add this many operations


class Graph:
    """A segment's assignments as ``name -> sympy expression`` (of the names before it and the
    segment's inputs), rewritten in place and then written out in dependency order.

    Every rewrite keeps each expression reading every name it read (through the names it now
    reads instead): dropping one could drop the broadcasting it brought.

    From its `segment` a graph reads sympy (``segment.sp``), the names of the segment's
    symbols (`Segment.symbol_name`: opaque subexpressions are dummies), its choice of simplified
    form (`Segment.simplest`) and the pass context (scalars, floats, fresh names).
    """

    def __init__(self, segment: Segment, exprs: dict, outputs: set[str]):
        self.segment = segment
        self.sp = segment.sp
        self.exprs = dict(exprs)
        self.outputs = outputs
        self.symbols = {name: self.sp.Symbol(name, real=True) for name in exprs}
        self.shared = False
        self.recomputed = 0.0  # operations `rematerialize` added, less the statements it saved

    def names(self, expr) -> set[str]:
        return {self.segment.symbol_name(s) for s in expr.free_symbols}

    def cost(self, expr) -> float:
        """What `expr` costs once written: as it is once `share` has run, else with its
        repeated subexpressions counted once (`share` will compute them once)."""
        return operations(self.sp, expr) if self.shared else shared_cost(self.sp, expr)

    def optimize(self) -> None:
        """Common subexpressions once, shared factors out of sums, then fold what that left,
        then recompute the cheapest scalar temporaries where they are read."""
        self.share()
        self.factor()
        self.fold()
        self.rematerialize()

    # -- folding -------------------------------------------------------------------------------

    def fold(self) -> None:
        """Substitute each non-output assignment into its readers wherever that costs nothing:
        read once (a chain becomes one expression), trivially cheap (``-d``, a copy), or
        cheaper after substitution (``sqrt(u) ** 2``); until nothing changes."""
        changed = True
        while changed:
            changed = False
            for name in list(self.exprs):
                if name not in self.outputs and self.fold_one(name):
                    changed = True

    def fold_one(self, name: str) -> bool:
        symbol, value = self.symbols[name], self.exprs[name]
        readers = [r for r, e in self.exprs.items() if symbol in e.free_symbols]
        before = STATEMENT_COST + self.cost(value)
        before += sum(self.cost(self.exprs[r]) for r in readers)
        new = {}
        for reader in readers:
            old = self.exprs[reader]
            wanted = (self.names(old) - {name}) | self.names(value)
            substituted = old.xreplace({symbol: value})
            if self.sp.count_ops(substituted) > INLINE_BUDGET:
                return False
            best = self.segment.simplest(substituted, wanted, full=False)
            if best is None:
                return False
            new[reader] = best
        if sum(self.cost(e) for e in new.values()) > before + 1e-9:
            return False
        self.exprs.update(new)
        del self.exprs[name]
        return True

    # -- rematerializing -----------------------------------------------------------------------

    def rematerialize(self) -> None:
        """Write a temporary that is one operation on names and numbers (``_s1 * dd``,
        ``u * v``, ``1 / u``, ``-u``) and holds a number into its readers instead of holding it
        in a statement, when that adds at most `_REMATERIALIZE_OPERATIONS` operations in all.

        `fold` keeps such a value when it is read twice, as `sympy.cse` would: its cost model
        counts operations, and an assignment costs less than a float operation. But on a number
        the extra operations cost some 10-20 ns each in CPython, while a statement less is a
        line less to read; on arrays each one is a pass over memory, so arrays never get here.
        Transcendental functions are never recomputed (not one operation on atoms). The plans
        of `Segment.rewrite` are compared without the operations added here (`recomputed`), so
        a plan is not turned down for the trade made on purpose.
        """
        changed = True
        while changed:
            changed = False
            for name in list(self.exprs):
                if name not in self.outputs and self.rematerialize_one(name):
                    changed = True

    def rematerialize_one(self, name: str) -> bool:
        value = self.exprs[name]
        if not (one_operation(value) and self.is_scalar(self.symbols[name])):
            return False
        symbol = self.symbols[name]
        readers = [r for r, e in self.exprs.items() if symbol in e.free_symbols]
        if not readers:
            return False
        new = {r: self.exprs[r].xreplace({symbol: value}) for r in readers}
        added = sum(operations(self.sp, e) for e in new.values()) - sum(
            operations(self.sp, self.exprs[r]) for r in readers
        )
        if added - operations(self.sp, value) > _REMATERIALIZE_OPERATIONS + 1e-9:
            return False
        self.recomputed += added - operations(self.sp, value) - STATEMENT_COST
        if any(not self.names(e) >= self.names(self.exprs[r]) - {name} for r, e in new.items()):
            return False  # sympy dropped a name while substituting (u - u): keep the temporary
        self.exprs.update(new)
        del self.exprs[name]
        return True

    def is_scalar(self, symbol) -> bool:
        """Whether `symbol` certainly holds a number: a name known to, or a temporary of this
        graph computed from such names alone."""
        scalars = self.segment.context.scalars
        pending, seen = [symbol], set()
        while pending:
            current = pending.pop()
            name = self.segment.symbol_name(current)
            if name in seen or name in scalars:
                continue
            seen.add(name)
            if name not in self.exprs:
                return False
            pending.extend(self.exprs[name].free_symbols)
        return True

    # -- sharing and factoring -----------------------------------------------------------------

    def share(self) -> None:
        """`sympy.cse` over every expression at once (forward and adjoint sweep together); a
        shared subexpression that is all of some assignment takes that assignment's name."""
        sp = self.sp
        names = list(self.exprs)
        context = self.segment.context
        replacements, reduced = sp.cse(
            [self.exprs[n] for n in names], symbols=_numbered(sp, context), order="none"
        )
        definitions = dict(replacements)
        renaming = {}
        for name, expr in zip(names, reduced, strict=True):
            if expr in definitions and expr not in renaming:
                renaming[expr] = self.symbols[name]
        exprs = {}
        for symbol, value in replacements:
            target = renaming.get(symbol, symbol)
            exprs[target.name] = value.xreplace(renaming)
            self.symbols[target.name] = target
        for name, expr in zip(names, reduced, strict=True):
            if renaming.get(expr) is not self.symbols[name]:
                exprs[name] = expr.xreplace(renaming)
        self.exprs = exprs
        self.shared = True

    def factor(self) -> None:
        """Shared factors out of sums, numbers too (``2*a - 2*b -> 2*(a - b)``)."""
        for name, expr in list(self.exprs.items()):
            candidates = [self.collected(expr)]
            try:
                candidates.append(self.sp.factor_terms(candidates[0]))
            except Exception:  # sympy gives up on some expressions: keep ours
                pass
            wanted = self.names(expr)
            safe = [c for c in candidates if self.names(c) >= wanted]
            self.exprs[name] = min(safe, key=self.cost)

    def collected(self, expr):
        """`expr` with a factor two terms of a sum share pulled out (``a*s + b*s -> (a + b)*s``)
        wherever that is cheaper, in sums at any depth."""
        sp = self.sp
        if not expr.args or expr.is_Atom:
            return expr
        args = [self.collected(a) for a in expr.args]
        if any(a is not b for a, b in zip(args, expr.args, strict=True)):
            expr = expr.func(*args, evaluate=False) if expr.is_Mul else expr.func(*args)
        if not expr.is_Add:
            return expr
        wanted, best, best_cost = self.names(expr), expr, self.cost(expr)
        improved = True
        while improved and best.is_Add:
            improved = False
            counts = collections.Counter(s for t in best.args for s in t.free_symbols)
            for symbol in sorted((s for s, n in counts.items() if n > 1), key=str):
                try:
                    candidate = sp.collect(best, symbol)
                except Exception:  # sympy's collect gives up on some expressions: skip
                    continue
                cost = self.cost(candidate)
                if cost < best_cost - 1e-9 and self.names(candidate) >= wanted:
                    best, best_cost, improved = candidate, cost, True
                    break
        return best

    # -- writing -------------------------------------------------------------------------------

    def emit(self, roots: list[str], printer, comments: dict) -> tuple | None:
        """(cost, statement count, lines): `roots` in order, each after the assignments it
        reads that are not written yet."""
        lines: list = []
        done: set[str] = set()
        cost = 0.0
        floats = self.segment.context.floats
        try:
            for root in roots:
                start = len(lines)
                stack = [(root, False)]
                while stack:
                    name, ready = stack.pop()
                    if name in done:
                        continue
                    if ready:
                        done.add(name)
                        expr = self.exprs[name]
                        cost += operations(self.sp, expr) + STATEMENT_COST
                        is_float = printer.flavor == 1 and floating(self.sp, expr, floats)
                        if is_float:
                            floats.add(name)
                        lines.append(_assign(name, printer.code(expr, floating=is_float)))
                        continue
                    stack.append((name, True))
                    needed = sorted(self.names(self.exprs[name]) & set(self.exprs), reverse=True)
                    stack.extend((n, False) for n in needed if n not in done)
                if comments.get(root) and len(lines) > start:
                    lines[start] = lines[start].with_changes(leading_lines=tuple(comments[root]))
        except Unprintable:
            return None
        return cost - max(self.recomputed, 0.0), len(lines), lines


def _numbered(sp, context: Context):
    while True:
        yield sp.Symbol(context.fresh(), real=True)


def _assign(target: str, code: str) -> cst.SimpleStatementLine:
    value = cst.parse_expression(code)
    return cst.SimpleStatementLine((cst.Assign((cst.AssignTarget(cst.Name(target)),), value),))
