"""Pass 3b, mutation: find every change made in place that single-assignment form would
miss, and reject it (or, for an augmented assignment to an argument, say what it needs).

Normal form (`anf`) gives each assignment a name of its own, turns ``y op= v`` into
``y = y op v`` and keeps ``y[i] = v`` as a write that updates ``y`` alone. That is the truth
only while no other name shares ``y``'s memory. This analysis follows memory through the
source: each value gets *tokens* standing for the objects it may reference (a new object gets
a fresh token; a copy ``b = a``, a view ``a[1:]``, ``a.T``, ``a.reshape(...)``,
``np.asarray(a)``, a list holding ``a`` and anything a call may hand back share ``a``'s).
Then:

- a method or function that changes an array or list in place other than by the writes normal
  form models (``x.fill``, ``x.sort()``, ``np.put``, ``np.copyto``, ``out=``, ``list.extend``,
  ...) is a `TransformError` naming what to write instead;
- an item write or augmented assignment to a value that may share memory with an argument or
  a global is a `TransformError`;
- an in-place change through one name marks every other name sharing its memory as changed
  behind its back; reading such a name afterwards is a `TransformError` at the change.

Numbers cannot change: ``s += 1`` on a Python number or a NumPy scalar only rebinds it, and
``d[k] += v`` on a slot holding one changes the dict, not the number. So each value also has a
*kind* (`in_place.SCALAR`, ...): a number (literals, ``abs``/``math``/``float()``, reductions
with no axis, ``np.dot`` of vectors, an element of a 1-D array or of a list of numbers, and
arithmetic on numbers), an array of known rank, or not known. A number references no memory.
An argument's kind is known only per specialization (the dispatcher specializes on Python
numbers and array ranks), so the walk runs once with every argument ``ANY`` (a number where
only an array would be refused): what it refuses is refused for every argument type, at
transform time; and once with nothing known: if that refuses too, a `NumberCheck` runs the walk
again when the types are known (`shapes.infer_shapes`), raising at the user's line at the
first call.

Loops are walked until what they change stops growing; both branches of an ``if`` are
walked and joined; a nested function is walked where it is called, its parameters sharing
the memory of the arguments; a user function is walked again for each call, with the kinds of
that call's arguments. The tables of what changes in place, what shares memory and what kind
a result has are in `in_place`, what a value references in `memory`, the walk of calls in
`mutation_calls`.
"""

from __future__ import annotations

import dataclasses
import itertools
import typing

import libcst as cst

from .errors import TransformError
from .in_place import (
    ANY,
    COMPREHENSIONS,
    CONSTANTS,
    EMPTY,
    IMMUTABLE,
    INT,
    LITERALS,
    MUTABLE,
    NUMBERS,
    PLAIN_ATTRIBUTES,
    SCALAR,
    VIEW_ATTRIBUTES,
    child_expressions,
    elements_of,
    indexed_kind,
    is_integer_operator,
    items_kind,
    join_kinds,
    kind_of_value,
    operation_kind,
    product_kind,
)
from .memory import NOTHING, Change, Refs, State, make
from .mutation_calls import CallWalker, may_change
from .parse import ParsedFunction
from .resolve import Resolution


@dataclasses.dataclass(frozen=True)
class NumberCheck:
    """The walk to run again once the arguments' types are known: what it refuses depends on
    which arguments are numbers (``y op= v`` rebinds a number and changes an array in place)."""

    parsed: ParsedFunction
    resolution: Resolution

    def verify(self, numbers: frozenset[str], ndims: typing.Mapping[str, int] | None = None):
        """Raise the `TransformError`, if any, for arguments of these types: `numbers` are
        Python numbers, `ndims` arrays of that rank, the others not known."""
        ndims = ndims or {}
        kinds = {p: SCALAR if p in numbers else ndims.get(p) for p in self.resolution.params}
        _walk(self.parsed, self.resolution, kinds)


def _number_refusal(parsed, node, name: str, param: str, operator: str) -> TransformError:
    which = repr(name) if name == param else f"{name!r} (a copy of it)"
    return parsed.error(
        node,
        f"in-place update of {which}, which is the argument {param!r}, is only supported "
        f"when {param} is a Python number (an array would be changed for the caller): write "
        f"{name} = {name} {operator} ... instead",
    )


def check_mutation(parsed: ParsedFunction, resolution: Resolution) -> tuple[NumberCheck, ...]:
    """Walk `parsed` (see the module docstring): raise `TransformError` at the first change
    made in place that normal form would miss whatever the arguments are; return the check
    left for when the arguments' types are known."""
    if parsed.filename.startswith("<s2sgrad") or not may_change(parsed, resolution, set()):
        # generated code transformed again (higher order) changes in place only what it owns,
        # adjoint buffers and the stacks its forward half hands its backward half
        return ()
    _walk(parsed, resolution, dict.fromkeys(resolution.params, ANY))
    try:
        _walk(parsed, resolution, dict.fromkeys(resolution.params))
    except TransformError:
        return (NumberCheck(parsed, resolution),)
    return ()


def _walk(parsed: ParsedFunction, resolution: Resolution, kinds: dict, active=None):
    """One walk, with the arguments of `kinds` (`active`: the user functions being walked
    with the kinds of their arguments, which a recursive call does not walk again, each with
    the kind its result is assumed to have); returns the kind of what the function returns
    and, for a container (``return x, v``), the kind of its items (None: not known): a
    caller unpacking the result knows its numbers are numbers."""
    walker = _Walker(parsed, resolution, active)
    memory = {p: make(frozenset({f"arg:{p}"}), kind=kinds[p]) for p in resolution.params}
    arguments = {p: p for p in resolution.params}
    walker.block(list(parsed.funcdef.body.body), State(memory, {}, set(), arguments))
    if not walker.returned or not all(_returns(line) for line in parsed.funcdef.body.body[-1:]):
        return None, None  # (falls off its end: None)
    kind, items = walker.returned[0].kind, walker.returned[0].items
    for refs in walker.returned[1:]:
        kind, items = join_kinds(kind, refs.kind), join_kinds(items, refs.items)
    return kind, items


def _returns(line) -> bool:
    """A last statement that is a return (the function cannot fall off its end)."""
    return isinstance(line, cst.SimpleStatementLine) and isinstance(line.body[-1], cst.Return)


class _Walker(CallWalker):
    def __init__(self, parsed: ParsedFunction, resolution: Resolution, active=None):
        self.parsed = parsed
        self.resolution = resolution
        self.active = active or {}  # user functions being walked -> assumed result kind
        self.walked: dict = {}  # (callee, argument kinds) -> the kinds of its result and items
        self.fresh = itertools.count()
        self.nested: dict[str, cst.FunctionDef] = {}
        self.returned: list[Refs] = []

    # -- statements ------------------------------------------------------------------------
    def block(self, statements, state: State) -> None:
        for statement in statements:
            if isinstance(statement, cst.If):
                self.expression(statement.test, state)
                other = state.copy()
                self.block(list(statement.body.body), state)
                orelse = statement.orelse
                if isinstance(orelse, cst.If):
                    self.block([orelse], other)
                elif orelse is not None:
                    self.block(list(orelse.body.body), other)
                state.join(other)
            elif isinstance(statement, (cst.For, cst.While)):
                self.loop(statement, state)
            elif isinstance(statement, cst.FunctionDef):
                self.nested[statement.name.value] = statement
            elif isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    self.small(small, state)

    def loop(self, node, state: State) -> None:
        """Walk the body until the state at its start stops changing (a change late in one
        iteration is seen by a read early in the next); the loop may also run no times."""
        entry = state.copy()  # (a for loop evaluates its iterable once, before it runs)
        # the values an iterable that is no name holds (``[(a, x[::-1]), ...]``): a change
        # in the body to memory they share is seen by the next iteration, not by normal form
        iterated = None
        if isinstance(node, cst.For) and not isinstance(node.iter, cst.Name):
            iterated = f"<iterable {id(node)}>"
            state.memory[iterated] = self.expression(node.iter, entry)
        for _ in range(8):
            before = state.copy()
            if isinstance(node, cst.For):
                self.expression(node.iter, state)  # (a read of a name changed in the loop)
                if iterated is not None and iterated in state.changed:
                    raise self.iterable_changed(node, state.changed[iterated])
                self.bind_loop_target(node.target, node.iter, state, entry)
            else:
                self.expression(node.test, state)
            self.block(list(node.body.body), state)
            state.join(before)
            if state.key() == before.key():
                break
        if iterated is not None:
            state.memory.pop(iterated, None)
            state.changed.pop(iterated, None)

    def iterable_changed(self, node: cst.For, change: Change) -> TransformError:
        line = self.parsed.position(node)[0]
        code = cst.Module(()).code_for_node(node.iter)
        return self.parsed.error(
            change.node,
            f"{change.writer!r} {change.what} here, and the loop at line {line} runs over "
            f"values that share its memory ({code}), read again in its next iteration: "
            f"s2sgrad cannot follow a change made through another name; make "
            f"{change.writer!r} a copy (.copy()) before the loop, or build those values in "
            f"the loop's body",
        )

    def bind_loop_target(self, target, iterable, state: State, entry: State) -> None:
        """``for target in iterable``: ``enumerate(xs)`` gives an integer and an item of
        ``xs``, ``zip(a, b)`` an item of each, ``reversed(xs)`` an item of ``xs``; the items
        are those of the iterable as it was at the loop's `entry` (names rebound in the
        body do not change what it iterates). Nested targets follow nested iterables:
        ``for i, (p, q) in enumerate(zip(a, b))`` binds ``p`` to an item of ``a``."""
        builtin = None
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name):
            found, value = self.resolution.value_of(iterable.func)
            if found and value in (enumerate, zip, reversed) and iterable.args:
                builtin = value
        arguments = [a.value for a in iterable.args] if builtin else []
        if builtin is reversed and len(arguments) == 1:
            self.bind(target, self.element_of(arguments[0], entry), state, None)
            return
        pairs = isinstance(target, (cst.Tuple, cst.List)) and not any(
            isinstance(e, cst.StarredElement) for e in target.elements
        )
        if pairs and builtin is enumerate and len(arguments) == 1 and len(target.elements) == 2:
            self.bind(target.elements[0].value, Refs(kind=INT), state, None)
            self.bind_loop_target(target.elements[1].value, arguments[0], state, entry)
            return
        if pairs and builtin is zip and len(arguments) == len(target.elements):
            for element, argument in zip(target.elements, arguments, strict=True):
                self.bind_loop_target(element.value, argument, state, entry)
            return
        rows = _tuple_rows(iterable, len(target.elements)) if pairs else None
        if rows:  # for W, b in [(W1, b1), (W2, b2)]: W is W1 or W2, b is b1 or b2
            for k, element in enumerate(target.elements):
                refs = self.expression(rows[0][k], entry)
                for row in rows[1:]:
                    refs = refs | self.expression(row[k], entry)
                self.bind(element.value, refs, state, None)
            return
        self.bind(target, self.element_of(iterable, entry), state, None)

    def small(self, node: cst.BaseSmallStatement, state: State) -> None:
        if isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None:
            refs = self.expression(node.value, state)
            targets = node.targets if isinstance(node, cst.Assign) else [node]
            for target in targets:
                self.bind(target.target, refs, state, node.value)
        elif isinstance(node, cst.AugAssign):
            self.augmented(node, state)
        elif isinstance(node, cst.Return) and node.value is not None:
            self.returned.append(self.expression(node.value, state))
        elif isinstance(node, cst.Expr):
            self.expression(node.value, state)
        elif isinstance(node, (cst.Assert, cst.Raise)):
            for field in ("test", "msg", "exc", "cause"):
                child = getattr(node, field, None)
                if isinstance(child, cst.BaseExpression):
                    self.expression(child, state)

    def bind(self, target, refs: Refs, state: State, value) -> None:
        """`target` now names `refs` (`value`: the expression, when there is one)."""
        if isinstance(target, cst.Name):
            name = target.value
            state.memory[name] = refs
            state.changed.pop(name, None)
            state.containers.discard(name)
            if value is not None and _makes_container(value, state):
                state.containers.add(name)
                twins = self._twins(value, refs, state)
                if twins:  # one object at two slots (``[y, y]``, ``[np.zeros(3)] * 3``),
                    # which a slot changed in place changes at the other (`item_write`)
                    state.memory[f"another slot of {name}"] = Refs(held=twins)
                else:
                    state.memory.pop(f"another slot of {name}", None)
            source = value.value if isinstance(value, cst.Name) else None
            param = state.copies_of.get(source)
            if param is not None:
                state.copies_of[name] = param
            else:
                state.copies_of.pop(name, None)
        elif isinstance(target, (cst.Tuple, cst.List)):
            values = elements_of(value, len(target.elements))
            container = refs.items is not None or (
                isinstance(value, cst.Name) and value.value in state.containers
            )
            items = [
                refs.element(container) if v is None else self.refs_of(v, state) for v in values
            ]
            starred = [isinstance(e, cst.StarredElement) for e in target.elements]
            if any(starred):  # first, *rest = xs: the items are xs's, rest a new list
                values = [None] * len(values)
            for k, (element, item, item_refs, star) in enumerate(
                zip(target.elements, values, items, starred, strict=True)
            ):
                if star and isinstance(element.value, cst.Name):
                    listed = Refs(self.new_token(), item_refs.all, None, item_refs.kind)
                    self.bind(element.value, listed, state, None)
                    state.containers.add(element.value.value)
                    continue
                self.bind(element.value, item_refs, state, item)
                self.stale_items(element.value, target.elements[k + 1 :], items[k + 1 :], state)
        elif isinstance(target, cst.Subscript):
            self.item_write(target, refs, state, target, in_place=False)

    def stale_items(self, written, targets, later: list[Refs], state: State) -> None:
        """After ``a[i]`` of a tuple assignment is written, the values the later targets get
        were read before the write: one that is a view of `a` gets what the write left
        there (``B[0], B[2] = B[2], B[0]`` on rows leaves both rows equal, where normal
        form, which reads values, would swap them)."""
        if not (isinstance(written, cst.Subscript) and isinstance(written.value, cst.Name)):
            return
        base = written.value.value
        tokens = state.memory[base].own if base in state.memory else frozenset()
        for target, refs in zip(targets, later, strict=True):
            if refs.kind not in NUMBERS and refs.surely & tokens:
                raise self.parsed.error(
                    written,
                    f"{base!r} is written into here, and the value a later target of this "
                    f"assignment gets ({_code(target.value)}) shares its memory (a view of "
                    f"the same array), read before the write: NumPy assigns it as the write "
                    f"left it, so the values are not swapped; take copies on the right "
                    f"(.copy()), or write the slots at once ({base}[[0, 2]] = {base}[[2, 0]])",
                )

    def refs_of(self, expr, state: State) -> Refs:
        """The references of an already walked expression (a name, read again)."""
        if isinstance(expr, cst.Name) and expr.value in state.memory:
            return state.memory[expr.value]
        return self.expression(expr, state)

    def _twins(self, value, refs: Refs, state: State) -> frozenset[str]:
        """The objects a list or dict built by `value` (whose references are `refs`) holds
        at two slots or more: its items, repeated by ``[...] * n`` (numbers and None are no
        objects), or those two items of a literal share."""
        if _repeats(value, state):
            literal = value.left if isinstance(value.left, cst.List) else value.right
            constants = (cst.Integer, cst.Float, cst.Imaginary, cst.UnaryOperation)
            if isinstance(literal, cst.List) and all(
                isinstance(e.value, constants)
                or (isinstance(e.value, cst.Name) and e.value.value in ("None", "True", "False"))
                for e in literal.elements
            ):
                return frozenset()
            return refs.held
        if isinstance(value, (cst.List, cst.Tuple)):
            items = [e.value for e in value.elements]
        elif isinstance(value, cst.Dict):
            items = [e.value for e in value.elements if isinstance(e, cst.DictElement)]
        else:
            return frozenset()
        seen: set[str] = set()
        twins: set[str] = set()
        for item in items:  # (names, and views of them: ``[y, y[:2]]``; other items were
            # walked already, and a second walk of a call is neither free nor without effects)
            while isinstance(item, (cst.Subscript, cst.Attribute)):
                item = item.value
            if isinstance(item, cst.Name) and item.value in state.memory:
                tokens = state.memory[item.value].all
                twins |= seen & tokens
                seen |= tokens
        return frozenset(twins)

    def item_write(self, target: cst.Subscript, stored: Refs, state, node, in_place) -> None:
        """``a[index] = v`` changes `a`; ``a[index] op= v`` may also change the item itself
        in place (an array inside a list)."""
        for element in target.slice:
            self.expression(element.slice, state)
        base = target.value
        if not isinstance(base, cst.Name):
            return  # fence refuses it
        refs = self.expression(base, state)
        container = base.value in state.containers or refs.items is not None
        # ``d[k] op= v`` changes the item itself only if it is not a number; a value of
        # unknown kind holding other objects (the copy of an argument that may be a list,
        # ``qs = ps.copy(); qs[0] += 1.0``) may be a container too: the check then runs again
        # once the arguments' types are known (hunt, idioms repro_18)
        maybe_container = container or (refs.kind is None and bool(refs.held))
        item_changes = in_place and maybe_container and refs.items not in IMMUTABLE
        twins = state.memory.get(f"another slot of {base.value}")
        if item_changes and twins is not None and twins.all & refs.held:
            # the item is an array changed in place (``lst[0] += 1.0``), which normal form
            # rebinds, and another slot of the same container may hold the same array
            # (``[y, y]``, ``[np.zeros(3)] * 3``): NumPy changes it there too, derivative code
            # would not; the value and the gradient were wrong, silently (hunt, idioms
            # repro_19). Other names holding it are marked changed below: read again, they
            # are refused there
            text = cst.Module(()).code_for_node(target)
            operator = cst.Module(()).code_for_node(node.operator).strip()
            raise self.parsed.error(
                node,
                f"{text} {operator} ... changes in place an array that another slot of "
                f"{base.value} also holds (the same object), which s2sgrad does not follow: "
                f"write {text} = {text} {operator.rstrip('=')} ... (a new array)",
            )
        changed = refs.own | (refs.held - refs.maybe) if item_changes else refs.own
        self.protect(base.value, changed, node, "item assignment to")
        self.change(base.value, changed, state, node, "is written into")
        if container:
            kind = operation_kind([refs.items, stored.kind]) if in_place else stored.kind
            for name in state.holders(refs.own):
                old = state.memory[name]
                new = Refs(held=stored.all, kind=old.kind, items=kind, maybe=stored.maybe)
                state.memory[name] = old | new

    def augmented(self, node: cst.AugAssign, state: State) -> None:
        stored = self.expression(node.value, state)
        target = node.target
        if isinstance(target, cst.Subscript):
            self.item_write(target, stored, state, node, in_place=True)
            return
        name = target.value
        refs = self.expression(target, state)
        surely = refs.own - refs.maybe  # (the rest is memory only if an argument is an array)
        if refs.kind in IMMUTABLE or (refs.own and not surely):  # a number is rebound
            kind = operation_kind([refs.kind, stored.kind], is_integer_operator(node.operator))
            state.memory[name] = make(self.new_token(), kind=kind)
            state.changed.pop(name, None)
            state.copies_of.pop(name, None)
            return
        param = state.copies_of.get(name)
        if param is not None and f"arg:{param}" in surely:  # the caller's array would change
            operator = cst.Module(()).code_for_node(node.operator).strip().rstrip("=")
            raise _number_refusal(self.parsed, node, name, param, operator)
        self.protect(name, surely, node, "in-place update of")
        self.change(name, surely, state, node, "is updated in place (if it is an array)")
        if name in state.containers:  # items += [v] extends the list
            state.memory[name] = refs | Refs(held=stored.all)

    def protect(self, name: str, tokens, node, what: str) -> None:
        """Refuse a change to memory an argument or a global may share."""
        for token in sorted(tokens):
            kind, _, owner = token.partition(":")
            if kind in ("arg", "global"):
                owner_text = "the argument" if kind == "arg" else "the global"
                raise self.parsed.error(
                    node,
                    f"{what} {name!r}, which may share memory with {owner_text} {owner!r}, "
                    f"is not supported: s2sgrad never changes its inputs; work on a copy "
                    f"({name} = {name}.copy()) or write {name} = ... with a new value",
                )

    def change(self, writer: str, tokens, state: State, node, what: str) -> None:
        """Every other name sharing (or holding) `tokens` now has a value normal form does
        not know."""
        for name in state.holders(tokens):
            if name != writer and name not in state.changed:
                state.changed[name] = Change(writer, node, what)

    def new_token(self) -> frozenset[str]:
        return frozenset({f"new:{next(self.fresh)}"})

    # -- expressions -----------------------------------------------------------------------
    def expression(self, expr, state: State, shape_only: bool = False) -> Refs:
        """What `expr` may reference, checking the reads and calls in it (`shape_only`: a
        name read for its shape, which a change in place keeps). Dispatches on the exact
        node type: this runs for every expression, several times in loops."""
        kind = type(expr)
        if kind is cst.Name:
            if shape_only and expr.value in state.memory:
                return state.memory[expr.value]
            return self.name(expr, state)
        if kind in CONSTANTS:
            return Refs(kind=INT) if kind is cst.Integer else NOTHING
        if kind is cst.Attribute:
            return self.attribute(expr, state)
        if kind is cst.Subscript:
            return self.subscript(expr, state)
        if kind is cst.Index:
            return self.expression(expr.value, state)
        if kind is cst.Call:
            return self.call(expr, state)
        if kind in LITERALS:
            return self.literal(expr, state)
        if kind is cst.BinaryOperation:
            return self.binary(expr, state)
        if kind is cst.IfExp:
            self.expression(expr.test, state)
            return self.expression(expr.body, state) | self.expression(expr.orelse, state)
        if kind is cst.BooleanOperation:
            return self.children(expr, state)  # one of the operands
        if kind in (cst.UnaryOperation, cst.Comparison):
            kinds = [self.expression(child, state).kind for child in child_expressions(expr)]
            integer = kind is cst.UnaryOperation and not isinstance(expr.operator, cst.Not)
            return make(self.new_token(), kind=operation_kind(kinds, integer))
        if kind in COMPREHENSIONS:
            items = self.comprehension(expr, state)
            return Refs(self.new_token(), items.all, None, items.kind)
        self.children(expr, state)
        return NOTHING if kind is cst.Slice else Refs(self.new_token())  # x > 0: a new array

    def binary(self, expr: cst.BinaryOperation, state: State) -> Refs:
        left, right = self.expression(expr.left, state), self.expression(expr.right, state)
        if _is_container_expr(expr.left, state) or _is_container_expr(expr.right, state):
            items = left.items if isinstance(expr.operator, cst.Multiply) else None
            return Refs(self.new_token(), left.all | right.all, None, items)  # [a] + [b]
        if isinstance(expr.operator, cst.MatrixMultiply):
            return make(self.new_token(), kind=product_kind(left.kind, right.kind))
        integer = is_integer_operator(expr.operator)
        return make(self.new_token(), kind=operation_kind([left.kind, right.kind], integer))

    def literal(self, expr, state: State) -> Refs:
        """A list, tuple, dict or set literal: a new object holding its values."""
        held, items = frozenset(), EMPTY
        for element in expr.elements:
            if isinstance(element, cst.DictElement):
                self.expression(element.key, state)
            refs = self.expression(element.value, state)
            held |= refs.all
            starred = isinstance(element, (cst.StarredElement, cst.StarredDictElement))
            items = join_kinds(items, None if starred else refs.kind)
        return Refs(self.new_token(), held, None, items)

    def subscript(self, expr: cst.Subscript, state: State) -> Refs:
        kinds = []
        for element in expr.slice:
            inner = element.slice
            refs = self.expression(inner, state)
            kinds.append("slice" if isinstance(inner, cst.Slice) else refs.kind)
        return self.element_of(expr.value, state, kinds)

    def attribute(self, expr: cst.Attribute, state: State) -> Refs:
        if self.resolution.value_of(expr)[0]:
            return self.free_value(expr)
        attr = expr.attr.value
        if attr in PLAIN_ATTRIBUTES:  # x.shape: unchanged by writes into x
            self.expression(expr.value, state, shape_only=True)
            return Refs(items=INT) if attr == "shape" else Refs(kind=INT)
        refs = self.expression(expr.value, state)
        if attr in ("real", "imag") or (attr in ("T", "mT") and isinstance(refs.kind, int)):
            return refs
        if attr in VIEW_ATTRIBUTES:
            return Refs(refs.own, refs.held)
        return Refs(refs.all, refs.held)

    def element_of(self, expr, state: State, index: list | None = None) -> Refs:
        """An item of `expr`: ``expr[index]`` (the kinds of the index's elements) or, with
        no index, one iteration of ``for v in expr``."""
        refs = self.expression(expr, state)
        container = refs.items is not None or (
            isinstance(expr, cst.Name) and expr.value in state.containers
        )
        if container and index is not None and "slice" in index:  # a new list, same items
            return Refs(self.new_token(), refs.held, None, refs.items)
        if container:
            return refs.element(container=True)
        return make(refs.all, refs.held, indexed_kind(refs.kind, index or [INT]))

    def children(self, expr, state: State) -> Refs:
        """The union of the references of `expr`'s child expressions."""
        refs = NOTHING
        for child in child_expressions(expr):
            refs = refs | self.expression(child, state)
        return refs

    def name(self, expr: cst.Name, state: State) -> Refs:
        name = expr.value
        if name in state.memory:
            change = state.changed.get(name)
            if change is not None:
                self.stale_read(name, expr, change)
            return state.memory[name]
        if name in ("True", "False", "None") or self.resolution.is_local(name):
            return NOTHING
        return self.free_value(expr)

    def free_value(self, expr) -> Refs:
        """A global or closure value: mutable ones are protected like arguments."""
        found, value = self.resolution.value_of(expr)
        if not found:
            return Refs()
        kind, items = kind_of_value(value), items_kind(value)
        if not isinstance(value, MUTABLE):
            return Refs(kind=kind, items=items)
        token = frozenset({f"global:{cst.Module(()).code_for_node(expr)}"})
        return Refs(token, token, kind, items)  # its items are the global's too

    def stale_read(self, name: str, read: cst.Name, change: Change) -> None:
        line = self.parsed.position(read)[0]
        raise self.parsed.error(
            change.node,
            f"{change.writer!r} {change.what} here, and {name!r}, which shares its memory "
            f"(a copy, an alias or a view of the same array, or a list holding it), is read "
            f"again at line {line}: s2sgrad cannot follow a change made through another name; "
            f"write the new value to {name!r} itself (for a view, {name}[index] = ...), or "
            f"make {change.writer!r} a copy (.copy()) so that {name!r} keeps its value",
        )

    def comprehension(self, expr, state: State) -> Refs:
        inner = state.copy()
        clause = expr.for_in
        while clause is not None:
            self.bind_loop_target(clause.target, clause.iter, inner, inner)
            for condition in clause.ifs:
                self.expression(condition.test, inner)
            clause = clause.inner_for_in
        if isinstance(expr, cst.DictComp):
            self.expression(expr.key, inner)
            return self.expression(expr.value, inner)
        return self.expression(expr.elt, inner)

    def walk_callee(self, parsed, resolution, kinds: dict, active) -> object:
        return _walk(parsed, resolution, kinds, active)


def _tuple_rows(iterable, width: int) -> list | None:
    """The items of a list or tuple literal of tuple literals of `width` items (no starred
    ones), each as the list of its item expressions; None for any other iterable."""
    if not isinstance(iterable, (cst.List, cst.Tuple)) or not iterable.elements:
        return None
    rows = []
    for element in iterable.elements:
        row = element.value
        if isinstance(element, cst.StarredElement) or not isinstance(row, cst.Tuple):
            return None
        items = [e.value for e in row.elements if not isinstance(e, cst.StarredElement)]
        if len(items) != width or len(row.elements) != width:
            return None
        rows.append(items)
    return rows


def _is_container_expr(expr, state: State) -> bool:
    kind = type(expr)
    if kind in (cst.List, cst.Tuple, cst.ListComp):
        return True
    return kind is cst.Name and expr.value in state.containers


def _repeats(value, state: State) -> bool:
    """``[a] * n`` or ``n * [a]``: a list holding its items several times."""
    return (
        isinstance(value, cst.BinaryOperation)
        and isinstance(value.operator, cst.Multiply)
        and (_is_container_expr(value.left, state) or _is_container_expr(value.right, state))
    )


def _makes_container(value, state: State) -> bool:
    if isinstance(value, (cst.List, cst.Tuple, cst.Dict, cst.ListComp, cst.DictComp, cst.Set)):
        return True
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
        return value.func.value in ("list", "dict", "tuple", "sorted", "set")
    if (  # ``lst.copy()`` of a container: a container holding the same items
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "copy"
        and _is_container_expr(value.func.value, state)
    ):
        return True
    if isinstance(value, cst.BinaryOperation):
        return _is_container_expr(value.left, state) or _is_container_expr(value.right, state)
    return isinstance(value, cst.Name) and value.value in state.containers


def _code(node: cst.CSTNode) -> str:
    return cst.Module(()).code_for_node(node)
