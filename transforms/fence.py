"""Pass 2, fence: reject every construct the compiler does not handle, up front, in one place.

Output: the `ParsedFunction` unchanged, or a `TransformError` naming the construct at the
user's line and column. Later passes may assume the body holds only: ``if``/``elif``/``else``,
assignments to names and tuples of names, augmented assignments, annotated assignments,
``return``, ``raise``, ``pass``, ``assert``, expression statements (calls such as ``print``)
and docstrings, built from expressions without ``await``, ``yield`` or walrus assignments
(lambdas: see `anf_lambdas`).
"""

from __future__ import annotations

import libcst as cst

from .parse import ParsedFunction
from .walk import visit

# Constructs a differentiable function may never contain.
_NEVER: dict[type[cst.CSTNode], str] = {
    cst.Try: "try/except",
    cst.TryStar: "try/except*",
    cst.With: "with ... as",
    cst.Yield: "yield",
    cst.Await: "await",
    cst.ClassDef: "class definition",
    cst.Global: "global statement",
    cst.Nonlocal: "nonlocal statement",
    cst.Del: "del",
    cst.NamedExpr: "assignment expression (:=)",
    cst.Import: "import inside the function",
    cst.ImportFrom: "import inside the function",
    cst.Match: "match statement",
}


class _Fence(cst.CSTVisitor):
    def __init__(self, parsed: ParsedFunction):
        self.parsed = parsed
        self.starred_targets: set[int] = set()  # ``first, *rest = xs``: allowed there only

    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = type(node)
        if kind is cst.With:
            raise self.parsed.error(
                node,
                "with ... as is not supported by s2sgrad: only context managers that carry no "
                "derivative (np.errstate, np.printoptions, warnings.catch_warnings), without "
                "`as`, pass through",
            )
        if kind in _NEVER:
            raise self.parsed.error(node, f"{_NEVER[kind]} is not supported by s2sgrad")
        check = getattr(self, f"check_{kind.__name__}", None)
        if check is not None:
            check(node)
        return True

    def check_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if _is_item(target.target):
                continue  # y[i] = value, y[i] = z = value
            self._check_target(target.target)

    def check_AugAssign(self, node: cst.AugAssign) -> None:
        if _is_item(node.target):
            return  # y[i] += value
        self._check_target(node.target, allow_tuple=False)

    def check_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is None:
            raise self.parsed.error(node, "an annotation without a value is not supported")
        self._check_target(node.target, allow_tuple=False)

    def _check_target(self, target: cst.BaseExpression, allow_tuple: bool = True) -> None:
        if isinstance(target, cst.Name):
            return
        if allow_tuple and isinstance(target, (cst.Tuple, cst.List)):
            stars = [e for e in target.elements if isinstance(e, cst.StarredElement)]
            for element in stars:
                if not isinstance(element.value, cst.Name):
                    raise self.parsed.error(element, "a starred target must be a name (*rest)")
                self.starred_targets.add(id(element))
            for element in target.elements:
                if element in stars:
                    continue
                if _is_item(element.value):
                    continue  # h[i], c[i] = cell(...)
                self._check_target(element.value)
            return
        if isinstance(target, cst.Subscript):
            raise self.parsed.error(target, "item assignment here is not supported yet")
        if isinstance(target, cst.Attribute):
            raise self.parsed.error(target, "attribute assignment is not supported by s2sgrad")
        raise self.parsed.error(target, f"assignment to {type(target).__name__} is not supported")

    def check_FunctionDef(self, node: cst.FunctionDef) -> None:
        if isinstance(node.asynchronous, cst.Asynchronous):
            raise self.parsed.error(node, "async function is not supported by s2sgrad")
        params = node.params
        plain = (
            not node.decorators
            and not params.posonly_params
            and not params.kwonly_params
            and not isinstance(params.star_arg, cst.Param)
            and params.star_kwarg is None
            and all(p.default is None for p in params.params)
        )
        if not plain:
            raise self.parsed.error(
                node, "a nested function needs plain parameters and no decorators"
            )

    def check_For(self, node: cst.For) -> None:
        if isinstance(node.target, (cst.Tuple, cst.List)):
            self._check_target(node.target)

    def check_List(self, node: cst.List) -> None:
        for element in node.elements:  # [a, *xs]: a join of lists (`anf_containers`)
            if isinstance(element, cst.StarredElement):
                self.starred_targets.add(id(element))

    def check_StarredElement(self, node: cst.StarredElement) -> None:
        if id(node) not in self.starred_targets:
            raise self.parsed.error(
                node,
                "starred expression is not supported here (it is in a list literal, "
                "[a, *xs], in an assignment target and in a call)",
            )


def _is_item(target: cst.BaseExpression) -> bool:
    return isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name)


def fence(parsed: ParsedFunction) -> ParsedFunction:
    """Raise `TransformError` at the first unsupported construct of `parsed`."""
    funcdef = parsed.funcdef
    if isinstance(funcdef.asynchronous, cst.Asynchronous):
        raise parsed.error(funcdef, "async function is not supported by s2sgrad")
    params = funcdef.params  # (*args is a tuple parameter, **kwargs a dict one)
    visitor = _Fence(parsed)
    visit(funcdef.body, visitor)
    for param in (*params.params, *params.posonly_params, *params.kwonly_params):
        if param.default is not None:
            visit(param.default, visitor)
    return parsed
