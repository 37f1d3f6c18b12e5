"""Pass 4, normalize: lambdas and dict views inside the function, the part of `anf._Normalizer`
that gives each a form the later passes know.

- ``d.get(k, default)`` on a local dict is ``d[k] if k in d else default``;
- ``d.keys()`` on a local dict is ``keys_of(d)`` (a list of the keys, a constant of the
  derivative: `runtime/iteration.py`), ``d.values()`` is ``[d[k] for k in keys_of(d)]`` and
  ``d.items()`` is ``[(k, d[k]) for k in keys_of(d)]``: loops and comprehensions over them are
  loops over lists, and each value is an item read the rules differentiate;
- a ``with warnings.catch_warnings():`` is replaced by its body (`parse`), so the
  ``warnings.simplefilter(...)`` calls in it, which configure that context and would change the
  process's filters without it, are dropped (`configures_warnings`);

- ``map(fn, xs)`` is the list comprehension ``[fn(x) for x in xs]`` (a lambda's body written
  in place: ``map(lambda w: np.sum(w**2), ws)`` is ``[np.sum(w**2) for w in ws]``), so it is
  differentiated like one;
- ``sq = lambda t: t * t`` defines a nested function (inlined where it is called, like a
  ``def`` inside the function);
- any other lambda is a value that carries no derivative, kept as written with its free names
  read at the versions they have where it stands (``sorted(idx, key=lambda i: x[i])``: the key
  orders, it is not differentiated). Passing one to a primitive that has a derivative
  (``max(a, b, key=...)``) is refused: its rule would not see what the lambda does.
"""

from __future__ import annotations

import warnings

import libcst as cst
from s2sgrad.runtime import registry

from .blocks import is_builtin_call
from .walk import read_names, substitute_names


def lambda_parameters(node: cst.Lambda) -> list[str]:
    params = node.params
    listed = (*params.posonly_params, *params.params, *params.kwonly_params)
    names = [p.name.value for p in listed]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            names.append(star.name.value)
    return names


def _plain(node: cst.Lambda) -> bool:
    params = node.params
    return (
        not params.posonly_params
        and not params.kwonly_params
        and not isinstance(params.star_arg, cst.Param)
        and params.star_kwarg is None
        and all(p.default is None for p in params.params)
    )


class LambdaNormalizing:
    """The lambda forms of `anf._Normalizer` (a mixin: it uses ``self.parsed``,
    ``self.resolution``, ``self.namer``, ``self.nested``, ``self.current`` and the methods
    ``comprehension`` and ``name``)."""

    def mapped(self, call: cst.Call) -> cst.Name:
        """``map(fn, xs)`` as ``[fn(x) for x in xs]`` (see the module docstring)."""
        args = call.args
        if len(args) != 2 or any(a.keyword is not None or a.star for a in args):
            raise self.parsed.error(
                call,
                "map over several sequences is not supported: write a comprehension, "
                "[f(a, b) for a, b in zip(xs, ys)]",
            )
        fn, sequence = args[0].value, args[1].value
        if isinstance(fn, cst.Lambda):
            names = lambda_parameters(fn)
            if not _plain(fn) or len(names) != 1:
                raise self.parsed.error(fn, "map needs a lambda of one plain parameter here")
            target, element = cst.Name(names[0]), fn.body
        else:
            target = cst.Name(self.namer.fresh("_item"))
            element = cst.Call(fn, (cst.Arg(target),))
        comprehension = cst.ListComp(elt=element, for_in=cst.CompFor(target=target, iter=sequence))
        return self.comprehension(comprehension)

    def lambda_definition(self, name: str, node: cst.Lambda, origin: cst.CSTNode) -> None:
        """``name = lambda ...``: a nested function, inlined where it is called."""
        if not _plain(node):
            raise self.parsed.error(node, "a lambda defining a function needs plain parameters")
        returned = cst.SimpleStatementLine((cst.Return(node.body),))
        definition = cst.FunctionDef(
            name=cst.Name(name), params=node.params, body=cst.IndentedBlock((returned,))
        )
        self.nested[name] = (definition, dict(self.current))

    def lambda_value(self, node: cst.Lambda) -> cst.Lambda:
        """A lambda kept as a value: its free names renamed to their current versions."""
        own = set(lambda_parameters(node))
        mapping = {
            n: self.name(cst.Name(n))
            for n in dict.fromkeys(read_names(node.body, []))
            if n not in own and (n in self.current or n in self.resolution.free)
        }
        return substitute_names(node, mapping).with_changes(lpar=(), rpar=())

    def refuse_lambda_arguments(self, call: cst.Call, callee: object) -> None:
        """A lambda given to a primitive with a derivative: its rule cannot follow it."""
        lambdas = [a for a in call.args if isinstance(a.value, cst.Lambda)]
        if not lambdas:
            return
        try:
            rule = registry.lookup(callee)
        except TypeError:
            rule = None
        if rule is not None and rule.differentiable:
            raise self.parsed.error(
                lambdas[0],
                f"a lambda passed to {rule.name} is not differentiated: compute what it "
                f"selects first (for example with a comprehension or np.argmax), then call "
                f"{rule.name} on that",
            )

    def dict_view_call(self, call: cst.Call) -> bool:
        """``d.keys()``, ``d.values()`` or ``d.items()`` on a local ``d``."""
        func = call.func
        return (
            isinstance(func, cst.Attribute)
            and func.attr.value in ("keys", "values", "items")
            and not call.args
            and isinstance(func.value, cst.Name)
            and self.resolution.is_local(func.value.value)
        )

    def dict_view(self, call: cst.Call) -> cst.BaseExpression | None:
        """The normal form of a `dict_view_call` (see the module docstring), or None for any
        other call."""
        if not self.dict_view_call(call):
            return None
        func = call.func
        keys = cst.Call(cst.Name("keys_of"), (cst.Arg(self.atom(func.value)),))
        if func.attr.value == "keys":
            return keys
        keys = self.atom_of(keys)
        self.current[keys.value] = keys.value  # (read by the comprehension below by its name)
        key = cst.Name(self.namer.fresh("_key"))
        read = cst.Subscript(func.value, (cst.SubscriptElement(cst.Index(key)),))
        element = read
        if func.attr.value == "items":
            element = cst.Tuple((cst.Element(key), cst.Element(read)))
        return self.comprehension(
            cst.ListComp(elt=element, for_in=cst.CompFor(target=key, iter=keys))
        )

    def dict_get(self, call: cst.Call) -> cst.BaseExpression | None:
        """``d.get(k, default)`` on a local ``d`` as ``d[k] if k in d else default`` (after a
        check that ``d`` is a dict): the read by key is differentiated as any other; None
        for any other call."""
        func = call.func
        if not (
            isinstance(func, cst.Attribute)
            and func.attr.value == "get"
            and isinstance(func.value, cst.Name)
            and self.resolution.is_local(func.value.value)
        ):
            return None
        args = call.args
        if not 1 <= len(args) <= 2 or any(a.keyword is not None or a.star for a in args):
            raise self.parsed.error(call, "d.get takes a key and a default here: d.get(k, 0.0)")
        key = args[0].value
        if not isinstance(key, (cst.Name, cst.SimpleString, cst.Integer)):
            raise self.parsed.error(key, "d.get needs a name or a literal as its key here")
        mapping = self.atom(func.value)
        self.emit(cst.Expr(cst.Call(cst.Name("check_mapping"), (cst.Arg(mapping),))))
        default = args[1].value if len(args) == 2 else cst.Name("None")
        test = cst.Comparison(key, (cst.ComparisonTarget(cst.In(), func.value),))
        read = cst.Subscript(func.value, (cst.SubscriptElement(cst.Index(key)),))
        return self.flat(cst.IfExp(test=test, body=read, orelse=default))

    def configures_warnings(self, statement: cst.Expr) -> bool:
        """``warnings.simplefilter(...)`` or ``warnings.filterwarnings(...)`` as a statement."""
        call = statement.value
        if not isinstance(call, cst.Call):
            return False
        found, value = self.resolution.value_of(call.func)
        return found and value in (warnings.simplefilter, warnings.filterwarnings)

    def is_map(self, call: cst.Call) -> bool:
        return is_builtin_call(call, "map", self.resolution)
