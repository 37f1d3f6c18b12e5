"""What changes a value in place, and what shares memory with what: the tables the mutation
analysis (`mutation`) reads, the fast check that lets it skip functions with nothing to
check, and small helpers on expressions. No analysis here: plain data and pure functions."""

from __future__ import annotations

import ast

import libcst as cst
import numpy as np
from s2sgrad.runtime import SHAPE_ONLY_ARGUMENTS

# array methods returning a view of (or an object from inside) their receiver
VIEW_METHODS = frozenset(
    "reshape ravel transpose squeeze swapaxes view diagonal "
    "__array__ conj conjugate values items keys".split()
)
# array methods returning a new object with no reference into the receiver
FRESH_METHODS = frozenset(
    "sum mean prod max min var std cumsum cumprod dot clip round argmax argmin argsort "
    "nonzero any all astype flatten tolist item trace ptp count index __len__ "
    "__contains__".split()
)
# container methods returning one of the items
ELEMENT_METHODS = frozenset("get pop __getitem__ setdefault".split())
# attributes that are views of the array they are read from, and attributes that are numbers
VIEW_ATTRIBUTES = frozenset({"T", "mT", "real", "imag", "flat", "base"})
PLAIN_ATTRIBUTES = frozenset({"shape", "ndim", "size", "dtype", "nbytes", "itemsize"})
# calls reading some arguments for their shape only (position -> not a read of the values)
SHAPE_READS = {
    **SHAPE_ONLY_ARGUMENTS,
    "len": (0,),
    "np.ndim": (0,),
    "zero_adjoint": (0,),
    "zero_tangent": (0,),
    "fresh_adjoint": (1,),
}
# values of globals and closures that may be changed in place
MUTABLE = (np.ndarray, list, dict, set, bytearray)

# methods that change their receiver in place, with what to write instead
MUTATING_METHODS = {
    "fill": "{x} = np.full_like({x}, value)",
    "sort": "{x} = np.sort({x}) (or sorted({x}) for a list)",
    "partition": "{x} = np.partition({x}, k)",
    "resize": "{x} = np.resize({x}, shape)",
    "itemset": "{x}[index] = value",
    "setfield": "a new array",
    "put": "{x}[indices] = values",
    "byteswap": "{x} = {x}.byteswap()",
    "setflags": "a copy",
    "__setitem__": "{x}[index] = value",
    "__delitem__": "a new array or list without the item",
    "extend": "one append per item",
    "insert": "a new list",
    "remove": "a new list",
    "reverse": "{x} = {x}[::-1]",
    "clear": "{x} = []",
    "update": "a new dict",
    "setdefault": "a new dict",
    "popitem": "a new dict",
    "discard": "a new set",
    "add": "a new set",
}
# list methods normal form models: they change the list itself, which keeps its name
MODELLED_METHODS = frozenset({"append", "pop"})


def _numpy_functions(names: str) -> frozenset:
    found = set()
    for dotted in names.split():
        value = np
        for part in dotted.split("."):
            value = getattr(value, part, None)
        if value is not None:
            found.add(value)
    return frozenset(found)


# NumPy functions that write into their first argument
MUTATING_FUNCTIONS = _numpy_functions(
    "put copyto place putmask fill_diagonal put_along_axis random.shuffle"
)
# NumPy functions whose result may be (or hold) a view of an argument
VIEW_FUNCTIONS = _numpy_functions(
    "asarray asanyarray ascontiguousarray asfortranarray require reshape ravel transpose "
    "squeeze swapaxes moveaxis rollaxis expand_dims atleast_1d atleast_2d atleast_3d "
    "broadcast_to broadcast_arrays diagonal diag real imag split array_split hsplit vsplit "
    "dsplit flip fliplr flipud rot90 asarray_chkfinite matrix_transpose permute_dims "
    "lib.stride_tricks.as_strided lib.stride_tricks.sliding_window_view"
)
# builtins whose result holds no reference to their arguments
FRESH_BUILTINS = frozenset(
    "len abs float int bool complex round range print isinstance pow divmod sum str repr "
    "hash id any all format type".split()
)


CONSTANTS = frozenset(
    {cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis}
)
LITERALS = frozenset({cst.Tuple, cst.List, cst.Set, cst.Dict})
COMPREHENSIONS = frozenset({cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp})


def child_expressions(expr) -> list:
    """The expressions directly below `expr` (read from its fields for the common kinds)."""
    kind = type(expr)
    if kind in (cst.BinaryOperation, cst.BooleanOperation):
        return [expr.left, expr.right]
    if kind is cst.UnaryOperation:
        return [expr.expression]
    if kind is cst.IfExp:
        return [expr.test, expr.body, expr.orelse]
    if kind is cst.Comparison:
        return [expr.left, *(target.comparator for target in expr.comparisons)]
    if kind in (cst.Tuple, cst.List, cst.Set):
        return [element.value for element in expr.elements]
    if kind is cst.Dict:
        return [
            part
            for element in expr.elements
            for part in ((element.key, element.value) if element.key else (element.value,))
        ]
    if kind is cst.Slice:
        return [bound for bound in (expr.lower, expr.upper, expr.step) if bound is not None]
    found = _ChildExpressions()
    expr.visit(found)
    return found.children


class _ChildExpressions(cst.CSTVisitor):
    """The expressions directly below one expression (not their own children)."""

    def __init__(self) -> None:
        self.children: list[cst.BaseExpression] = []
        self.top = True

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.top:
            self.top = False
            return True
        if isinstance(node, cst.BaseExpression):
            self.children.append(node)
            return False
        return True


_UFUNCS_BY_ARITY = {
    arity: frozenset(
        name
        for name in dir(np)
        if isinstance(getattr(np, name), np.ufunc) and getattr(np, name).nin == arity
    )
    for arity in (1, 2, 3)
}
_CHANGING_NAMES = (
    frozenset(MUTATING_METHODS)
    | MODELLED_METHODS
    | {"at", "shuffle", "heappush", "heappop", "heapify", "heapreplace", "heappushpop"}
    | {"insort", "insort_left", "insort_right"}
    | {getattr(f, "__name__", "") for f in MUTATING_FUNCTIONS}
)


def may_change_in_place(tree: ast.Module | None) -> bool:
    """Whether anything in the function could change a value in place: an item write, an
    augmented assignment, a call of a method or function that changes its argument (by
    name), ``out=``, or a ufunc given more positional arguments than inputs. Read from
    Python's `ast` (fast): most functions have none of these, and need no further walk."""
    if tree is None:
        return True
    for node in ast.walk(tree):
        kind = type(node)
        if kind is ast.AugAssign:
            return True
        if kind is ast.Subscript and type(node.ctx) is ast.Store:
            return True
        if kind is ast.Call:
            func = node.func
            name = func.attr if type(func) is ast.Attribute else getattr(func, "id", "")
            if name in _CHANGING_NAMES or name.startswith("__i"):
                return True
            if any(keyword.arg == "out" for keyword in node.keywords):
                return True
            if any(name in _UFUNCS_BY_ARITY[k] and len(node.args) > k for k in (1, 2, 3)):
                return True
    return False


def mutates_first_argument(callee) -> bool:
    """``np.put``, ``np.copyto``, ``random.shuffle``, ``heapq.heappush``, ..., ``ufunc.at``
    (``np.add.at(x, index, v)``) and a changing method called through its class
    (``np.ndarray.fill(x, v)``, ``list.sort(items)``)."""
    if is_in(callee, MUTATING_FUNCTIONS):
        return True
    name = getattr(callee, "__name__", "")
    if isinstance(getattr(callee, "__self__", None), np.ufunc):
        return name == "at"
    if getattr(callee, "__objclass__", None) in (np.ndarray, list, dict, set, bytearray):
        return name in MUTATING_METHODS or name in MODELLED_METHODS or name.startswith("__i")
    module = getattr(callee, "__module__", "") or ""
    return module in ("random", "_random", "heapq", "_heapq", "bisect", "_bisect") and (
        name in _STANDARD_MUTATORS
    )


# functions of the standard library that change the list they are given
_STANDARD_MUTATORS = frozenset(
    "shuffle heappush heappop heapify heapreplace heappushpop insort insort_left "
    "insort_right".split()
)


def is_in(callee, table: frozenset) -> bool:
    try:
        return callee in table
    except TypeError:  # unhashable
        return False


def copy_is_false(expr: cst.Call) -> bool:
    """``copy=False`` (or None): np.array may return its argument."""
    return any(
        a.keyword is not None
        and a.keyword.value == "copy"
        and isinstance(a.value, cst.Name)
        and a.value.value in ("False", "None")
        for a in expr.args
    )


def elements_of(value, count: int) -> list:
    """The element expressions of a tuple or list literal of `count` elements (a, b = b, a),
    or Nones (any other value: its elements are read from it)."""
    if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == count:
        if not any(isinstance(e, cst.StarredElement) for e in value.elements):
            return [e.value for e in value.elements]
    return [None] * count
