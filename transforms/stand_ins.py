"""Part of pass 7 (reverse): primal results the derivative reads only for their shape and dtype
are not computed; a stand-in of that shape and dtype is.

A rule's template often reads a value only for its shape (``unbroadcast(g, x)``,
``resize_like(t, a)``) or dtype (``real_like(t, a)``). The shapes pass makes most such reads
unnecessary by naming an earlier value of the same shape; where none is known, the primal
sweep used to compute the value for its shape alone: ``np.fft.rfft(x)`` for the adjoint of
``rfft(x) * h``, a whole transform. A primitive whose rule says what its result looks like
(`Rule.result_like`: ``rfft_like(x)``; ``elementwise_like`` for sums and products) is computed
as a stand-in instead (`fft_helpers.stand_in`: a zero-strided array, no memory)
when every read of its result is such a read, and its arguments in turn are then read only for
their shapes. The statements are visited last to first, so a chain of such values (``t =
rfft(x)``, ``u = t * h``, ``y = irfft(u, n)``) becomes stand-ins in one walk.

Input and output: the gradient function's body, a list of statements. Only top-level
assignments of one name, assigned nowhere else, are replaced.
"""

from __future__ import annotations

import libcst as cst
from s2sgrad.runtime import SHAPE_ONLY_ARGUMENTS, STAND_IN_READS

from .activity import Activity
from .operations import Operation
from .shapes import ShapeTokens
from .walk import dotted_name, visit

# helper -> positions of the arguments it reads only for their shape and dtype
_READS = {**SHAPE_ONLY_ARGUMENTS, **STAND_IN_READS}


class _Reads(cst.CSTVisitor):
    """Per name: how often it is read for its value, for its shape only, and assigned."""

    def __init__(self, step: int = 1) -> None:
        self.values: dict[str, int] = {}
        self.shapes: dict[str, int] = {}
        self.assigned: dict[str, int] = {}
        self.step = step

    def _add(self, table: dict[str, int], name: str) -> None:
        table[name] = table.get(name, 0) + self.step

    def visit_Name(self, node: cst.Name) -> None:
        self._add(self.values, node.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        return self._target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._target(node.target)

    def _target(self, target: cst.BaseExpression) -> bool:
        if isinstance(target, cst.Name):
            self._add(self.assigned, target.value)
            return False
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._target(element.value)
            return False
        return True  # a subscript or attribute target reads its base

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name):
            self._add(self.assigned, node.target.value)

    def visit_Call(self, node: cst.Call) -> bool:
        positions = _READS.get(dotted_name(node.func) or "")
        if not positions:
            return True
        visit(node.func, self)
        for k, arg in enumerate(node.args):
            if k in positions and arg.keyword is None and isinstance(arg.value, cst.Name):
                self._add(self.shapes, arg.value.value)
            else:
                visit(arg, self)
        return False


def _stand_in(op: Operation, lists: frozenset[str]) -> cst.Call | None:
    """The call computing a stand-in for `op`'s result, or None when its rule has none (or
    it may join or repeat `lists`, whose lengths a stand-in of ``xs * 2`` would not know)."""
    rule = op.rule
    if rule is None or rule.result_like is None or op.index is not None or op.user:
        return None
    if any(isinstance(a, cst.Name) and a.value in lists for a in op.args) or op.targets[0] in lists:
        return None
    args = [cst.Arg(a) for a in op.args]
    args += [cst.Arg(v, keyword=cst.Name(k)) for k, v in op.kwargs.items()]
    return cst.Call(cst.Name(rule.result_like.__name__), args)


def _assigned_name(line) -> str | None:
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    statement = line.body[0]
    if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
        return None
    target = statement.targets[0].target
    return target.value if isinstance(target, cst.Name) else None


def stand_ins(body: list, activity: Activity, shapes: ShapeTokens) -> list:
    """`body` with the assignments of values read only for their shapes and dtypes computing
    stand-ins (see the module docstring)."""
    ops = {op.targets[0]: op for _, op in activity.operations if len(op.targets) == 1 and op.rule}
    reads = _Reads()
    for line in body:
        visit(line, reads)
    body = list(body)
    for k in range(len(body) - 1, -1, -1):
        name = _assigned_name(body[k])
        op = ops.get(name) if name is not None else None
        if op is None or reads.values.get(name) or reads.assigned.get(name) != 1:
            continue
        old = body[k].body[0]
        if not reads.shapes.get(name):
            # never read (the output's value, in a gradient): dead, and the optimizer drops
            # it, so what it reads does not count
            visit(old.value, _Counter(reads, -1))
            continue
        replacement = _stand_in(op, shapes.maybe_sequences)
        if replacement is None:
            continue
        visit(old.value, _Counter(reads, -1))
        visit(replacement, _Counter(reads, 1))
        body[k] = body[k].with_changes(body=(old.with_changes(value=replacement),))
    return body


class _Counter(_Reads):
    """Adds (`step` 1) or removes (-1) the reads of one expression in a `_Reads`' tables."""

    def __init__(self, reads: _Reads, step: int) -> None:
        super().__init__(step)
        self.values, self.shapes, self.assigned = reads.values, reads.shapes, reads.assigned
