"""Pass 4, normalize: containers built inside the function, the part of `anf._Normalizer`
that writes each in forms the later passes differentiate (comprehensions and starred targets
as the loops that build them).

- ``[e for v in seq if c]`` (or a generator expression) is ``items = []; for v in seq: if c:
  items.append(e)``; several ``for`` clauses are nested loops, each ``if`` guarding what
  follows it, in Python's order;
- ``{k: e for ...}`` is the same loop writing ``items[k] = e`` into an empty dict (dict slots
  written in loops are differentiated like list slots);
- ``{e for ...}`` is ``set([e for ...])``: a set has no order to give its elements a derivative
  by, so ``set`` is what it is elsewhere (a constant of integers or strings; refused when it
  would hold a differentiated value);
- ``list(xs)`` is ``[v for v in xs]`` (the loop Python runs: a list's items, an array's rows,
  a zip's tuples);
- ``zip(*rows)`` is ``[[row[j] for row in rows] for j in starred_positions(rows[0], 0, 0)]``
  (its columns, as lists);
- ``f(*args)`` passes ``args[0], args[1], ...``: a literal's elements as they are, another
  value's items for the parameters of the user's `f` left to fill (after Python's check of
  its length), and ``f(**{"k": v})`` passes ``k=v``;
- ``[a, *xs, b]`` is the join ``[a] + [v for v in xs] + [b]`` of lists built here;
- ``first, *rest, last = xs`` reads ``xs[0]`` and ``xs[-1]`` and makes ``rest`` the list
  ``[xs[k] for k in starred_positions(xs, 1, 1)]`` (`runtime/iteration.py`), after Python's
  check of the length: the items of a list, a tuple's, or an array's rows, each an item read
  the rules differentiate.
"""

from __future__ import annotations

import dataclasses
import inspect

import libcst as cst

from .blocks import is_builtin_call, names_in_target
from .walk import substitute_names

_POSITIONAL = inspect.Parameter.POSITIONAL_OR_KEYWORD
_POSITIONAL_KINDS = (inspect.Parameter.POSITIONAL_ONLY, _POSITIONAL)
_LISTS = (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp)


def _init_fields(cls) -> list[str] | None:
    """The fields a NamedTuple or dataclass class takes in its constructor, in order; None
    for anything else."""
    if not isinstance(cls, type):
        return None
    if issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple):
        return list(cls._fields)
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls) if f.init]
    return None


def _index(value: cst.BaseExpression, index: cst.BaseExpression) -> cst.Subscript:
    return cst.Subscript(value, (cst.SubscriptElement(cst.Index(index)),))


def _integer(k: int) -> cst.BaseExpression:
    if k < 0:
        return cst.UnaryOperation(cst.Minus(), cst.Integer(str(-k)))
    return cst.Integer(str(k))


class ContainerNormalizing:
    """The container forms of `anf._Normalizer` (a mixin: it uses ``self.parsed``,
    ``self.namer``, ``self.current`` and the methods ``assign``, ``atom``, ``atom_of``,
    ``emit``, ``for_statement``, ``assign_atom`` and ``origin``)."""

    def comprehension(self, expr) -> cst.Name:
        """A list, generator, dict or set comprehension as the loop that builds it (see the
        module docstring), its variables renamed apart from the function's."""
        clauses = []
        clause = expr.for_in
        while clause is not None:
            if isinstance(clause.asynchronous, cst.Asynchronous):
                raise self.parsed.error(expr, "async comprehensions are not supported")
            clauses.append(clause)
            clause = clause.inner_for_in
        renames: dict[str, cst.Name] = {}
        targets, iters = [], []
        for clause in clauses:
            # a clause's sequence reads the variables of the clauses before it, not its own
            iters.append(substitute_names(clause.iter, renames) if renames else clause.iter)
            for name in names_in_target(clause.target):
                renames[name] = cst.Name(self.namer.fresh(f"_{name}"))
            targets.append(substitute_names(clause.target, renames))
        items = cst.Name(self.namer.fresh("_items"))
        is_dict = isinstance(expr, cst.DictComp)
        self.assign([items], cst.Dict(()) if is_dict else cst.List(()), origin_node=expr)
        if is_dict:
            slot = _index(items, substitute_names(expr.key, renames))
            store: cst.BaseSmallStatement = cst.Assign(
                (cst.AssignTarget(slot),), substitute_names(expr.value, renames)
            )
        else:
            append = cst.Attribute(items, cst.Name("append"))
            element = substitute_names(expr.elt, renames)
            store = cst.Expr(cst.Call(append, (cst.Arg(element),)))
        body: cst.BaseStatement = cst.SimpleStatementLine((store,))
        for clause, target, sequence in reversed(list(zip(clauses, targets, iters, strict=True))):
            for condition in reversed(clause.ifs):
                test = substitute_names(condition.test, renames)
                body = cst.If(test=test, body=cst.IndentedBlock((body,)))
            body = cst.For(target=target, iter=sequence, body=cst.IndentedBlock((body,)))
        self.for_statement(body)
        built = cst.Name(self.current[items.value])
        if isinstance(expr, cst.SetComp):
            return self.atom_of(cst.Call(cst.Name("set"), (cst.Arg(built),)))
        return built

    def joined(self, literal: cst.List) -> cst.BaseExpression:
        """``[a, *xs, b]`` as the join of lists it is (see the module docstring)."""
        parts: list[cst.BaseExpression] = []
        run: list[cst.Element] = []
        for element in literal.elements:
            if not isinstance(element, cst.StarredElement):
                run.append(cst.Element(element.value))
                continue
            if run:
                parts.append(cst.List(tuple(run)))
                run = []
            item = cst.Name(self.namer.fresh("item"))
            loop = cst.CompFor(target=item, iter=element.value)
            parts.append(cst.ListComp(elt=item, for_in=loop))
        if run:
            parts.append(cst.List(tuple(run)))
        joined = parts[0]
        for part in parts[1:]:
            joined = cst.BinaryOperation(joined, cst.Add(), part)
        return joined

    def listed(self, call: cst.Call) -> cst.Name | None:
        """``list(xs)`` as the comprehension ``[v for v in xs]``, or None for any other call
        (and for ``list()``, and a list of a literal or a comprehension: already a list)."""
        if not is_builtin_call(call, "list", self.resolution) or len(call.args) != 1:
            return None
        (arg,) = call.args
        if arg.keyword is not None or arg.star or isinstance(arg.value, _LISTS):
            return None
        item = cst.Name(self.namer.fresh("item"))
        return self.comprehension(
            cst.ListComp(elt=item, for_in=cst.CompFor(target=item, iter=arg.value))
        )

    def keyword_dict(self, call: cst.Call) -> cst.BaseExpression | None:
        """``dict(a=u, b=v)`` as the literal ``{"a": u, "b": v}`` (and ``dict()`` as ``{}``),
        or None for any other call."""
        if not is_builtin_call(call, "dict", self.resolution):
            return None
        if any(arg.keyword is None or arg.star for arg in call.args):
            return None
        elements = tuple(
            cst.DictElement(cst.SimpleString(repr(arg.keyword.value)), arg.value)
            for arg in call.args
        )
        return self.atom(cst.Dict(elements))

    def transposed(self, call: cst.Call) -> cst.Name | None:
        """``zip(*rows)`` as the comprehension of its columns, or None for any other call."""
        if not is_builtin_call(call, "zip", self.resolution):
            return None
        positional = [a for a in call.args if a.keyword is None]  # (and strict=...)
        if len(positional) != 1 or positional[0].star != "*":
            return None
        (arg,) = positional
        rows = self.atom(arg.value)
        if not isinstance(rows, cst.Name):
            rows = self.atom_of(rows)
        self.current.setdefault(rows.value, rows.value)  # (read by the loop by its name)
        first = _index(rows, cst.Integer("0"))
        zero = cst.Arg(cst.Integer("0"))
        positions = self.atom_of(
            cst.Call(cst.Name("starred_positions"), (cst.Arg(first), zero, zero))
        )
        self.current[positions.value] = positions.value
        column, row = cst.Name(self.namer.fresh("j")), cst.Name(self.namer.fresh("row"))
        items = cst.ListComp(elt=_index(row, column), for_in=cst.CompFor(target=row, iter=rows))
        return self.comprehension(
            cst.ListComp(elt=items, for_in=cst.CompFor(target=column, iter=positions))
        )

    def spread(self, call: cst.Call) -> cst.Call:
        """`call` with its ``*args`` and ``**kwargs`` written out as arguments one by one
        (see the module docstring)."""
        if not any(a.star for a in call.args):
            return call
        args: list[cst.Arg] = []
        for k, arg in enumerate(call.args):
            if arg.star == "**":
                args.extend(self._spread_keywords(arg))
            elif arg.star == "*" and isinstance(arg.value, (cst.Tuple, cst.List)):
                args.extend(cst.Arg(e.value) for e in arg.value.elements)
            elif arg.star == "*":
                args.extend(self._spread_items(call, arg, call.args[:k], call.args[k + 1 :]))
            else:
                args.append(arg)
        return call.with_changes(args=tuple(args))

    def _spread_keywords(self, arg: cst.Arg) -> list[cst.Arg]:
        value = arg.value
        if not isinstance(value, cst.Dict) or not all(
            isinstance(e, cst.DictElement)
            and isinstance(e.key, cst.SimpleString)
            and e.key.evaluated_value.isidentifier()
            for e in value.elements
        ):
            raise self.parsed.error(
                arg, "**kwargs is passed on only from a dict literal here: pass key=value"
            )
        return [cst.Arg(e.value, keyword=cst.Name(e.key.evaluated_value)) for e in value.elements]

    def _spread_items(self, call, arg: cst.Arg, before, after) -> list[cst.Arg]:
        """``f(a, *args)``: the items of a tuple built in the function (its length is its
        literal's), or for a user's `f` the items of `args` for the parameters the other
        arguments leave, after Python's check that there are as many."""
        items = self.atom(arg.value)
        known = self.tuple_items.get(items.value) if isinstance(items, cst.Name) else None
        if known is not None:
            return [cst.Arg(_index(items, cst.Integer(str(k)))) for k in range(len(known))]
        parameters = self._positional_parameters(call.func)
        if parameters is None or any(a.star for a in (*before, *after)):
            raise self.parsed.error(
                arg,
                "argument unpacking (*) of a value is supported for a tuple built in the "
                "function, or in a call of your own function without *args (its length is "
                "then its parameters'): pass the items one by one",
            )
        named = {a.keyword.value for a in (*before, *after) if a.keyword is not None}
        given = sum(a.keyword is None for a in (*before, *after))
        left = [p for p in parameters[given:] if p.name not in named]
        if any(p.default is not inspect.Parameter.empty for p in left):
            raise self.parsed.error(
                arg,
                "argument unpacking (*) for parameters with defaults is ambiguous here: "
                "pass the items one by one, or name them",
            )
        count = cst.Arg(cst.Integer(str(len(left))))
        self.emit(cst.Expr(cst.Call(cst.Name("check_unpack"), (cst.Arg(items), count))))
        return [cst.Arg(_index(items, cst.Integer(str(k)))) for k in range(len(left))]

    def _positional_parameters(self, func) -> list[inspect.Parameter] | None:
        """The parameters `func` takes by position, if it is a function of the user's whose
        parameters are all known (no ``*args``)."""
        if isinstance(func, cst.Name) and func.value in self.nested:
            node = self.nested[func.value][0]
            return [inspect.Parameter(p.name.value, _POSITIONAL) for p in node.params.params]
        from .operations import _is_user_function

        found, value = self.resolution.value_of(func)
        if not found or not _is_user_function(value):
            return None
        try:
            signature = inspect.signature(value)
        except (TypeError, ValueError):
            return None
        kinds = [p.kind for p in signature.parameters.values()]
        if inspect.Parameter.VAR_POSITIONAL in kinds:
            return None
        return [p for p in signature.parameters.values() if p.kind in _POSITIONAL_KINDS]

    def check_record(self, call: cst.Call) -> None:
        """A NamedTuple or dataclass built with arguments its fields take (derivative code
        keys them by field: `operations._record_pack`), else a TransformError here."""
        found, cls = self.resolution.value_of(call.func)
        names = _init_fields(cls) if found else None
        if names is None or any(a.star for a in call.args):
            return
        positional = [a for a in call.args if a.keyword is None]
        keywords = [a.keyword.value for a in call.args if a.keyword is not None]
        if len(positional) > len(names) or set(keywords) - set(names[len(positional) :]):
            fields = ", ".join(names)
            raise self.parsed.error(
                call, f"these arguments do not match the fields of {cls.__name__} ({fields})"
            )

    def unpack_starred(self, target, value, normal: bool) -> None:
        """``a, *rest, b = value`` (see the module docstring)."""
        elements = [element.value for element in target.elements]
        star = next(k for k, e in enumerate(target.elements) if isinstance(e, cst.StarredElement))
        after = len(elements) - star - 1
        source = value if normal else self.atom(value)
        if not isinstance(source, cst.Name):  # a literal: named, so the loop below reads it
            source = self.atom_of(source)
        self.current.setdefault(source.value, source.value)  # (read by the loop by its name)
        count = cst.Integer(str(len(elements) - 1))
        tight = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
        starred = cst.Arg(cst.Name("True"), keyword=cst.Name("starred"), equal=tight)
        check = cst.Call(cst.Name("check_unpack"), (cst.Arg(source), cst.Arg(count), starred))
        self.emit(cst.Expr(check))
        reads = [
            self.atom_of(_index(source, _integer(k if k < star else k - len(elements))))
            for k in range(len(elements))
            if k != star
        ]
        position = cst.Name(self.namer.fresh("k"))
        positions = self.atom_of(
            cst.Call(
                cst.Name("starred_positions"),
                (cst.Arg(source), cst.Arg(_integer(star)), cst.Arg(_integer(after))),
            )
        )
        self.current[positions.value] = positions.value  # (read by the loop by its name)
        rest = self.comprehension(
            cst.ListComp(
                elt=_index(source, position), for_in=cst.CompFor(target=position, iter=positions)
            )
        )
        reads.insert(star, rest)
        for element, read in zip(elements, reads, strict=True):
            self.assign_atom(element, read, value)
