"""Pass 8b, edges: an entry function that never changes what it is given nor returns it.

A transformed function never modifies its inputs and never returns them (API.md, section 1).
Its primal sweep runs the user's statements as written, ``xs.append(...)`` and
``p.update(...)`` included, and the optimizer propagates assignments, so ``d/dx sum(x * w)``
comes out as ``return w``. This pass, run on the finished entry function of a transform (never
on a callee's halves: their inputs are the entry's own values), adds at its edges:

- first lines ``xs = fresh_containers(xs)`` for the container parameters of the
  specialization and every parameter generated code added (tangents, the output's adjoint),
  when there are container parameters at all: the code then works on its own lists and dicts;
- ``return unaliased(result, (x, w, ...))`` around every returned value the pass cannot show
  to be a new object, the sources being the parameters, the mutable constants the function
  reads and the Python functions it calls as written (``return h()`` may return one of ``h``'s
  globals, which only ``h`` names: `unaliased` reads a function source as everything it can
  read): arrays of the result sharing memory with one of them are copied.

A value is new when every assignment to it is arithmetic, a literal, a call of a NumPy ufunc or
of a function known to allocate its result, or a view (an index, an attribute) of a new value,
so typical gradients (``dx = np.cos(x)``) pay nothing. Output: the same function with those
lines; `runtime/boundaries.py` has the two helpers.
"""

from __future__ import annotations

import types
from collections.abc import Mapping

import libcst as cst
import numpy as np

from .walk import read_names

# NumPy functions (besides ufuncs) whose result is always a new array
_ALLOCATING = frozenset(
    {
        "sum", "mean", "prod", "dot", "vdot", "inner", "outer", "tensordot", "kron", "cross",
        "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "eye",
        "identity", "stack", "concatenate", "vstack", "hstack", "where", "cumsum", "cumprod",
        "trace", "var", "std", "copy", "array", "sort", "clip", "linspace", "arange",
    }
)  # fmt: skip
# array methods whose result is always a new array or number (``dt.sum(axis=0)``, a bias's
# gradient): none is a method of a list, tuple or dict, whose copies would share their items
_ALLOCATING_METHODS = frozenset(
    {"sum", "mean", "prod", "std", "var", "cumsum", "cumprod", "dot", "max", "min", "trace"}
)
# runtime helpers returning new values, and those returning their first argument reshaped
_NEW_HELPERS = frozenset(
    {"zero_adjoint", "zero_tangent", "fresh_adjoint", "matmul_left", "matmul_right"}
)
_SHAPING_HELPERS = frozenset({"match_shape", "unbroadcast", "unreduce"})


def entry_edges(
    funcdef: cst.FunctionDef,
    containers: frozenset[str],
    primal_params: tuple[str, ...],
    constants: Mapping[str, object],
) -> cst.FunctionDef:
    """`funcdef` with its container arguments copied and its result unaliased (see above)."""
    params = [
        p.name.value
        for p in (
            *funcdef.params.posonly_params,
            *funcdef.params.params,
            *funcdef.params.kwonly_params,
        )
    ]
    given = set(params) | set(constants)
    funcdef = _unalias_returns(funcdef, params, given, constants, containers)
    if containers:
        copied = [p for p in params if p in containers or p not in primal_params]
        first = tuple(cst.parse_statement(f"{p} = fresh_containers({p})") for p in copied)
        body = funcdef.body
        funcdef = funcdef.with_changes(body=body.with_changes(body=(*first, *body.body)))
    return funcdef


def unalias_constants(funcdef: cst.FunctionDef, constants: Mapping[str, object]) -> cst.FunctionDef:
    """A callee's generated half: its returned values unaliased from the mutable constants it
    reads (its own globals, which the entry calling it cannot see; a parameter returned is the
    caller's value, which the entry checks)."""
    if not any(isinstance(v, _SOURCES) for v in constants.values()):
        return funcdef
    params = {p.name.value for p in (*funcdef.params.params, *funcdef.params.kwonly_params)}
    return _unalias_returns(funcdef, [], params | set(constants), constants)


# constants a result may share memory with: mutable values, and functions called as written
_SOURCES = (np.ndarray, list, dict, tuple, types.FunctionType)


def _unalias_returns(
    funcdef, params: list[str], given: set[str], constants, containers=frozenset()
) -> cst.FunctionDef:
    """`funcdef` whose returns of values not shown to be new are ``unaliased(value, sources)``,
    the sources being `params` and the mutable constants the function reads (`containers`:
    the parameters that are lists, tuples or dicts)."""
    freshness = _Freshness(funcdef.body.body, given, containers)
    if all(r.value is None or freshness.is_new(r.value) for r in freshness.returns):
        return funcdef
    read: list[str] = []
    for node in freshness.read:
        read_names(node, read)
    mutable = [n for n in dict.fromkeys(read) if isinstance(constants.get(n), _SOURCES)]
    if not params and not mutable:
        return funcdef
    sources = cst.Tuple([cst.Element(cst.Name(n)) for n in [*params, *mutable]])
    body = list(funcdef.body.body)
    last = body[-1]
    only_last = (
        len(freshness.returns) == 1
        and isinstance(last, cst.SimpleStatementLine)
        and last.body[0] is freshness.returns[0]
    )
    if not only_last:  # (generated code has one exit; this is for anything else)
        return funcdef.with_changes(body=funcdef.body.visit(_Unalias(freshness, sources)))
    body[-1] = last.with_changes(body=(_unaliased(last.body[0], sources),))
    return funcdef.with_changes(body=funcdef.body.with_changes(body=tuple(body)))


def _unaliased(statement: cst.Return, sources: cst.Tuple) -> cst.Return:
    call = cst.Call(cst.Name("unaliased"), (cst.Arg(statement.value), cst.Arg(sources)))
    return statement.with_changes(value=call)


class _Unalias(cst.CSTTransformer):
    def __init__(self, freshness: _Freshness, sources: cst.Tuple):
        self.freshness = freshness
        self.sources = sources

    def leave_Return(self, original: cst.Return, updated: cst.Return) -> cst.Return:
        if updated.value is None or self.freshness.is_new(updated.value):
            return updated
        return _unaliased(updated, self.sources)


class _Freshness:
    """Which expressions of a function are certainly new objects (see the module docstring),
    from one walk over its statements (no libcst visitor: this runs on every entry)."""

    def __init__(self, lines, given: set[str], containers=frozenset()):
        self.values: dict[str, list[cst.BaseExpression]] = {}
        self.unknown = set(given)  # parameters, constants, names bound by unpacking or loops
        self.containers = containers
        self.returns: list[cst.Return] = []
        self.read: list[cst.CSTNode] = []  # what the function reads: statements, tests
        self._found_sequences: set[str] | None = None  # (`_sequences`)
        self._new_names: dict[str, bool] = {}  # (`_name_is_new`, asked with nothing seen)
        self._walk(lines)

    def _walk(self, lines) -> None:
        for line in lines:
            if isinstance(line, cst.SimpleStatementLine):
                for statement in line.body:
                    self._statement(statement)
                continue
            if isinstance(line, cst.For):
                self._bound_unknown(line.target)
                self.read.append(line.iter)
            elif isinstance(line, (cst.If, cst.While)):
                self.read.append(line.test)
            else:  # anything else: every name it reads is a read
                self.read.append(line)
                continue
            self._walk(line.body.body)
            orelse = getattr(line, "orelse", None)
            while isinstance(orelse, cst.If):  # elif
                self.read.append(orelse.test)
                self._walk(orelse.body.body)
                orelse = orelse.orelse
            if orelse is not None:
                self._walk(orelse.body.body)

    def _statement(self, statement: cst.BaseSmallStatement) -> None:
        if isinstance(statement, cst.Return):
            self.returns.append(statement)
            if statement.value is not None:
                self.read.append(statement.value)
        elif isinstance(statement, cst.Assign):
            self.read.append(statement.value)
            for target in statement.targets:
                if isinstance(target.target, cst.Name):
                    self.values.setdefault(target.target.value, []).append(statement.value)
                else:
                    self.read.append(target.target)
                    self._bound_unknown(target.target)
        elif isinstance(statement, (cst.AugAssign, cst.Expr)):
            changed = statement.value.func if isinstance(statement.value, cst.Call) else None
            if isinstance(changed, cst.Attribute) and isinstance(changed.value, cst.Name):
                self.unknown.add(changed.value.value)  # ``xs.append(v)``: xs may now hold v
            self.read.extend(
                (statement.target, statement.value)
                if isinstance(statement, cst.AugAssign)
                else (statement.value,)
            )
        else:
            self.read.append(statement)

    def _bound_unknown(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.unknown.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bound_unknown(element.value)

    def is_new(self, expr: cst.BaseExpression, seen: frozenset[str] = frozenset()) -> bool:
        if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary)):
            return True
        if isinstance(expr, cst.BinaryOperation) and self._may_be_sequence(expr):
            # a list join or repeat is a new list of the operands' own elements
            return self.is_new(expr.left, seen) and self.is_new(expr.right, seen)
        if isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison)):
            return True
        if isinstance(expr, cst.Name):
            return self._name_is_new(expr.value, seen)
        if isinstance(expr, (cst.Tuple, cst.List)):
            return all(self.is_new(e.value, seen) for e in expr.elements)
        if isinstance(expr, cst.IfExp):
            return self.is_new(expr.body, seen) and self.is_new(expr.orelse, seen)
        if isinstance(expr, (cst.Subscript, cst.Attribute)):
            return self.is_new(expr.value, seen)  # a view of a new array is no alias
        if isinstance(expr, cst.Call):
            return self._call_is_new(expr, seen)
        return False

    def _may_be_sequence(self, expr: cst.BaseExpression) -> bool:
        """`expr` may be a list or tuple: a literal, a container parameter, a name assigned
        one, or ``+`` / ``*`` with such an operand (names: `_sequences`)."""
        if isinstance(expr, (cst.List, cst.Tuple)):
            return True
        if isinstance(expr, cst.Name):
            return expr.value in self._sequences()
        if isinstance(expr, cst.BinaryOperation) and isinstance(
            expr.operator, (cst.Add, cst.Multiply)
        ):
            return self._may_be_sequence(expr.left) or self._may_be_sequence(expr.right)
        return False

    def _sequences(self) -> set[str]:
        """The names that may hold a list or tuple, found once, until nothing changes. (A walk
        of the definitions from each name visited a value once per path to it: ``y = y + 0.01
        * y * y`` eight times took a minute to differentiate; hunt, round4 repro_1.)"""
        if self._found_sequences is None:
            found = set(self.containers)
            self._found_sequences = found
            changed = True
            while changed:
                changed = False
                for name, values in self.values.items():
                    if name not in found and any(self._may_be_sequence(v) for v in values):
                        found.add(name)
                        changed = True
        return self._found_sequences

    def _name_is_new(self, name: str, seen: frozenset[str]) -> bool:
        if name in ("None", "True", "False"):
            return True
        if name in self.unknown or name not in self.values:
            return False
        if name in seen:  # a loop-carried value: new if its other assignments are
            return True
        if not seen and name in self._new_names:
            return self._new_names[name]
        new = all(self.is_new(value, seen | {name}) for value in self.values[name])
        if not seen:  # (an answer asked with names seen may rest on them: not kept)
            self._new_names[name] = new
        return new

    def _call_is_new(self, call: cst.Call, seen: frozenset[str]) -> bool:
        if any(arg.keyword is not None and arg.keyword.value == "out" for arg in call.args):
            return False
        func = call.func
        if isinstance(func, cst.Name):
            if func.value in _NEW_HELPERS:
                return True
            if func.value in _SHAPING_HELPERS and call.args:
                return self.is_new(call.args[0].value, seen)
            return False
        if isinstance(func, cst.Attribute) and _is_numpy(func.value):
            name = func.attr.value
            return isinstance(getattr(np, name, None), np.ufunc) or name in _ALLOCATING
        return isinstance(func, cst.Attribute) and func.attr.value in _ALLOCATING_METHODS


def _is_numpy(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "np"
