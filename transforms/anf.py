"""Pass 4, normalize: straight-line code to A-normal form with one assignment per name.

Output: a `NormalForm` whose function body holds, one per line, only these statements

    name = ATOM                      a copy
    name = ATOM op ATOM              binary operator
    name = op ATOM                   unary operator
    name = ATOM cmp ATOM [cmp ATOM]  comparison
    name = CALLEE(ARG, key=ARG)      CALLEE is a canonical free reference (``np.sin``) or a
                                     method of a local atom (``x.sum``)
    name = ATOM.attr                 attribute of a local (``x.T``, ``x.shape``)
    name = ATOM[INDEX]               INDEX: atoms, slices of atoms, tuples of those
    name = (ATOM, ...)               tuple or list literal
    a, b = CALLEE(...)               unpacking a call's result
    return ATOM
    assert ... / print(...)          kept as written, not differentiated

where ATOM is a local name, a canonical free reference (``np.pi``, a captured constant) or a
literal, and ARG is an ATOM or a tuple/list literal of ATOMs (``np.concatenate([a, b])``,
``axis=(0, 1)``). Every name is assigned once (a reassigned ``x`` becomes ``x_1``); augmented
assignment is expanded. The first statement coming from each source line carries the comment
``# line N: <source>``; `origins` maps each assigned name to the user's position for messages.

Normal form is only the truth if no value changes behind a name's back: `normalize` first runs
`mutation.check_mutation`, which refuses such changes (and leaves the checks that need the
arguments' types in ``number_checks``). Loops are normalized by `anf_loops` (a mixin of the
normalizer here); what a block of statements assigns or whether it always leaves is read by
`blocks`.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping

import libcst as cst
from s2sgrad.runtime import registry

from .anf_containers import ContainerNormalizing
from .anf_inline import CalleeInlining
from .anf_lambdas import LambdaNormalizing
from .anf_loops import END_OF_ITERATION, LoopNormalizing
from .blocks import (
    AssignedNames,
    NestedReads,
    always_exits,
    comment_lines,
    contains_jump,
    copy_line,
    first_line,
    indented,
    iter_small_statements,
    maybe,
    statements_of_else,
)
from .mutation import NumberCheck, check_mutation
from .naming import Namer
from .operations import is_append
from .parse import ParsedFunction
from .resolve import RESERVED, Resolution
from .templates import one_array_arguments
from .walk import visit


class Origin:
    """Where a value came from in the user's source: the node, resolved to a position only
    when a message needs it (positions cost more to compute than everything else in parsing)."""

    def __init__(self, parsed: ParsedFunction, node: cst.CSTNode, statement=None):
        self._parsed = parsed
        self._node = node
        self._statement = statement  # the user's statement holding it (for a node normal
        # form built itself, a comprehension's loop: it has no position of its own)

    @property
    def _located(self) -> cst.CSTNode:
        if self._statement is not None and self._node not in self._parsed.positions:
            return self._statement
        return self._node

    @property
    def filename(self) -> str:
        return self._parsed.filename

    @property
    def line(self) -> int:
        return self._parsed.position(self._located)[0]

    @property
    def col(self) -> int:
        return self._parsed.position(self._located)[1]

    @property
    def text(self) -> str:
        return self._parsed.source_line(self._located)

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col + 1}"


@dataclasses.dataclass(frozen=True)
class NormalForm:
    """A function in A-normal form (see the module docstring for the statement forms)."""

    funcdef: cst.FunctionDef
    params: tuple[str, ...]
    output: cst.BaseExpression
    origins: Mapping[str, Origin]
    line_of: Mapping[str, int]
    loop_headers: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    loop_counts: Mapping[str, str] = dataclasses.field(default_factory=dict)
    number_checks: tuple[NumberCheck, ...] = ()
    constants: Mapping[str, object] = dataclasses.field(default_factory=dict)  # inlined
    # functions' captured values, which generated code reads besides the function's own
    constant_sources: Mapping[str, tuple] = dataclasses.field(default_factory=dict)  # where
    # each came from (`anf_inline`: a function's free name, or a parameter's default)

    def check_numbers(self, numbers: frozenset[str]) -> None:
        """Refuse, once argument types are known, an augmented assignment that would change
        an argument in place (see `mutation.NumberCheck`); `numbers` are the parameters that
        are Python numbers (none, for a callee compiled for any argument)."""
        for check in self.number_checks:
            check.verify(numbers)

    @property
    def statements(self) -> list[cst.BaseSmallStatement]:
        """Every small statement, branches included, in textual order."""
        return list(iter_small_statements(self.funcdef.body.body))


def name_expr(dotted: str) -> cst.BaseExpression:
    """``np.linalg.inv`` as a libcst Attribute chain."""
    parts = dotted.split(".")
    expr: cst.BaseExpression = cst.Name(parts[0])
    for part in parts[1:]:
        expr = cst.Attribute(value=expr, attr=cst.Name(part))
    return expr


def is_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.Ellipsis)):
        return True
    if isinstance(expr, cst.ConcatenatedString):
        return True
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        return is_literal(expr.expression) and not isinstance(expr.expression, cst.Name)
    return False


_NO_PARENS = {"lpar": (), "rpar": ()}
# operators a Python list or tuple has no meaning for: an operand of one is an array
# (``x @ [1.0, 2.0]``); ``+`` and ``*`` are left alone (they join and repeat lists)
_ARRAY_ONLY = (cst.Subtract, cst.Divide, cst.Power, cst.MatrixMultiply, cst.Modulo)


class _Normalizer(LoopNormalizing, LambdaNormalizing, ContainerNormalizing, CalleeInlining):
    def __init__(self, parsed: ParsedFunction, resolution: Resolution, namer: Namer):
        self.parsed = parsed
        self.resolution = resolution
        self.namer = namer
        self.current: dict[str, str] = {p: p for p in resolution.params}
        self.lines: list[cst.SimpleStatementLine] = []
        self.origins: dict[str, Origin] = {}
        self.line_of: dict[str, int] = {}
        self.comment: str | None = None
        self.source_line = 0
        self.output: cst.BaseExpression | None = None
        self.depth = 0  # how many branches deep the statements being normalized are
        self.loop_depth = 0
        self.loop_headers: dict[str, tuple[str, ...]] = {}  # loop target -> its header names
        self.loop_counts: dict[str, str] = {}  # loop key -> the header of its iteration counter
        self.loops: list[tuple[dict, str | None]] = []  # enclosing loops: headers, counter
        self.nested: dict[str, tuple] = {}  # nested defs: their node, the names when defined
        self.inlining: set[str] = set()  # the nested functions being inlined
        self.defined: set[str] = set(resolution.params)  # every name assigned so far
        # names of tuple literals -> their items (atoms): unpacking one reads them directly
        self.tuple_items: dict[str, tuple[cst.BaseExpression, ...]] = {}
        self.statement_node: cst.CSTNode | None = None  # the user's statement being normalized
        self.result = namer.fresh("_result")  # the value returned from inside a branch
        self.returned = namer.fresh("_returned")  # set by a return inside a loop
        self.start_inlining()

    # -- statements ------------------------------------------------------------------------
    def run(self) -> None:
        body = self.parsed.funcdef.body
        if isinstance(body, cst.SimpleStatementSuite):  # def f(x): return x * x
            statements = [cst.SimpleStatementLine(body=body.body)]
        else:
            statements = list(body.body)
        if not always_exits(statements):
            # falling off the end returns None: make that explicit, so every path returns
            statements.append(cst.SimpleStatementLine((cst.Return(cst.Name("None")),)))
        self.block(statements)

    def block(self, statements: list) -> bool:
        """Normalize `statements` into ``self.lines``. True if every path through them leaves
        for good (``return``, ``raise``, ``break``); a ``continue`` ends its path but joins the
        others at the end of the loop body."""
        for k, statement in enumerate(statements):
            if statement is END_OF_ITERATION:
                self.end_iteration()
                return True
            if self.parsed.locates(statement):  # (not a loop normal form wrote itself)
                self.statement_node = statement
                line = self.parsed.statement_line(statement)
                if self.inlined_from is None:
                    self.source_line = line
                    self.comment = f"# line {line}: {first_line(statement)}"
                else:  # an inlined function's: its adjoints come under the caller's line
                    own = f"# line {line} of {self.inlined_from}: {first_line(statement)}"
                    # (the call's line, when no statement of the caller's carries it yet)
                    self.comment = own if self.comment is None else f"{self.comment}\n{own}"
            if isinstance(statement, cst.If):
                consumed, leaves = self.if_statement(statement, statements[k + 1 :])
                if consumed or leaves:
                    return leaves
                continue
            if isinstance(statement, (cst.For, cst.While)):
                returns = contains_jump(list(statement.body.body), (cst.Return,))
                if isinstance(statement, cst.For):
                    self.for_statement(statement)
                else:
                    self.while_statement(statement)
                if returns:  # a return in the loop: `if returned: return result` follows it
                    exit_line = cst.SimpleStatementLine((cst.Return(cst.Name(self.result)),))
                    after = cst.If(
                        test=cst.Name(self.returned), body=cst.IndentedBlock((exit_line,))
                    )
                    consumed, leaves = self.if_statement(after, statements[k + 1 :])
                    if consumed or leaves:
                        return leaves
                continue
            if isinstance(statement, cst.FunctionDef):  # inlined where it is called
                self.nested[statement.name.value] = (statement, dict(self.current))
                continue
            for small in statement.body:
                if isinstance(small, cst.Return):
                    self.return_statement(small)
                    return True
                if isinstance(small, cst.Break):
                    self.leave_loop(small)
                    return True
                if isinstance(small, cst.Continue):
                    self.end_iteration()  # the rest of the body was carried elsewhere
                    return True
                self.statement(small)
                if isinstance(small, cst.Raise):
                    return True
        return False

    def return_statement(self, node: cst.Return) -> None:
        value = node.value if node.value is not None else cst.Name("None")
        if self.loop_depth:  # store the value, note that it returned, leave the loop
            self.assign([cst.Name(self.result)], value, origin_node=value)
            self.assign([cst.Name(self.returned)], cst.Name("True"), origin_node=node)
            self.leave_loop(node)
            return
        if self.depth == 0:
            self.output = self.atom(value)
            self.emit(cst.Return(self.output))
        else:  # inside a branch: the value joins the others at the end
            self.assign([cst.Name(self.result)], value, origin_node=value)

    def if_statement(self, node: cst.If, rest: list) -> tuple[bool, bool]:
        """An ``if`` whose branches return, break or continue carries the statements after it
        into the branches that do not, so that every path ends in one place (the function's
        single exit, the end of the loop body). Returns (the rest was consumed, every path
        leaves for good)."""
        then_statements = list(node.body.body)
        else_statements = statements_of_else(node.orelse)
        carry = rest if contains_jump(then_statements + else_statements) else []
        if carry and not always_exits(then_statements):
            then_statements += carry
        if carry and not always_exits(else_statements):
            else_statements += carry
        test = self.atom(node.test)
        both_exit = self.branch(
            test, lambda: self.block(then_statements), lambda: self.block(else_statements)
        )
        if (carry or both_exit) and self.depth == 0:
            self.output = cst.Name(self.current[self.result])
            self.emit(cst.Return(self.output))
            return True, True
        return bool(carry), both_exit

    def _merged_when_one_sided(self, name: str) -> bool:
        """Whether a name assigned on one path of an ``if`` only is merged after it (None on
        the other path): the user's variables and the returned value, which later merges and
        loop headers read; not a temporary, read only where it was computed."""
        return name in (self.result, self.returned) or self.resolution.is_local(name)

    def atom_of(self, value: cst.BaseExpression) -> cst.Name:
        """A temporary holding `value`, an expression already in normal form."""
        temp = self.namer.temp()
        self.emit(cst.Assign((cst.AssignTarget(cst.Name(temp)),), value), temp)
        return cst.Name(temp)

    def branch(self, test: cst.BaseExpression, then_part, else_part) -> bool:
        """Emit ``if test:`` with the two parts, each ending in copies to shared names for the
        variables the branches assign differently (so each name still has one value after
        the ``if``). True if both parts exit."""
        before, outer = dict(self.current), self.lines
        comment, self.comment = self.comment, None
        if_line = self.source_line
        self.depth += 1
        self.lines = []
        then_exits = then_part()
        then_lines, then_current = self.lines, self.current
        self.current, self.lines = dict(before), []
        else_exits = else_part()
        else_lines, else_current = self.lines, self.current
        self.depth -= 1
        self.lines = outer
        self.source_line = if_line
        if then_exits and else_exits:
            # nothing follows, except that returns meet where the function ends (an inlined
            # nested function's result is read by the code after the call)
            self.current = dict(then_current)
            a, b = then_current.get(self.result), else_current.get(self.result)
            if self.loop_depth:  # in a loop, paths end in breaks and copies to header names
                a = b = None
            if a is not None and b is not None and a != b:
                joined = self.namer.version(self.result)
                then_lines.append(copy_line(joined, a))
                else_lines.append(copy_line(joined, b))
                self.current[self.result] = joined
                self.line_of[joined] = if_line
            elif a is None and b is not None:
                self.current[self.result] = b
        elif then_exits:
            self.current = else_current
        elif else_exits:
            self.current = then_current
        else:
            self.current = dict(then_current)
            for name in then_current.keys() | else_current.keys():
                a, b = then_current.get(name), else_current.get(name)
                one_sided = a is None or b is None
                if a == b or (one_sided and not self._merged_when_one_sided(name)):
                    self.current[name] = a or b
                    continue
                # (assigned on one path only, it is None on the other: a later merge or loop
                # header reads it there, where Python would have it unbound)
                a, b = a or "None", b or "None"
                joined = self.namer.version(name)
                then_lines.append(copy_line(joined, a))
                else_lines.append(copy_line(joined, b))
                self.current[name] = joined
                self.line_of[joined] = if_line
        leading = comment_lines(comment)
        orelse = cst.Else(body=indented(else_lines)) if else_lines else None
        self.lines.append(
            cst.If(test=test, body=indented(then_lines), orelse=orelse, leading_lines=leading)
        )
        return then_exits and else_exits

    def emit(self, statement: cst.BaseSmallStatement, target: str | None = None) -> None:
        leading = comment_lines(self.comment)
        self.comment = None
        self.lines.append(cst.SimpleStatementLine(body=(statement,), leading_lines=leading))
        if target is not None:
            self.line_of[target] = self.source_line

    def statement(self, node: cst.BaseSmallStatement) -> None:
        if (
            isinstance(node, cst.Assign)
            and isinstance(node.value, cst.Lambda)
            and len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
        ):
            self.lambda_definition(node.targets[0].target.value, node.value, node)
        elif isinstance(node, cst.Assign):
            self.assign([t.target for t in node.targets], node.value)
        elif isinstance(node, cst.AnnAssign):
            self.assign([node.target], node.value)
        elif isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Subscript):
            operator = _AUGMENTED[type(node.operator)]()
            combined = cst.BinaryOperation(left=node.target, operator=operator, right=node.value)
            self.assign([node.target], combined, origin_node=node)
        elif isinstance(node, cst.AugAssign):  # a rebinding: `mutation` refused the rest
            operator = _AUGMENTED[type(node.operator)]()
            combined = cst.BinaryOperation(left=node.target, operator=operator, right=node.value)
            self.assign([node.target], combined, origin_node=node)
        elif isinstance(node, cst.Return):
            value = node.value if node.value is not None else cst.Name("None")
            self.output = self.atom(value)
            self.emit(cst.Return(self.output))
        elif isinstance(node, cst.Expr):
            if isinstance(node.value, (cst.SimpleString, cst.ConcatenatedString)):
                return  # docstring
            if self.configures_warnings(node):
                return  # (its `with warnings.catch_warnings()` is gone: see anf_lambdas)
            if _is_method_call(node.value, "pop"):  # xs.pop(): its value goes unread
                self.atom(node.value)
                return
            if is_append(node) and node.value.func.value.value in self.current:
                items = cst.Name(self.current[node.value.func.value.value])
                value = self.atom(node.value.args[0].value)
                call = node.value.with_changes(
                    func=node.value.func.with_changes(value=items), args=(cst.Arg(value),)
                )
                self.emit(node.with_changes(value=call), items.value)
                return
            if isinstance(node.value, cst.Call) and self._calls_user_function(node.value):
                self.atom(node.value)  # its result goes unread, but it is transformed too
                return
            self.emit(node.with_changes(value=self.rename(node.value)))
        elif isinstance(node, cst.Assert):
            self.emit(
                node.with_changes(test=self.rename(node.test), msg=maybe(self.rename, node.msg))
            )
        elif isinstance(node, cst.Raise):
            exc, cause = maybe(self.rename, node.exc), maybe(self.rename, node.cause)
            self.emit(node.with_changes(exc=exc, cause=cause))
        elif isinstance(node, cst.Pass):
            return
        else:
            raise self.parsed.error(node, f"{type(node).__name__} is not supported")

    def assign(self, targets, value, origin_node=None) -> None:
        if len(targets) > 1:
            # a = b = value: the value once, then copies, in Python's order (left to right);
            # the copies read the first target's new value, or a fresh name when the first
            # target is an item or a tuple (a[0] = b = v must not read a[0] back)
            first, *rest = targets
            if not isinstance(first, cst.Name):
                first = cst.Name(self.namer.fresh("_chained"))
                rest = targets
            self.assign([first], value, origin_node)
            for target in rest:
                self.assign([target], first, origin_node or value)
            return
        first = targets[0]
        if isinstance(first, cst.Subscript):
            self.set_item(first, value)
            return
        if isinstance(first, cst.Name):
            flat = self.flat(value)  # before `define`: the right side reads the old version
            name = self.define(first.value)
            self.note_tuple(name, flat)  # (for f(*name), `spread`, and unpacking)
            self.emit(cst.Assign((cst.AssignTarget(cst.Name(name)),), flat), name)
            self.origins[name] = self.origin(origin_node or value)
        else:
            self.unpack(first, value)

    def set_item(self, target: cst.Subscript, value, normal: bool = False) -> None:
        """``y[index] = value``: an in-place write into a local array, kept as one."""
        base = target.value.value
        if base not in self.current:
            raise self.parsed.error(target, f"local variable {base!r} is assigned before it exists")
        flat = value if normal else self.atom(value)  # `normal`: already an atom
        elements = tuple(self.subscript_element(e) for e in target.slice)
        array = cst.Name(self.current[base])
        written = cst.Subscript(value=array, slice=elements)
        self.emit(cst.Assign((cst.AssignTarget(written),), flat), array.value)
        self.origins.setdefault(array.value, self.origin(target))

    def _calls_user_function(self, call: cst.Call) -> bool:
        """A call of a user function, or of a function defined inside this one (inlined:
        kept as written, ``put(i, v)`` called a definition normal form had removed)."""
        from .operations import _is_user_function, evaluate_spelling

        if isinstance(call.func, cst.Name) and call.func.value in self.nested:
            return True
        found, callee = evaluate_spelling(call.func, self.resolution.namespace())
        return found and _is_user_function(callee)

    def _returns_several(self, call: cst.Call) -> bool:
        """A call of a primitive registered as returning a tuple (``output=``: its rule takes
        ``a, b = f(x)`` as one statement); any other call's result is unpacked by reading its
        elements, like Python does (an array by rows, a user function's tuple by items)."""
        from .operations import evaluate_spelling

        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "pop":
            return False
        found, callee = evaluate_spelling(func, self.resolution.namespace())
        if not found:
            return False
        try:
            rule = registry.lookup(callee)
        except TypeError:  # an unhashable callee: no rule
            return False
        return rule is not None and rule.output is not None

    def unpack(self, target, value: cst.BaseExpression, normal: bool = False) -> None:
        """``a, (b, c[i]) = value``: nested targets flattened into element reads of the value
        (each target then assigned as usual), after Python's check of the length. `normal`:
        `value` is an atom already in normal form (an element of an outer unpacking)."""
        if any(isinstance(e, cst.StarredElement) for e in target.elements):
            self.unpack_starred(target, value, normal)
            return
        elements = [element.value for element in target.elements]
        literal = isinstance(value, (cst.Tuple, cst.List))
        if literal and len(value.elements) == len(elements):
            # every element first (a, b = b, a swaps), then the targets, of atoms already in
            # normal form (assign() would look their names up again)
            atoms = [
                e.value if normal else self.element_atom(t, e.value)
                for t, e in zip(elements, value.elements, strict=True)
            ]
            for element, atom in zip(elements, atoms, strict=True):
                self.assign_atom(element, atom, value)
            return
        if isinstance(value, cst.Call) and not normal and self._returns_several(value):
            self.unpack_results(elements, value)
            return
        source = value if normal else self.atom(value)
        items = self.tuple_items.get(source.value) if isinstance(source, cst.Name) else None
        if items is not None and len(items) == len(elements):
            # a tuple built in the function (a returned ``x, v`` of an inlined call): its items
            # are atoms whose names are never assigned again, so they are its elements
            for element, item in zip(elements, items, strict=True):
                self.assign_atom(element, item, value)
            return
        check = cst.Call(
            cst.Name("check_unpack"), (cst.Arg(source), cst.Arg(cst.Integer(str(len(elements)))))
        )
        self.emit(cst.Expr(check))
        items = []
        for k in range(len(elements)):
            index = cst.SubscriptElement(cst.Index(cst.Integer(str(k))))
            items.append(self.atom_of(cst.Subscript(source, (index,))))
            self.origins[items[-1].value] = self.origin(value)
        for element, item in zip(elements, items, strict=True):
            self.assign_atom(element, item, value)

    def assign_atom(self, target, atom: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """One target of an unpacking given its element, an atom already in normal form."""
        if isinstance(target, cst.Subscript):  # h[i], c[i] = a, b
            self.set_item(target, atom, normal=True)
        elif isinstance(target, (cst.Tuple, cst.List)):
            self.unpack(target, atom, normal=True)
        elif isinstance(target, cst.Name):
            new = self.define(target.value)
            self.emit(cst.Assign((cst.AssignTarget(cst.Name(new)),), atom), new)
            self.origins[new] = self.origin(value)
        else:
            raise self.parsed.error(target, "unpack into names, item targets or tuples of those")

    def element_atom(self, target, value: cst.BaseExpression) -> cst.BaseExpression:
        """The atom for one element of ``(a, b), c = f(x), y``: a tuple of fresh names for a
        primitive returning a tuple (its one-statement form), else the value's atom."""
        several = isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) > 1
        if not (several and isinstance(value, cst.Call) and self._returns_several(value)):
            return self.atom(value)
        names = [cst.Name(self.namer.temp()) for _ in target.elements]
        self.unpack_results(names, value)
        return cst.Tuple(tuple(cst.Element(n) for n in names))

    def unpack_results(self, elements: list, value: cst.Call) -> None:
        """``a, b = f(x)`` for a primitive returning a tuple: one statement, its rule's form
        (into fresh names first when a target is an item or a tuple)."""
        plain = all(isinstance(n, cst.Name) for n in elements)
        names = [n.value for n in elements] if plain else [self.namer.temp() for _ in elements]
        call = self.flat(value)
        new_names = [self.define(n) for n in names] if plain else names
        tuple_ = tuple(cst.Element(cst.Name(n)) for n in new_names)
        statement = cst.Assign((cst.AssignTarget(cst.Tuple(tuple_, **_NO_PARENS)),), call)
        self.emit(statement, new_names[0])
        for n in new_names:
            self.origins[n] = self.origin(value)
            self.line_of[n] = self.source_line
        if not plain:
            for element, n in zip(elements, new_names, strict=True):
                self.assign_atom(element, cst.Name(n), value)

    def define(self, name: str) -> str:
        """The SSA name for a new assignment to `name`: the name itself the first time (unless
        generated code needs that name for a helper it imports)."""
        # every assignment gets a name no other assignment has (two branches, or two loops,
        # assigning `y` give y and y_1: analyses keyed by name never confuse them)
        taken = name in self.current or name in RESERVED or name in self.defined
        if self.inlined_from is not None:  # not the caller's: the caller's names are taken
            taken = taken or self.namer.taken(name)
        new = self.namer.version(name) if taken else name
        self.namer.reserve(new)  # (a lambda's parameter is no local the namer started with)
        self.current[name] = new
        self.defined.add(new)
        return new

    def origin(self, node: cst.CSTNode) -> Origin:
        return Origin(self.parsed, node, self.statement_node)

    # -- expressions -----------------------------------------------------------------------
    def atom(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        """`expr` as an atom, assigning it to a fresh temporary when it is compound."""
        if is_literal(expr):
            return expr.with_changes(**_NO_PARENS) if hasattr(expr, "lpar") else expr
        if isinstance(expr, cst.Name):
            return self.name(expr)
        spelled = self.resolution.spell(expr) if isinstance(expr, cst.Attribute) else None
        if spelled is not None:
            return name_expr(spelled)
        flat = self.flat(expr)  # first, so temporaries are numbered in the order they run
        temp = self.namer.temp()
        self.note_tuple(temp, flat)
        self.emit(cst.Assign((cst.AssignTarget(cst.Name(temp)),), flat), temp)
        self.origins[temp] = self.origin(expr)
        return cst.Name(temp)

    def note_tuple(self, name: str, flat: cst.BaseExpression) -> None:
        """Remember the items of a tuple literal `name` is assigned (directly or by a copy)."""
        if isinstance(flat, cst.Tuple):
            self.tuple_items[name] = tuple(e.value for e in flat.elements)
        elif isinstance(flat, cst.Name) and flat.value in self.tuple_items:
            self.tuple_items[name] = self.tuple_items[flat.value]

    def name(self, expr: cst.Name) -> cst.BaseExpression:
        if expr.value in self.current:
            return cst.Name(self.current[expr.value])
        if expr.value in ("True", "False", "None"):
            return cst.Name(expr.value)
        if expr.value in self.nested:
            raise self.parsed.error(
                expr,
                f"{expr.value!r}, a function defined inside {self.parsed.name!r}, is used as a "
                f"value: s2sgrad inlines such functions where they are called; define it at "
                f"module level to pass it to another function",
            )
        if self.resolution.is_local(expr.value):
            raise self.parsed.error(
                expr, f"local variable {expr.value!r} is used before it is assigned"
            )
        return name_expr(self.resolution.spelling[expr.value])

    def flat(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        """`expr` with atoms for children: the right-hand side of one normal-form statement."""
        if is_literal(expr) or isinstance(expr, cst.Name):
            return self.atom(expr)
        if isinstance(expr, cst.BinaryOperation):
            left, right = (
                self.as_array(e)
                if isinstance(e, (cst.List, cst.Tuple)) and type(expr.operator) in _ARRAY_ONLY
                else self.atom(e)
                for e in (expr.left, expr.right)
            )
            return cst.BinaryOperation(left, expr.operator, right)
        if isinstance(expr, cst.UnaryOperation):
            return cst.UnaryOperation(expr.operator, self.atom(expr.expression))
        if isinstance(expr, cst.Comparison):
            left = self.atom(expr.left)
            targets = [c.with_changes(comparator=self.atom(c.comparator)) for c in expr.comparisons]
            return cst.Comparison(left, tuple(targets))
        if isinstance(expr, cst.Attribute):
            spelled = self.resolution.spell(expr)
            if spelled is not None:
                return name_expr(spelled)
            return cst.Attribute(value=self.atom(expr.value), attr=expr.attr)
        if isinstance(expr, cst.Call):
            return self.call(expr)
        if isinstance(expr, cst.Subscript):
            value = self.atom(expr.value)
            elements = tuple(self.subscript_element(e) for e in expr.slice)
            return cst.Subscript(value=value, slice=elements)
        if isinstance(expr, cst.List) and any(
            isinstance(e, cst.StarredElement) for e in expr.elements
        ):
            joined = self.joined(expr)
            if isinstance(joined, cst.BinaryOperation):
                return self.flat(joined)
            return self.atom(joined)  # ([*xs]: the comprehension alone)
        if isinstance(expr, (cst.Tuple, cst.List)):
            return self.sequence(expr)
        if isinstance(expr, cst.Dict):
            for element in expr.elements:
                if not isinstance(element, cst.DictElement) or not is_literal(element.key):
                    raise self.parsed.error(element, "dict literals need literal keys here")
            return expr.with_changes(
                elements=tuple(e.with_changes(value=self.atom(e.value)) for e in expr.elements),
                lpar=(),
                rpar=(),
            )
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp, cst.DictComp, cst.SetComp)):
            return self.comprehension(expr)
        if isinstance(expr, cst.Lambda):
            return self.lambda_value(expr)
        if isinstance(expr, cst.IfExp):
            test = self.atom(expr.test)
            return self.choose(test, expr.body, expr.orelse, expr)
        if isinstance(expr, cst.BooleanOperation):
            left = self.atom(expr.left)
            if isinstance(expr.operator, cst.And):  # a and b: b if a is true, else a
                return self.choose(left, expr.right, left, expr, normal=left)
            return self.choose(left, left, expr.right, expr, normal=left)
        raise self.parsed.error(expr, f"{type(expr).__name__} expressions are not supported yet")

    def inline_nested(self, name: str, call: cst.Call) -> cst.Name:
        """A call of a function defined inside this one, inlined: its parameters become copies
        of the arguments and its returns an assignment to a fresh result name."""
        node, at_definition = self.nested[name]
        if name in self.inlining:
            raise self.parsed.error(call, f"recursive nested function {name!r} is not supported")
        params = [p.name.value for p in node.params.params]
        positional = [a.value for a in call.args if a.keyword is None]
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        if len(positional) > len(params) or set(keywords) - set(params[len(positional) :]):
            raise self.parsed.error(call, f"arguments do not match {name}'s parameters")
        values = dict(zip(params, positional, strict=False)) | keywords
        if set(values) != set(params):
            raise self.parsed.error(call, f"{name} is missing arguments")
        atoms = {p: self.atom(value) for p, value in values.items()}  # in the call's order
        reads, own = NestedReads(), AssignedNames()
        visit(node.body, reads)
        visit(node.body, own)
        # a name the nested function binds (a parameter, an assignment anywhere in its body)
        # is its own in every read, as in Python: the caller's changing value is not read
        outer_reads = reads.names - set(params) - set(own.names)
        for read in sorted(outer_reads):
            if read in at_definition and self.current.get(read) != at_definition[read]:
                raise self.parsed.error(
                    call,
                    f"nested function {name!r} reads {read!r}, which changes after it is "
                    f"defined: pass it as an argument instead",
                )
        self.inlining.add(name)
        try:
            return self.inline_body(name, atoms, list(node.body.body), at_definition)
        finally:
            self.inlining.discard(name)

    def inline_body(
        self, name: str, atoms: dict, statements: list, current: dict, share: bool = False
    ) -> cst.Name:
        """The body of an inlined function `name` normalized here, its parameters copies of
        `atoms` (parameter -> atom), the caller's names it sees `current`: the name holding
        what it returns. `share`: a parameter given a name is that name, no copy (for a
        function that changes nothing in place; the body is normalized right here, so no
        caller's name is assigned again while it runs)."""
        outer_current, outer_result, outer_returned = self.current, self.result, self.returned
        self.returned = self.namer.fresh(f"_{name}_returned")
        outer_loops, self.loops, outer_loop_depth = self.loops, [], self.loop_depth
        self.loop_depth = 0  # the inlined function's own returns and loops
        self.current = dict(current)
        self.result = self.namer.fresh(f"_{name}_result")
        self.depth += 1
        for param, atom in atoms.items():
            if share and isinstance(atom, cst.Name) and atom.value not in ("True", "False", "None"):
                self.current[param] = atom.value
                continue
            if not self.resolution.is_local(param) and self.namer.taken(param):
                # a lambda's or nested function's parameter spelled like a name handed out
                # already (a lambda's ``_t1`` beside the temporary ``_t1``): a fresh version
                self.current.pop(param, None)
                self.defined.add(param)
            new = self.define(param)
            self.emit(cst.Assign((cst.AssignTarget(cst.Name(new)),), atom), new)
        if not always_exits(statements):
            statements = [*statements, cst.SimpleStatementLine((cst.Return(cst.Name("None")),))]
        self.block(statements)
        result = cst.Name(self.current[self.result])
        self.depth -= 1
        self.current, self.result, self.returned = outer_current, outer_result, outer_returned
        self.loops, self.loop_depth = outer_loops, outer_loop_depth
        return result

    def choose(self, test, when_true, when_false, node, normal=None) -> cst.Name:
        """A value chosen by `test`, as an ``if`` assigning one temporary in both branches;
        `normal` is the one of them already in normal form (the left operand of and/or);
        the other is the user's expression (its names are renamed to their versions)."""
        temp = self.namer.temp()

        def part(value):
            def emit_part() -> bool:
                if value is normal and isinstance(value, cst.Name):
                    self.emit(copy_line(temp, value.value).body[0], temp)  # already normal
                    self.current[temp] = temp  # (both branches assign the one temporary)
                else:
                    self.assign([cst.Name(temp)], value, origin_node=node)
                return False

            return emit_part

        self.branch(test, part(when_true), part(when_false))
        return cst.Name(self.current.get(temp, temp))

    def call(self, expr: cst.Call) -> cst.BaseExpression:
        columns = self.transposed(expr)
        if columns is not None:
            return columns
        expr = self.spread(expr)
        self.check_record(expr)
        func = expr.func
        if isinstance(func, cst.Name) and func.value in self.nested:
            return self.inline_nested(func.value, expr)
        self.refuse_generated_callee(expr)
        inlined = self.inline_call(expr)
        if inlined is not None:
            return inlined
        if self.is_map(expr):
            return self.mapped(expr)
        view = self.dict_view(expr)
        if view is not None:
            return view
        got = self.dict_get(expr)
        if got is not None:
            return got
        listed = self.listed(expr)
        if listed is not None:
            return listed
        literal = self.keyword_dict(expr)
        if literal is not None:
            return literal
        spelled = (
            self.resolution.spell(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
        )
        if spelled is not None:
            callee = name_expr(spelled)
        elif isinstance(func, cst.Attribute):
            callee = cst.Attribute(value=self.atom(func.value), attr=func.attr)
        elif isinstance(func, cst.Name) and self.resolution.is_local(func.value):
            raise self.parsed.error(
                func,
                f"calling {func.value!r}, a function given as a value, is not supported: "
                f"s2sgrad transforms the functions it can see by name; call that function "
                f"here by its name (or pass the values it needs instead of a function)",
            )
        else:
            if isinstance(func, cst.Call):  # sg.grad(g)(x): a call of what a call returns
                self.refuse_generated_callee(func)
            raise self.parsed.error(
                func, "only calls of functions and of array methods are supported"
            )
        found, value = self.resolution.value_of(func) if spelled is not None else (False, None)
        if found:
            self.refuse_lambda_arguments(expr, value)
        method = func.attr.value if spelled is None else None
        arrays = one_array_arguments(value if found else None, method, expr.args)
        args = tuple(
            cst.Arg(
                value=self.as_array(a.value) if k in arrays else self.argument(a.value),
                keyword=a.keyword,
                equal=a.equal if a.keyword is not None else cst.MaybeSentinel.DEFAULT,
            )
            for k, a in enumerate(expr.args)
        )
        return cst.Call(func=callee, args=args)

    def as_array(self, expr: cst.Tuple | cst.List) -> cst.Name:
        """A list or tuple a NumPy function reads as one array, made one first (as NumPy
        does), so that rules see an array's shape: ``np.var([x, y])`` is ``_t1 =
        np.asarray([x, y]); np.var(_t1)`` (see `templates.one_array_arguments`)."""
        temp = self.namer.temp()
        value = cst.Call(name_expr("np.asarray"), (cst.Arg(self.sequence(expr)),))
        self.emit(cst.Assign((cst.AssignTarget(cst.Name(temp)),), value), temp)
        self.origins[temp] = self.origin(expr)
        return cst.Name(temp)

    def argument(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        if isinstance(expr, (cst.Tuple, cst.List)):
            return self.sequence(expr)
        return self.atom(expr)

    def sequence(self, expr: cst.Tuple | cst.List) -> cst.BaseExpression:
        elements = tuple(cst.Element(self.argument(e.value)) for e in expr.elements)
        if isinstance(expr, cst.List):
            return cst.List(elements)
        return cst.Tuple(elements)

    def subscript_element(self, element: cst.SubscriptElement) -> cst.SubscriptElement:
        inner = element.slice
        if isinstance(inner, cst.Index):
            return cst.SubscriptElement(cst.Index(self.argument(inner.value)))
        return cst.SubscriptElement(
            cst.Slice(
                lower=maybe(self.atom, inner.lower),
                upper=maybe(self.atom, inner.upper),
                step=maybe(self.atom, inner.step),
            )
        )

    def rename(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        """`expr` with locals renamed to their current version and free names respelled."""
        return expr.visit(_Rename(self))


class _Rename(cst.CSTTransformer):
    def __init__(self, normalizer: _Normalizer):
        self.normalizer = normalizer

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return self.normalizer.resolution.spell(node) is None

    def leave_Attribute(self, original, updated):
        spelled = self.normalizer.resolution.spell(original)
        return name_expr(spelled) if spelled is not None else updated

    def leave_Arg(self, original, updated):  # keyword names are not references
        return updated.with_changes(keyword=original.keyword)

    def leave_Name(self, original, updated):
        if original.value in ("True", "False", "None"):
            return updated
        if (
            original.value in self.normalizer.current
            or original.value in self.normalizer.resolution.free
        ):
            return self.normalizer.name(original)
        return updated


_AUGMENTED = {
    cst.AddAssign: cst.Add,
    cst.SubtractAssign: cst.Subtract,
    cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide,
    cst.PowerAssign: cst.Power,
    cst.MatrixMultiplyAssign: cst.MatrixMultiply,
    cst.ModuloAssign: cst.Modulo,
    cst.FloorDivideAssign: cst.FloorDivide,
    cst.BitAndAssign: cst.BitAnd,
    cst.BitOrAssign: cst.BitOr,
    cst.BitXorAssign: cst.BitXor,
    cst.LeftShiftAssign: cst.LeftShift,
    cst.RightShiftAssign: cst.RightShift,
}


def _is_method_call(expr: cst.BaseExpression, method: str) -> bool:
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == method
        and isinstance(expr.func.value, cst.Name)
    )


def normalize(parsed: ParsedFunction, resolution: Resolution, namer: Namer) -> NormalForm:
    """Flatten `parsed`'s body into A-normal form (see the module docstring)."""
    number_checks = check_mutation(parsed, resolution)
    normalizer = _Normalizer(parsed, resolution, namer)
    normalizer.run()
    output = normalizer.output if normalizer.output is not None else cst.Name("None")
    funcdef = parsed.funcdef.with_changes(
        body=cst.IndentedBlock(
            body=tuple(normalizer.lines) or (cst.SimpleStatementLine((cst.Pass(),)),)
        ),
        leading_lines=(),
    )
    return NormalForm(
        funcdef=funcdef,
        params=resolution.params,
        output=output,
        origins=types.MappingProxyType(normalizer.origins),
        line_of=types.MappingProxyType(normalizer.line_of),
        loop_headers=types.MappingProxyType(normalizer.loop_headers),
        loop_counts=types.MappingProxyType(normalizer.loop_counts),
        number_checks=number_checks,
        constants=types.MappingProxyType(normalizer.constants),
        constant_sources=types.MappingProxyType(normalizer.constant_sources),
    )
