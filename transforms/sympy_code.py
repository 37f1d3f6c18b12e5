"""sympy expressions and Python code, for the simplify pass: what an expression costs to
evaluate (as written, and as sympy holds it), and the printer writing one back as NumPy or
``math`` code.
"""

from __future__ import annotations

import libcst as cst
from sympy.core.function import UndefinedFunction

from .codegen import parenthesize_node
from .walk import dotted_name, rewrite

STATEMENT_COST = 0.5  # an assignment costs about half an arithmetic operation (CPython floats)

# sympy function name -> (numpy spelling, math spelling)
FUNCTIONS = {
    "sin": ("np.sin", "math.sin"),
    "cos": ("np.cos", "math.cos"),
    "tan": ("np.tan", "math.tan"),
    "exp": ("np.exp", "math.exp"),
    "log": ("np.log", "math.log"),
    "tanh": ("np.tanh", "math.tanh"),
    "sinh": ("np.sinh", "math.sinh"),
    "cosh": ("np.cosh", "math.cosh"),
    "asin": ("np.arcsin", "math.asin"),
    "acos": ("np.arccos", "math.acos"),
    "atan": ("np.arctan", "math.atan"),
    "sqrt": ("np.sqrt", "math.sqrt"),
}
SOURCE_FUNCTIONS = {
    spelling: name for name, spellings in FUNCTIONS.items() for spelling in spellings
} | {"np.square": "square"}


class Unprintable(Exception):
    """An expression the printer has no spelling for."""


def operations(sp, expr) -> float:
    """Operations an expression costs, function calls weighing more than arithmetic."""
    cost = 0.0
    for sub in sp.preorder_traversal(expr):
        if sub.is_Add:
            cost += len(sub.args) - 1
        elif sub.is_Mul:  # a coefficient of -1 is a subtraction in the sum around it: free
            free = sub.args[0].is_number and float(sub.args[0]) == -1.0
            cost += len(sub.args) - (2 if free else 1)
        elif sub.is_Pow:
            cost += 1 if sub.exp in (-1, 2, sp.Rational(1, 2)) else 3
        elif sub.is_Function:
            cost += 8
    return cost


def written_cost(node: cst.BaseExpression, helpers: frozenset[str] = frozenset()) -> float:
    """`operations` of an expression as written (sympy would already have folded ``2 * x * 3``);
    calls of `helpers` (which the pass writes as sympy functions) weigh what functions do."""
    kind = type(node)
    if kind is cst.BinaryOperation:
        own = 1.0
        if isinstance(node.operator, cst.Power):
            exponent = node.right
            cheap = isinstance(exponent, (cst.Integer, cst.Float)) and exponent.value in (
                "2",
                "2.0",
            )
            own = 1.0 if cheap else 3.0
        return own + written_cost(node.left, helpers) + written_cost(node.right, helpers)
    if kind is cst.UnaryOperation:
        return 1.0 + written_cost(node.expression, helpers)
    if kind is cst.Call:
        name = dotted_name(node.func) or ""
        if name in SOURCE_FUNCTIONS or name in helpers:
            return 8.0 + sum(written_cost(arg.value, helpers) for arg in node.args)
    return 0.0  # names, numbers and opaque subexpressions: copied as they are


def shared_cost(sp, expr) -> float:
    """The cost of `expr` once its repeated subexpressions are computed once."""
    replacements, reduced = sp.cse([expr])
    shared = sum(operations(sp, e) + STATEMENT_COST for _, e in replacements)
    return shared + operations(sp, reduced[0])


class Printer:
    """sympy expressions back to Python source: NumPy (or math) calls, opaque subexpressions
    as their original code, divisions collected into one ``/``, a sum led by a positive term
    (``3.0 - a`` rather than ``-a + 3.0``).

    ``code(expr, floating=True)`` writes whole numbers as floats (``2.0 * d``): for an
    expression known to be a float anyway that is the same value, and CPython multiplies two
    floats faster than an int and a float. Exponents stay integers.
    """

    def __init__(self, atoms: dict, flavor: str):
        self.atoms = atoms
        self.flavor = 1 if flavor == "math" else 0
        self.floating = False

    def code(self, expr, floating: bool = False) -> str:
        self.floating = floating
        return self.expr(expr)

    def expr(self, e) -> str:
        if e in self.atoms:  # (passes build trees without parentheses: set them first)
            atom = rewrite(self.atoms[e], parenthesize_node)
            return "(" + cst.Module(body=()).code_for_node(atom) + ")"
        if e.is_Symbol:
            return e.name
        if e.is_Integer:
            return f"{int(e)}.0" if self.floating else str(int(e))
        if e.is_Rational:
            return repr(int(e.p) / int(e.q))
        if e.is_Float:
            return repr(float(e))
        if e.is_Add:
            return self.add(e)
        if e.is_Mul:
            return self.mul(e)
        if e.is_Pow:
            return self.power(e)
        if e.is_Function and type(e).__name__ in FUNCTIONS and len(e.args) == 1:
            return f"{FUNCTIONS[type(e).__name__][self.flavor]}({self.expr(e.args[0])})"
        if isinstance(type(e), UndefinedFunction):  # a runtime helper: integers stay integers
            floating, self.floating = self.floating, False
            arguments = ", ".join(self.expr(a) for a in e.args)
            self.floating = floating
            return f"{type(e).__name__}({arguments})"
        if e.is_NumberSymbol and str(e) in ("pi", "E"):
            return ("np.", "math.")[self.flavor] + ("pi" if str(e) == "pi" else "e")
        raise Unprintable

    def add(self, e) -> str:
        terms = list(e.as_ordered_terms())
        leader = next((t for t in terms if not _negative(t)), terms[0])
        terms.remove(leader)
        text = self.expr(leader)
        for term in terms:
            if _negative(term):
                text += f" - ({self.expr(-term)})"
            else:
                text += f" + ({self.expr(term)})"
        return f"({text})"

    def mul(self, e) -> str:
        coefficient, rest = e.as_coeff_Mul()
        numerator, denominator = [], []
        for factor in rest.as_ordered_factors():
            base, exponent = factor.as_base_exp()
            if exponent.is_number and exponent.is_negative:
                denominator.append(base if exponent == -1 else base ** (-exponent))
            else:
                numerator.append(factor)
        parts = [f"({self.expr(f)})" for f in numerator]
        sign = ""
        if float(coefficient) == -1.0:
            sign = "-"
        elif coefficient != 1:  # 1.0 * y stays: it is a new array, y would be an alias
            parts.insert(0, f"({self.expr(coefficient)})")
        text = " * ".join(parts) if parts else self.expr(coefficient.func(1))
        if denominator:
            below = " * ".join(f"({self.expr(f)})" for f in denominator)
            text = f"{text} / ({below})"
        return f"({sign}({text}))" if sign else f"({text})"

    def power(self, e) -> str:
        base, exponent = e.args
        function = FUNCTIONS["sqrt"][self.flavor]
        if exponent.is_number and float(exponent) == 0.5:
            return f"{function}({self.expr(base)})"
        if exponent.is_number and exponent.is_negative:
            one = "1.0" if self.floating else "1"
            return f"({one} / ({self.expr(base ** (-exponent))}))"
        if exponent == 2 and base.is_Symbol:  # x * x beats x ** 2
            return f"({self.expr(base)} * {self.expr(base)})"
        floating, self.floating = self.floating, False
        exponent_code = self.expr(exponent)
        self.floating = floating
        return f"(({self.expr(base)}) ** ({exponent_code}))"


def _negative(term) -> bool:
    coefficient = term.as_coeff_Mul()[0]
    return bool(coefficient.is_number and coefficient < 0)


def floating(sp, expr, floats: set) -> bool:
    """Whether `expr` is certainly a float (or float array) when its names in `floats` are:
    it has a float literal, a function call, a division or a non-integer power in it."""
    for sub in sp.preorder_traversal(expr):
        if sub.is_Float or sub.is_Function:
            return True
        if sub.is_Symbol and sub.name in floats:
            return True
        if sub.is_Pow and not (sub.exp.is_Integer and sub.exp > 0):
            return True
    return False


def one_operation(expr) -> bool:
    """Whether `expr` is one arithmetic operation on names and numbers (a negation, a
    product or sum of two, a reciprocal or a square), no function call."""
    if not all(a.is_Symbol or a.is_Number for a in expr.args):
        return False
    if expr.is_Pow:
        return expr.exp in (-1, 2)
    if expr.is_Mul and len(expr.args) == 2:
        return True
    return bool(expr.is_Add and len(expr.args) == 2)


def bounded_away_from_zero(expr) -> bool:
    """Whether `expr` is a positive number, or one plus something never negative (``1 +
    exp(-x)``): then it is not 0 in floating point either, however its terms round."""
    constant, rest = expr.as_coeff_Add()
    return bool(constant.is_number and constant > 0 and (rest == 0 or rest.is_nonnegative))
