"""What changes a value in place, and what shares memory with what: the tables the mutation
analysis (`mutation`) reads, the fast check that lets it skip functions with nothing to
check, and small helpers on expressions. No analysis here: plain data and pure functions."""

from __future__ import annotations

import ast

import libcst as cst
import numpy as np
from s2sgrad.runtime import SHAPE_ONLY_ARGUMENTS

from .bound import as_callee
from .library import is_user_function
from .walk import visit

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
# view functions whose result has their first argument's rank (a view of an argument keeps
# what the arguments make its items: `same_rank`)
SAME_RANK_VIEWS = _numpy_functions(
    "asarray asanyarray ascontiguousarray asfortranarray flip fliplr flipud rot90"
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
    visit(expr, found)
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


# -- kinds: what the analysis knows of a value's type ---------------------------------------
# An immutable number (a Python number or a NumPy scalar: ``s += 1`` only rebinds it), an
# integer (a number that can index), an array with a known number of dimensions (an int), not
# known (None), or ANY: what the arguments make it, a number for some (the transform-time run,
# before argument types are known, lets ANY pass where only an array would be refused).
SCALAR = "scalar"
INT = "int"
ANY = "any"
NUMBERS = frozenset({SCALAR, INT})
IMMUTABLE = NUMBERS | {ANY}
EMPTY = "empty"  # the items of an empty list: none yet
ARRAY = "array"  # an array whose rank the arguments decide (a slice of one): its items are ANY
_ARRAYS = frozenset({ARRAY, *range(1, 33)})


def join_kinds(a, b):
    """The kind of a value that is one of two values, of kinds `a` and `b`."""
    if a == b or b == EMPTY:
        return a
    if a == EMPTY:
        return b
    if a in NUMBERS and b in NUMBERS:
        return SCALAR
    if a in IMMUTABLE and b in IMMUTABLE:
        return ANY
    if {a, b} <= _ARRAYS and ARRAY in (a, b):
        # (an array of a rank the arguments decide stays one; two known different ranks do
        # not make one: ARRAY's items are ANY, a number for some arguments, which a walk
        # with the arguments' types known must never assume of a matrix's rows)
        return ARRAY
    return None


def indexed_kind(kind, index_kinds: list) -> object:
    """The kind of ``x[i, j:, ...]``: each integer index drops a dimension, each slice keeps
    one; anything else (a mask, ``None``, ``...``) gives an array not known here."""
    if kind in NUMBERS:  # an error, or a new 0-d array (np.float64(1.0)[...])
        return SCALAR
    if kind in (ANY, ARRAY):  # an item of an array argument: a number for a vector
        if all(k == INT for k in index_kinds):
            return ANY
        return ARRAY if all(k in (INT, "slice") for k in index_kinds) else None
    if not isinstance(kind, int) or kind < len(index_kinds):
        return None
    if not all(k in (INT, "slice") for k in index_kinds):
        return None
    rank = kind - sum(1 for k in index_kinds if k == INT)
    return SCALAR if rank == 0 else rank


def operation_kind(kinds: list, integer: bool = False) -> object:
    """The kind of an elementwise result (arithmetic, a ufunc) of operands of `kinds`: a number
    from numbers (an integer when `integer` and every operand is), else the largest rank."""
    if all(k in NUMBERS for k in kinds):
        return INT if integer and all(k == INT for k in kinds) else SCALAR
    if all(k in IMMUTABLE for k in kinds):
        return ANY
    known = all(k in IMMUTABLE or k == ARRAY or isinstance(k, int) for k in kinds)
    if known and (ANY in kinds or ARRAY in kinds):
        return ARRAY  # an array (some operand is one) whose rank the arguments decide
    ranks = [k for k in kinds if k not in NUMBERS]
    if all(isinstance(k, int) for k in ranks):
        return max(ranks)
    return None


def product_kind(a, b) -> object:
    """``a @ b``, ``np.dot(a, b)``: a number for two vectors."""
    if a == 1 and b == 1:
        return SCALAR
    if {a, b} <= {1, ANY, ARRAY}:
        return ANY
    if isinstance(a, int) and isinstance(b, int) and a >= 1 and b >= 1:
        return a + b - 2 if min(a, b) == 1 else max(a, b)
    return None


# NumPy functions giving a number when called on one value with no axis
REDUCTIONS = _numpy_functions(
    "sum mean prod max min amax amin var std median average ptp nansum nanmean nanmax nanmin "
    "linalg.norm linalg.det count_nonzero"
)
# NumPy functions giving a 1-D array of their one argument (flattened: no axis given)
FLAT_RESULTS = _numpy_functions("cumsum cumprod ravel")
# NumPy functions giving a 1-D array of numbers they are given
FLAT_OF_NUMBERS = _numpy_functions("arange linspace flatnonzero")
# NumPy functions whose result has their first argument's rank
SAME_RANK = _numpy_functions(
    "roll flip flipud fliplr sort partition tril triu rot90 nan_to_num real imag conj "
    "conjugate diff pad take_along_axis"
)
QUANTILES = _numpy_functions("quantile percentile")
# NumPy functions building an array of the shape given as their first argument
SHAPED_CONSTRUCTORS = _numpy_functions("zeros ones full empty")


def kind_of_value(value) -> object:
    """The kind of a global's or closure's value."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return INT
    if isinstance(value, (float, complex, bool, str, np.generic)) or value is None:
        return SCALAR
    if isinstance(value, np.ndarray):
        return value.ndim
    return None


def items_kind(value) -> object:
    """The kind every item of a global list/tuple/dict has (None if they differ or it is
    empty or not a container)."""
    if isinstance(value, dict):
        value = list(value.values())
    if not isinstance(value, (list, tuple)) or not value:
        return None
    kind = kind_of_value(value[0])
    for item in value[1:]:
        kind = join_kinds(kind, kind_of_value(item))
    return kind


# functions stacking a sequence of arrays along a new or second axis
STACKED = _numpy_functions("vstack row_stack dstack column_stack stack")


def _stacked_rank(callee, rank: int, keywords: list) -> int | None:
    """The rank of stacking pieces of `rank` with `callee` (one of `STACKED`)."""
    if callee is np.stack:
        return rank + 1 if not set(keywords) - {"axis"} else None
    if callee is np.dstack:
        return max(rank, 3)
    return max(rank, 2)  # vstack, row_stack, column_stack


def same_rank(kind) -> object:
    """The kind of a new array with the rank of a value of `kind`: an argument's (ANY) or an
    array whose rank the arguments decide gives such an array (a 0-d one from a number, which
    is no number: it changes in place), so the first, argument-blind walk keeps knowing that
    its items are what the arguments make them."""
    if isinstance(kind, int) and kind != INT:
        return kind
    return ARRAY if kind in (ANY, ARRAY) else None


def library_call_kind(callee, expr: cst.Call, args: list) -> object:
    """The kind of what a NumPy or `math` function returns, given what the analysis knows of
    its positional `args` (their ``kind`` and, for containers, ``items``); None where this
    table does not know."""
    kinds = [arg.kind for arg in args]
    keywords = [a.keyword.value for a in expr.args if a.keyword is not None]
    module = getattr(callee, "__module__", "") or ""
    if module == "math":
        return SCALAR
    if is_in(callee, REDUCTIONS):
        return SCALAR if len(kinds) == 1 and not set(keywords) - {"dtype"} else None
    if callee in (np.dot, np.matmul, np.inner) and len(kinds) == 2:
        return product_kind(*kinds)
    if callee is np.vdot:
        return SCALAR
    if callee is np.where and len(kinds) == 3:  # a 0-d array (mutable) from numbers
        return operation_kind([0 if k in NUMBERS else k for k in kinds])
    if isinstance(callee, np.ufunc) and len(kinds) == callee.nin and not keywords:
        return operation_kind(kinds)
    if is_in(callee, FLAT_RESULTS) and "axis" not in keywords and len(kinds) == 1:
        return 1
    if is_in(callee, FLAT_OF_NUMBERS) and kinds and all(k in NUMBERS for k in kinds[:2]):
        return 1
    if is_in(callee, SAME_RANK) and kinds:
        return same_rank(kinds[0])
    if is_in(callee, QUANTILES) and len(kinds) == 2 and kinds[1] in NUMBERS and not keywords:
        return SCALAR
    if is_in(callee, SHAPED_CONSTRUCTORS) and expr.args:
        shape = expr.args[0].value
        if isinstance(shape, (cst.Tuple, cst.List)):
            return len(shape.elements) or None
        return 1 if kinds and kinds[0] == INT else None
    if callee in (np.copy, np.zeros_like, np.ones_like, np.full_like, np.empty_like) and kinds:
        return same_rank(kinds[0])
    if callee is np.take and len(args) == 2 and not keywords:  # (flattened: the indices' shape)
        if kinds[1] == INT:
            return SCALAR
        if args[1].items == INT or (isinstance(kinds[1], int) and kinds[1] != INT):
            return 1 if args[1].items == INT else kinds[1]
        return None
    pieces = args[0].items if args else None
    if callee is np.concatenate and "axis" not in keywords:
        return pieces if pieces == ARRAY or (isinstance(pieces, int) and pieces >= 1) else None
    if callee is np.hstack and len(args) == 1:
        if pieces in NUMBERS:
            return 1
        if pieces == ARRAY:  # (pieces whose rank the arguments decide: so does the result's)
            return ARRAY
        return pieces if isinstance(pieces, int) and pieces >= 1 else None
    if is_in(callee, STACKED) and len(args) == 1 and isinstance(pieces, int) and pieces >= 1:
        return _stacked_rank(callee, pieces, keywords)
    if callee is np.array and len(args) == 1 and not keywords:
        if pieces in NUMBERS:
            return 1
        if pieces == ANY:  # numbers or arrays, as the arguments turn out: an array
            return ARRAY
        return pieces + 1 if isinstance(pieces, int) else None
    return None


def is_integer_operator(operator) -> bool:
    """``+ - * // %`` (and their augmented forms) keep integers integers."""
    name = type(operator).__name__.removesuffix("Assign")
    return name in ("Add", "Subtract", "Multiply", "FloorDivide", "Modulo")


def view_kind(method: str, kind) -> object:
    """The kind of ``x.method()`` for a method giving a view of ``x``."""
    if method == "ravel":
        return 1
    if method in ("transpose", "conj", "conjugate", "view") and isinstance(kind, int):
        return kind
    return None


def method_kind(method: str, kind, args: list) -> object:
    """The kind of ``x.method(...)`` for a method giving a new value."""
    if method in ("sum", "mean", "prod", "max", "min", "var", "std", "ptp", "item") and not args:
        return SCALAR
    if method in ("argmax", "argmin", "count", "index", "__len__") and not args:
        return INT
    if method in ("any", "all", "__contains__"):
        return SCALAR if not args or method == "__contains__" else None
    if method in ("cumsum", "cumprod", "flatten") and not args:
        return 1
    if method == "dot" and len(args) == 1:
        return product_kind(kind, args[0].kind)
    if method in ("copy", "astype", "clip", "round"):
        # a new value of the same kind: a number's stays a number (np.float64(x).copy()), an
        # argument's is a number or an array as the argument turns out (ANY, ARRAY)
        return kind if isinstance(kind, int) or kind in IMMUTABLE or kind == ARRAY else None
    return None


def is_user_callee(value) -> bool:
    """A user's function, transformed in turn where it is called (`calls`); not library code
    (`transforms/library.py`) nor a ``@sg.custom_gradient`` function."""
    return is_user_function(value) and not hasattr(value, "__sg_custom_gradient__")


def user_callees(tree: ast.Module | None, free) -> list:
    """The user functions a function calls by a free name (``g(...)``, ``module.g(...)``)."""
    found = []
    for node in ast.walk(tree) if tree is not None else ():
        if type(node) is not ast.Call:
            continue
        parts, func = [], node.func
        while type(func) is ast.Attribute:
            parts.append(func.attr)
            func = func.value
        if type(func) is not ast.Name or func.id not in free:
            continue
        value = free[func.id]
        for part in reversed(parts):
            value = getattr(value, part, None)
        value = as_callee(value)  # self.predict(x): predict with self fixed
        if is_user_callee(value):
            found.append(value)
    return found


def call_kinds(callee, params, expr: cst.Call, args: list) -> dict:
    """The kind of each of `callee`'s parameters in the call `expr`, given what is known of
    the `args` (its default's kind, when the call leaves it out; behind ``*(a, b)`` and
    ``**{"k": v}`` literals, the kind their items share; not known behind ``*a``)."""
    literal = (cst.Tuple, cst.List, cst.Dict)
    if any(arg.star and not isinstance(arg.value, literal) for arg in expr.args):
        return dict.fromkeys(params)
    code = callee.__code__
    positional, kinds = [], {}
    for arg, refs in zip(expr.args, args, strict=True):
        if arg.star == "*":  # (normal form passes a literal's elements one by one)
            positional += [refs.items] * len(arg.value.elements)
        elif arg.star == "**":
            for element in arg.value.elements:
                key = getattr(element, "key", None)
                if not isinstance(key, cst.SimpleString):
                    return dict.fromkeys(params)
                kinds[key.evaluated_value] = refs.items
        elif arg.keyword is None:
            positional.append(refs.kind)
        else:
            kinds[arg.keyword.value] = refs.kind
    kinds = {**dict(zip(params[: code.co_argcount], positional, strict=False)), **kinds}
    defaults = dict(callee.__kwdefaults__ or {})
    given = callee.__defaults__ or ()
    with_defaults = params[code.co_argcount - len(given) : code.co_argcount]
    defaults.update(zip(with_defaults, given, strict=True))
    for param in params:
        if param not in kinds:
            kinds[param] = kind_of_value(defaults[param]) if param in defaults else None
    return kinds
