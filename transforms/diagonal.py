"""Forward mode seeded with every unit direction of one argument: diagonal tangents stay
diagonal (Jacobians and Hessians in one sweep, without n-by-n work per operation).

A Jacobian (or a Hessian, over the gradient) is one batched forward sweep whose tangent of the
seeded argument ``x`` is ``identity_directions(x)``: ``n`` directions of ``n`` elements. Every
value computed from ``x`` element by element then has a *diagonal* tangent, ``n`` by ``n`` but
zero off its diagonal. Instead of multiplying such tangents through every operation, this pass
keeps only the diagonal, as an ordinary array of ``x``'s shape computed next to the primal
(``_diag_b = _diag_a * np.cos(a)``), and builds the batched tangent only when an operation
needs it (``tb = diagonal_directions(x, _diag_b)``), or, for a product with a constant matrix,
builds the product's tangent from the diagonal directly (``diagonal_times(_diag_a, A)``, an
elementwise scaling instead of a matrix product with the identity).

Which operations keep a tangent diagonal:
- a copy;
- an elementwise primitive whose differentiated arguments all have diagonal tangents and the
  seeded argument's shape, as its result does: its forward rule (the reverse rule with ``g``
  replaced by the argument's diagonal, as for any elementwise primitive) gives the result's
  diagonal;
- ``g * y``, the adjoint helpers ``matmul_left``/``matmul_right`` of a vector-vector product.
Products of a diagonal vector with a constant vector or matrix (``@``, ``np.dot``,
``np.matmul``, and the adjoint helpers of matrix-vector products) give a full tangent from the
diagonal. Anything else reads the full tangent, which is built at that point. Inside loops and
branches nothing is kept diagonal: a value read or assigned there gets its full tangent before.
"""

from __future__ import annotations

import operator
import re

import libcst as cst
import numpy as np
from s2sgrad.runtime import matmul_left, matmul_right

from .adjoints import assign, call
from .codegen import parenthesize_node
from .fold import number_literal
from .operations import COPY, Operation
from .tangent_rules import TangentContext, elementwise_tangent, written_tangent
from .walk import rewrite, visit

_PRODUCTS = (operator.matmul, np.matmul, np.dot)
_SUMS = (operator.add, np.add, operator.sub, np.subtract)
ONE = "1.0"


class Diagonals:
    """The values whose tangent is still diagonal, by name: the expression of the diagonal."""

    def __init__(self, seed: str, tangents):
        self.seed = seed
        self.tangents = tangents
        self.diagonal: dict[str, cst.BaseExpression] = {seed: cst.Float(ONE)}
        self.built: set[str] = set()  # diagonal tangents also built in full

    def materialize(self, names) -> list:
        """Statements giving the names among `names` that have a diagonal tangent their full
        tangent too (once)."""
        statements = []
        for name in dict.fromkeys(names):
            coefficient = self.diagonal.get(name)
            if coefficient is None or name in self.built:
                continue
            self.built.add(name)
            seed = cst.Name(self.seed)
            if _is_one(coefficient):
                full = call("identity_directions", seed)
            else:
                full = call("diagonal_directions", seed, coefficient)
            statements.append(assign(self.tangents.name(name), full))
        return statements

    def forget(self, names) -> None:
        """`names` are assigned by code whose tangents are full: their diagonals are stale."""
        for name in names:
            self.diagonal.pop(name, None)
            self.built.discard(name)

    def tangent_statements(self, op: Operation) -> list | None:
        """The statements giving `op`'s result its tangent when a rule here applies (the
        result's diagonal, or its full tangent built from diagonals), else None."""
        if len(op.targets) != 1 or op.targets[0] not in self.tangents.active:
            return None
        target = op.targets[0]
        if op.primitive is COPY:
            source = op.args[0]
            if isinstance(source, cst.Name) and source.value in self.diagonal:
                return self._keep(target, self.diagonal[source.value])
            return None
        if op.rule is None or op.index is not None or op.user or not op.differentiable:
            return None
        product = self._product(op)
        if product is not None:
            self.forget([target])
            return [assign(self.tangents.name(target), product)]
        if op.primitive in (matmul_left, matmul_right):
            return self._vector_helper(op, target)
        if op.primitive in _SUMS:
            mixed = self._diagonal_plus_full(op)
            if mixed is not None:
                self.forget([target])
                return [assign(self.tangents.name(target), mixed)]
        if op.rule.elementwise and op.rule.vjp is not None and op.rule.output is None:
            return self._elementwise(op, target)
        return None

    # -- the rules ----------------------------------------------------------------------------

    def _elementwise(self, op: Operation, target: str) -> list | None:
        active = [a for a in op.args if isinstance(a, cst.Name) and a.value in self.tangents.active]
        if not active or not all(a.value in self.diagonal for a in active):
            return None
        if not all(self._seed_shaped(a) or self.tangents.shapes.is_scalar(a) for a in op.args):
            return None  # the result may be larger than the seeded argument
        context = _Coefficients(self)
        statements: list = []
        if op.rule.jvp is not None:
            # a written forward rule (|z|, the parts of a complex z: real maps, which their
            # reverse rules' transposes are not): the directions are real, so the rule applied
            # to the diagonal gives the diagonal
            diagonal = written_tangent(op.rule.jvp, op, cst.Name(target), context, statements)
        else:
            diagonal = elementwise_tangent(op, cst.Name(target), context, statements)
        if diagonal is None:
            return None
        return statements + self._keep(target, diagonal)

    def _product(self, op: Operation) -> cst.BaseExpression | None:
        """``v @ B`` or ``B @ v`` with `v` diagonal and `B` constant: the full tangent."""
        if op.primitive not in _PRODUCTS or len(op.args) != 2 or op.kwargs:
            return None
        left, right = op.args
        if self._is_diagonal_vector(left) and self._constant(right, (1, 2)):
            diagonal = self.diagonal[left.value]
            if _is_number(diagonal):  # the identity's rows, scaled (tangents are never written)
                return _times(diagonal, right)
            return call("diagonal_times", diagonal, right)
        if self._is_diagonal_vector(right) and self._constant(left, (1, 2)):
            diagonal = self.diagonal[right.value]
            if _is_number(diagonal):  # the identity's columns, scaled
                vector = self.tangents.shapes.ndim(left) == 1
                return _times(diagonal, left if vector else call("np.transpose", left))
            return call("times_diagonal", left, diagonal)
        return None

    def _diagonal_plus_full(self, op: Operation) -> cst.BaseExpression | None:
        """``a + b`` or ``a - b``, one with a diagonal tangent, the other a full one: the full
        one with the diagonal added to it (``add_to_diagonal``), not a second full array."""
        if len(op.args) != 2 or op.kwargs:
            return None
        left, right = op.args
        if not all(isinstance(a, cst.Name) and self._seed_shaped(a) for a in op.args):
            return None
        full_left, full_right = self.tangents.of(left), self.tangents.of(right)
        subtract = op.primitive in (operator.sub, np.subtract)
        seed = cst.Name(self.seed)
        if left.value in self.diagonal and right.value not in self.diagonal and full_right:
            full = cst.UnaryOperation(cst.Minus(), full_right) if subtract else full_right
            return call("add_to_diagonal", full, self.diagonal[left.value], seed)
        if right.value in self.diagonal and left.value not in self.diagonal and full_left:
            diagonal = self.diagonal[right.value]
            if subtract:
                diagonal = cst.UnaryOperation(cst.Minus(), diagonal)
            return call("add_to_diagonal", full_left, diagonal, seed)
        return None

    def _vector_helper(self, op: Operation, target: str) -> list | None:
        """The adjoint helpers of ``a @ b`` for vectors and matrices: ``matmul_left(g, a, b)``
        is ``g * b`` (vectors) or ``b @ g`` (a vector times a matrix); ``matmul_right(g, a, b)``
        is ``g * a`` (vectors) or ``a.T @ g`` (a matrix times a vector)."""
        if len(op.args) != 3 or op.kwargs:
            return None
        g, a, b = op.args
        ranks = (self.tangents.shapes.ndim(a), self.tangents.shapes.ndim(b))
        other = b if op.primitive is matmul_left else a
        if ranks == (1, 1) and self._constant(g, (0,)) and self._is_diagonal_vector(other):
            # a scalar g times a diagonal vector: still diagonal
            return self._keep(target, _times(g, self.diagonal[other.value]))
        full_other = self.tangents.of(other)
        if ranks == (1, 1) and self._constant(g, (0,)) and other.value not in self.diagonal:
            if full_other is None:
                return None
            # a scalar g times a vector with a full tangent
            scaled = full_other
            if not _is_one(g):
                scaled = cst.BinaryOperation(g, cst.Multiply(), full_other)
            self.forget([target])
            return [assign(self.tangents.name(target), scaled)]
        wanted = (1, 2) if op.primitive is matmul_left else (2, 1)
        if ranks == wanted and self._is_diagonal_vector(g) and self._constant(other, (2,)):
            matrix = other if op.primitive is matmul_left else call("np.transpose", other)
            full = call("times_diagonal", matrix, self.diagonal[g.value])
            if _is_number(self.diagonal[g.value]):  # the identity's columns: the matrix
                transposed = other if op.primitive is matmul_right else call("np.transpose", other)
                full = _times(self.diagonal[g.value], transposed)
            self.forget([target])
            return [assign(self.tangents.name(target), full)]
        return None

    # -- helpers ----------------------------------------------------------------------------------

    def _keep(self, target: str, diagonal: cst.BaseExpression) -> list:
        """Record `diagonal` as the diagonal of `target` (through a name unless it is one)."""
        self.built.discard(target)  # a full tangent built for an earlier value of it is stale
        diagonal = _folded(diagonal)
        if isinstance(diagonal, (cst.Name, cst.Float, cst.Integer)):
            self.diagonal[target] = diagonal
            return []
        name = self.tangents.namer.fresh(f"_diag_{target.lstrip('_')}")
        self.diagonal[target] = cst.Name(name)
        return [assign(name, diagonal)]

    def _seed_shaped(self, expr) -> bool:
        """`expr` has the seeded argument's shape: a value with a diagonal tangent has it (that
        is how it got one: see the rules above), as does one of the same shape token."""
        if isinstance(expr, cst.Name) and expr.value in self.diagonal:
            return True
        return self.tangents.shapes.same(expr, cst.Name(self.seed))

    def _is_diagonal_vector(self, expr) -> bool:
        return (
            isinstance(expr, cst.Name)
            and expr.value in self.diagonal
            and self.tangents.shapes.ndim(cst.Name(self.seed)) == 1
        )

    def _constant(self, expr, ranks: tuple[int, ...]) -> bool:
        """`expr` has no tangent and one of the ranks `ranks` (a number has rank 0)."""
        if isinstance(expr, cst.Name) and expr.value in self.tangents.active:
            return False
        return self.tangents.shapes.ndim(expr) in ranks


class _Coefficients(TangentContext):
    """The context an elementwise forward rule is instantiated in to give a diagonal: the
    "tangent" of an argument is its diagonal, an array of the argument's own shape."""

    def __init__(self, diagonals: Diagonals):
        tangents = diagonals.tangents
        super().__init__(tangents.namer, tangents.shapes, batched=False)
        self.nf = tangents.nf
        self.diagonals = diagonals

    def of(self, expr: cst.BaseExpression) -> cst.BaseExpression | None:
        if isinstance(expr, cst.Name):
            return self.diagonals.diagonal.get(expr.value)
        return None


def _is_one(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Float) and float(expr.value) == 1.0


_ARITHMETIC_OF_NUMBERS = re.compile(r"[0-9.eE+\-*/() ]+")


def _folded(expr: cst.BaseExpression) -> cst.BaseExpression:
    """Arithmetic on number literals computed now (``1.0 * 0.5`` -> ``0.5``), so that a
    diagonal that is a multiple of the identity is recognized as one by the product rules."""
    if isinstance(expr, (cst.Name, cst.Float, cst.Integer)):
        return expr
    # (parentheses set first: passes build trees without them)
    text = cst.Module(body=()).code_for_node(rewrite(expr, parenthesize_node))
    if not _ARITHMETIC_OF_NUMBERS.fullmatch(text) or "**" in text:  # (no huge powers)
        return expr
    try:
        value = float(eval(text, {"__builtins__": {}}))  # digits and operators only
    except (ArithmeticError, SyntaxError, ValueError):
        return expr
    if value != value or value in (float("inf"), float("-inf")):
        return expr
    return number_literal(value)  # (-0.0 too: a Float node holds no sign)


def _is_number(expr: cst.BaseExpression) -> bool:
    """A literal diagonal: the identity scaled by it."""
    return isinstance(expr, (cst.Float, cst.Integer))


def _times(a: cst.BaseExpression, b: cst.BaseExpression) -> cst.BaseExpression:
    """``a * b``, or the other factor when one is the literal 1.0 (a unit diagonal stays
    recognizably one, which the product rules use)."""
    if _is_one(a):
        return b
    if _is_one(b):
        return a
    return cst.BinaryOperation(a, cst.Multiply(), b)


def read_names(node: cst.CSTNode) -> set[str]:
    """Every plain name `node` mentions (read or assigned)."""
    found: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.add(name.value)

    visit(node, _Names())
    return found
