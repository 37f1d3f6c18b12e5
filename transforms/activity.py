"""Pass 5, activity: which values need an adjoint.

An analysis over a `NormalForm`. A value is *varied* if it depends on a differentiated input
through differentiable operations, *useful* if the output depends on it; it is *active*, and
gets an adjoint, when it is both. So ``np.linspace``, masks, index arithmetic and anything
computed from constants alone are left alone and need no rule. A varied, useful value computed
by a callable with no rule is an error (`LookupError` naming it), raised here, before any
code is generated.
"""

from __future__ import annotations

import dataclasses
import operator

import libcst as cst
import numpy as np

from .anf import NormalForm
from .errors import TransformError
from .library import missing_rule_hint
from .operations import (
    APPEND,
    COPY,
    FUNCTION_VALUE,
    PACK,
    POP,
    SETITEM,
    Classifier,
    Operation,
    evaluate_spelling,
    is_append,
    names_in,
)
from .templates import load_template
from .walk import read_names


@dataclasses.dataclass(frozen=True)
class Activity:
    """The result of activity analysis.

    Attributes:
        operations: the `Operation` of every assignment, by statement position.
        active: names that need an adjoint.
    """

    operations: tuple[tuple[int, Operation], ...]
    active: frozenset[str]
    by_statement: dict = dataclasses.field(default_factory=dict, compare=False)

    def operation(self, statement: cst.Assign) -> Operation:
        """The operation of one assignment statement of the normal form."""
        return self.by_statement[id(statement)]

    def is_active(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Name) and expr.value in self.active


def analyze_activity(
    nf: NormalForm,
    classifier: Classifier,
    wrt: tuple[str, ...],
    mode: str = "reverse",
    generated: bool = False,
) -> Activity:
    """Find the active values of `nf` for derivatives with respect to `wrt`.

    `generated`: `nf` is code s2sgrad generated, transformed again (a higher order). Its
    subscripts index by position, slot or key, values no derivative flows through, even
    where this analysis cannot tell them from a varied value: a position the forward half of
    a split callee saved, handed to its backward half inside one tuple with the values, is
    varied as a whole (`_Positions` follows tuples within one function, not through a
    parameter). Only an index-making object (``np.r_[...]``) is still checked there.

    Raises:
        LookupError: an active value is computed by a callable that has no gradient rule.
    """
    assignments = [s for s in nf.statements if isinstance(s, cst.Assign) or is_append(s)]
    operations = tuple((i, classifier.classify(s)) for i, s in enumerate(assignments))
    # Loops carry values around their back edges, so each sweep repeats until nothing changes.
    varied = set(wrt)
    positions = _Positions()
    # lambdas: their closed-over names flow into a function of the user's they are given to
    # (which is refused if it calls them), not into a primitive (``sorted(key=...)`` orders)
    functions = {t for _, op in operations if op.primitive is FUNCTION_VALUE for t in op.targets}
    while True:
        before = (len(varied), positions.size())
        for _, op in operations:
            inputs = [*op.input_names(), *_index_names(op)]  # np.r_[x, 1.0]: x flows
            if functions and not op.user:
                inputs = [name for name in inputs if name not in functions]
            unpacked = positions.varied_unpacked(op)
            if positions.reads_unvaried(op):
                pass  # an element of a tuple that no varied value was put in
            elif unpacked is not None:
                varied.update(unpacked)  # ``a, i = stack.pop()``: by position
            elif (op.differentiable or op.primitive is FUNCTION_VALUE) and any(
                name in varied for name in inputs
            ):
                varied.update(op.targets)
            positions.record(op, varied)
        if (len(varied), positions.size()) == before:
            break
    useful = set()
    if isinstance(nf.output, cst.Name) and nf.output.value in varied:
        useful.add(nf.output.value)
    while True:
        before = len(useful)
        for _, op in reversed(operations):
            if any(t in useful for t in op.targets) and op.differentiable:
                useful.update(n for n in op.input_names() if n in varied)
        if len(useful) == before:
            break
    active = frozenset(varied & useful)
    for _, op in operations:
        if op.differentiable and any(t in useful and t in varied for t in op.targets):
            if not generated or _makes_an_index(op, classifier):
                _check_index(op, nf, varied)
        if op.differentiable and any(t in active for t in op.targets):
            _check_rule(op, nf, mode)
            _check_defined(op, nf, active)
            _check_results(op, nf)
    by_statement = {id(s): op for s, (_, op) in zip(assignments, operations, strict=True)}
    return Activity(operations=operations, active=active, by_statement=by_statement)


class _Positions:
    """Which positions of tuples hold varied values, followed through a list of tuples used
    as a stack: ``t = (i, x); s.append(t)`` then ``u = s.pop(); j = u[0]``. An element read
    at a position no varied value was put in is not varied, though the tuple as a whole is:
    the loop counter a backward sweep pops beside saved values is an index, not a value with
    a derivative (its item writes would otherwise be taken for an index that depends on the
    input). A list of tuples itself saved in a tuple (the stack of an inner loop, pushed
    on the outer loop's stack each iteration) is followed through that tuple too. A name
    assigned in any other way is not followed."""

    def __init__(self):
        self.own: dict[str, set[int]] = {}  # tuple -> its varied positions
        self.items: dict[str, set[int]] = {}  # list of tuples -> their varied positions
        self.lists: dict[str, dict[int, set[int]]] = {}  # tuple or list of tuples -> the
        # followed lists at its (items') positions: position -> their `items` set
        self.lost: set[str] = set()  # names assigned otherwise: not followed

    def size(self) -> int:
        return sum(map(len, self.own.values())) + sum(map(len, self.items.values())) + len(
            self.lost
        )

    def reads_unvaried(self, op: Operation) -> bool:
        if op.primitive is not operator.getitem or len(op.index or ()) != 1:
            return False  # (an item write is no read: ``L[0] = x`` varies L)
        if not isinstance(op.args[0], cst.Name):
            return False
        base, inner = op.args[0].value, op.index[0].slice
        if base in self.lost or base not in self.own or not isinstance(inner, cst.Index):
            return False
        if not isinstance(inner.value, cst.Integer):
            return False
        return int(inner.value.value) not in self.own[base]

    def varied_unpacked(self, op: Operation) -> list[str] | None:
        """For ``a, b = stack.pop()`` from a followed stack, the targets at varied positions;
        None for any other operation."""
        if op.primitive is not POP or len(op.targets) < 2:
            return None
        items = op.args[0].value
        if items not in self.items or items in self.lost:
            return None
        return [t for k, t in enumerate(op.targets) if k in self.items[items]]

    def record(self, op: Operation, varied: set) -> None:
        positional = all(
            isinstance(key, cst.Integer) and key.value == k for k, key in op.kwargs.items()
        )  # (a tuple or list literal; a dict's keys are not its positions)
        if op.primitive is PACK and len(op.targets) == 1 and positional:
            target = op.targets[0]
            if not op.args:  # ``s = []``: a list to append tuples to
                self.items.setdefault(target, set())
                return
            found = {k for k, e in enumerate(op.args) if any(n in varied for n in names_in(e))}
            self.own.setdefault(target, set()).update(found)
            for k, e in enumerate(op.args):
                if isinstance(e, cst.Name) and e.value in self.items and e.value not in self.lost:
                    self._share(target, k, self.items[e.value])
            return
        if op.primitive is APPEND:
            items, value = op.args[0].value, op.args[1]
            if items in self.items and isinstance(value, cst.Name) and value.value in self.own:
                if value.value not in self.lost:
                    self.items[items].update(self.own[value.value])
                    for k, shared in self.lists.get(value.value, {}).items():
                        self._share(items, k, shared)
                    return
            if any(n in varied for n in names_in(value)):
                self.lost.add(items)
            return
        if op.primitive is POP and len(op.targets) == 1:
            items = op.args[0].value
            if items in self.items and items not in self.lost:
                self.own.setdefault(op.targets[0], set()).update(self.items[items])
                for k, shared in self.lists.get(items, {}).items():
                    self._share(op.targets[0], k, shared)
                return
        saved = self._saved_list(op)
        if saved is not None:  # ``inner = t[5]``: a list saved in a popped tuple
            self._follow(op.targets[0], saved)
            return
        listed = self._item_of_list(op)
        if listed is not None:  # ``t = s[i]``: one of the tuples appended to `s`
            self.own.setdefault(op.targets[0], set()).update(self.items[listed])
            for k, shared in self.lists.get(listed, {}).items():
                self._share(op.targets[0], k, shared)
            return
        if op.primitive is POP:  # ``a, inner = stack.pop()``: a saved list is followed on
            items = op.args[0].value
            saved = self.lists.get(items, {}) if items not in self.lost else {}
            for k, target in enumerate(op.targets):
                if k in saved:
                    self._follow(target, saved[k])
                else:
                    self.lost.add(target)
            return
        if op.primitive is COPY and isinstance(op.args[0], cst.Name):
            source = op.args[0].value
            if source in self.items and source not in self.lost:  # the same list: one set
                shared, before = self.items[source], self.items.get(op.targets[0])
                if before is not None and before is not shared:
                    shared.update(before)
                    before.update(shared)
                self.items[op.targets[0]] = shared
                return
        if op.name == "constant" and op.args and _is_none(op.args[0]):
            return  # ``s_1 = None`` where a branch has no list: nothing to pop there
        self.lost.update(op.targets)

    def _saved_list(self, op: Operation) -> set[int] | None:
        """For ``inner = t[k]``, the `items` of the followed list tuple `t` holds at `k`."""
        if op.primitive is not operator.getitem or len(op.index or ()) != 1:
            return None
        if not isinstance(op.args[0], cst.Name):
            return None
        base, inner = op.args[0].value, op.index[0].slice
        if base in self.lost or not isinstance(inner, cst.Index):
            return None
        if not isinstance(inner.value, cst.Integer) or len(op.targets) != 1:
            return None
        return self.lists.get(base, {}).get(int(inner.value.value))

    def _item_of_list(self, op: Operation) -> str | None:
        """For ``t = s[i]`` (an item read, not a slice) of a followed list of tuples, `s`."""
        if op.primitive is not operator.getitem or len(op.index or ()) != 1:
            return None
        if not isinstance(op.args[0], cst.Name):
            return None
        base, inner = op.args[0].value, op.index[0].slice
        if base in self.lost or base not in self.items or not isinstance(inner, cst.Index):
            return None
        return base if len(op.targets) == 1 else None

    def _share(self, holder: str, position: int, items: set[int]) -> None:
        """`holder` (a tuple, or a list of tuples) holds at `position` a followed list whose
        tuples' varied positions are `items` (one set, shared by every name of that list)."""
        positions = self.lists.setdefault(holder, {})
        before = positions.get(position)
        if before is not None and before is not items:
            items.update(before)
            before.update(items)
        else:
            positions[position] = items

    def _follow(self, name: str, items: set[int]) -> None:
        """`name` is (again) a followed list of tuples, varied at the positions `items`."""
        before = self.items.get(name)
        if before is not None and before is not items:
            items.update(before)
            before.update(items)
        else:
            self.items[name] = items


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _index_names(op: Operation) -> list[str]:
    if op.index is None:
        return []
    names: list[str] = []
    for element in op.index:
        read_names(element.slice, names)
    return names


_INDEX_MAKERS = (np.r_, np.c_, np.mgrid, np.ogrid, np.s_, np.index_exp)


def _makes_an_index(op: Operation, classifier: Classifier) -> bool:
    """``np.r_[x, 1.0]`` and its kin: a subscript whose "index" is data, not a position."""
    if op.primitive is not operator.getitem or not op.args:
        return False
    found, base = evaluate_spelling(op.args[0], classifier.namespace)
    return found and any(base is maker for maker in _INDEX_MAKERS)


def _check_index(op: Operation, nf: NormalForm, varied: set) -> None:
    """A subscript whose index depends on the differentiated input (``np.r_[x, 1.0]``,
    ``np.c_[...]``, ``np.mgrid[0:x:5j]``) has no rule: its derivative is not zero."""
    if not any(name in varied for name in _index_names(op)):
        return
    origin = nf.origins.get(op.targets[0])
    where = f" (used at {origin})" if origin is not None else ""
    indexed = cst.Module(()).code_for_node(op.args[0])
    raise LookupError(
        f"no gradient registered for {indexed}[...] with an index that depends on the "
        f"differentiated input{where}: build the array with np.concatenate, np.stack or "
        f"np.array instead (for a dict read with keys from a loop over the dict itself, "
        f"`for k in d`, loop over d.keys() or d.items(): a loop over a name reads it by "
        f"position)"
    )


def _check_rule(op: Operation, nf: NormalForm, mode: str) -> None:
    known = op.user or op.primitive in (COPY, SETITEM, PACK, APPEND, POP) or op.index is not None
    if known or (op.rule is not None and op.rule.vjp is not None and mode == "reverse"):
        return
    if op.rule is not None and mode == "forward" and op.rule.has_forward_rule:
        return
    origin = nf.origins.get(op.targets[0])
    where = f" (used at {origin})" if origin is not None else ""
    kind = "gradient" if mode == "reverse" else "forward-mode (JVP) rule"
    hint = missing_rule_hint(op.primitive, op.name, mode)
    if op.primitive is None and op.name.startswith("array method .") and not hint:
        hint += (
            "; methods of a NamedTuple or dataclass argument are not differentiated either: "
            "read its fields in the function (p.W) or pass them to a function of your own "
            "(energy(p.k, x)), which s2sgrad transforms in turn"
        )
    raise LookupError(f"no {kind} registered for {op.name}{where}{hint}")


def _check_defined(op: Operation, nf: NormalForm, active: frozenset[str]) -> None:
    """An argument whose contribution the rule marks ``undefined_gradient(g)`` (a derivative
    with no closed form: a Bessel function's order, ``betainc``'s shape parameters) must not
    carry a derivative: a LookupError now, rather than a NaN gradient when it runs."""
    if op.rule is None or op.rule.vjp is None:
        return
    template = load_template(op.rule.vjp)
    if not isinstance(template.result, cst.Tuple):
        return
    for k, element in enumerate(template.result.elements):
        value = element.value
        if not (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Name)
            and value.func.value == "undefined_gradient"
            and k < len(template.params)
        ):
            continue
        param = template.params[k]
        arg = op.args[k] if k < len(op.args) else op.kwargs.get(param)
        if arg is None or not any(name in active for name in names_in(arg)):
            continue
        origin = nf.origins.get(op.targets[0])
        where = f" (used at {origin})" if origin is not None else ""
        raise LookupError(
            f"no gradient registered for {op.name} with respect to its argument {param!r}"
            f"{where}: its derivative there has no closed form. Differentiate with respect to "
            f"its other arguments only, or register a rule of your own with sg.register_vjp"
        )


def _check_results(op: Operation, nf: NormalForm) -> None:
    """An active ``a, b = f(x)`` statement is one only for a primitive registered as returning
    a tuple (``output=``), and such a primitive's result is unpacked: any other pairing would
    give every name but one a zero derivative in forward mode (the normal form reads an
    array's elements instead, so this is a compiler error, never the user's)."""
    if op.rule is None or op.user or op.primitive in (COPY, SETITEM, PACK, APPEND, POP):
        return
    if len(op.targets) > 1 and op.rule.output is None:
        message = f"cannot differentiate through the unpacked result of {op.name}"
    elif len(op.targets) == 1 and op.rule.output is not None:
        message = f"unpack the result of {op.name} into names (a, b = ...) to differentiate it"
    else:
        return
    origin = nf.origins.get(op.targets[0])
    if origin is None:
        raise TransformError(message, "<unknown>", 1, 0)
    raise TransformError(message, origin.filename, origin.line, origin.col, origin.text)
