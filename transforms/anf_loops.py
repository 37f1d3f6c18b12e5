"""Pass 4, normalize: loops (``for`` over ranges, sequences, ``enumerate``, ``zip``,
``reversed``; ``while``; ``break``/``continue``), the part of `anf._Normalizer` that turns
them into index loops whose body is in single-assignment form (see `anf`'s docstring)."""

from __future__ import annotations

import typing

import libcst as cst
from s2sgrad.runtime import registry

from .blocks import (
    AssignedNames,
    comment_lines,
    contains_jump,
    copy_line,
    indented,
    is_builtin_call,
    names_in_target,
    target_names,
)
from .operations import evaluate_spelling
from .walk import visit


class Counter(typing.NamedTuple):
    """The counter of ``enumerate(xs, start)``, read as the loop's index plus `start`."""

    start: cst.BaseExpression


# builtins giving a list, a tuple or a range (map: see `anf_lambdas`)
_LISTING = ("sorted", "list", "tuple", "map", "range")
END_OF_ITERATION = object()  # marks where a loop body's paths end (see _Normalizer.block)


class LoopNormalizing:
    """The loop statements of `anf._Normalizer` (a mixin: it uses the normalizer's state,
    ``self.current``, ``self.lines``, ``self.loops``..., and its methods ``block``,
    ``assign``, ``atom``, ``define``)."""

    def leave_loop(self, node: cst.Break) -> None:
        """``break``: count the iteration, copy values to the loop's header names (what
        follows the loop reads), then leave."""
        if not self.loops:
            raise self.parsed.error(node, "break outside a loop")
        self.end_iteration(leaving=True)
        self.emit(cst.Break())

    def end_iteration(self, leaving: bool = False) -> None:
        """What ends every path through a loop body: count the iteration, recompute a while
        loop's condition (unless `leaving`), copy values back to the header names."""
        headers, counter, condition = self.loops[-1]
        if counter is not None:
            one_more = cst.BinaryOperation(cst.Name(counter), cst.Add(), cst.Integer("1"))
            self.assign([cst.Name(counter)], one_more)
        if condition is not None and not leaving:
            name, test = condition
            self.assign([cst.Name(name)], test, origin_node=test)
        for name, header in headers.items():
            version = self.current.get(name)
            if version is not None and version != header:
                self.lines.append(copy_line(header, version))

    def for_statement(self, node: cst.For) -> None:
        """``for i in range(...)``: every name the body assigns gets one *header* name, the
        value at the start of an iteration (its version before the loop, or the name itself);
        the body is in single-assignment form and ends with copies back to the header names."""
        if node.orelse is not None:
            raise self.parsed.error(node.orelse, "for ... else is not supported")
        if isinstance(node.asynchronous, cst.Asynchronous):
            raise self.parsed.error(node, "async for is not supported by s2sgrad")
        iterable, index_name, prologue = self.iteration(node)
        loop_line, comment = self.source_line, self.comment
        counter = None
        if contains_jump(
            list(node.body.body), (cst.Break, cst.Return)
        ):  # it may stop early  # the adjoint needs the number of iterations
            counter = self.namer.fresh("_trips")
            self.assign([cst.Name(counter)], cst.Integer("0"), origin_node=node)
        self.comment = None
        collector = AssignedNames()
        visit(node.body, collector)
        assigned = [n for n in collector.names if n != index_name]
        # the names the loop itself binds keep their old value (or None) after no iteration
        bound = [index_name] if not prologue else []
        bound += [n for name, _ in prologue for n in names_in_target(name)]
        assigned += [n for n in bound if n not in assigned]
        names = [*assigned, counter] if counter is not None else assigned
        names += self.returning(node)
        headers = self.loop_headers_for(names, loop_line, bound)
        target = self.define(index_name)
        self.line_of[target] = loop_line
        self.loop_headers[target] = tuple(headers.values())
        if counter is not None:
            self.loop_counts[target] = headers[counter]

        def read_elements() -> None:  # the elements this iteration reads
            self.current[index_name] = target  # (not its header)
            for bound, sequence in prologue:
                if sequence is None:
                    element = cst.Name(target)  # enumerate's counter is the index itself
                elif isinstance(sequence, Counter):
                    element = cst.BinaryOperation(cst.Name(target), cst.Add(), sequence.start)
                elif isinstance(sequence, cst.Tuple):  # an item packed from its parts
                    element = self.rename(sequence)
                else:
                    index = cst.SubscriptElement(cst.Index(cst.Name(target)))
                    element = cst.Subscript(sequence, (index,))
                if not isinstance(bound, cst.Name):  # for a, (b, c) in ...: an item unpacked
                    self.unpack(bound, self.atom_of(element), normal=True)
                    continue
                new = self.define(bound.value)
                self.emit(cst.Assign((cst.AssignTarget(cst.Name(new)),), element), new)
                self.origins[new] = self.origin(node.target)

        loop = (headers, headers.get(counter) and counter, None)
        body = self.loop_body(loop, list(node.body.body), read_elements)
        self.source_line = loop_line
        leading = comment_lines(comment)
        self.lines.append(
            cst.For(
                target=cst.Name(target),
                iter=iterable,
                body=indented(body),
                leading_lines=leading,
            )
        )

    def returning(self, node) -> list[str]:
        """For a loop with a return in it: the result and the flag saying it returned, set
        before the loop so that they can be carried through it."""
        if not contains_jump(list(node.body.body), (cst.Return,)):
            return []
        if self.result not in self.current:
            self.assign([cst.Name(self.result)], cst.Name("None"), origin_node=node)
        self.assign([cst.Name(self.returned)], cst.Name("False"), origin_node=node)
        return [self.result, self.returned]

    def loop_body(self, loop: tuple, statements: list, prologue=None) -> list:
        """The normal form of a loop body: the body's names start as the header names, every
        path ends its iteration (see `end_iteration`), and the header names hold the values
        after the loop."""
        headers = loop[0]
        outer, self.lines = self.lines, []
        self.current.update(headers)
        self.loop_depth += 1
        self.depth += 1
        self.loops.append(loop)
        if prologue is not None:
            prologue()
        self.block([*statements, END_OF_ITERATION])
        self.loops.pop()
        self.depth -= 1
        self.loop_depth -= 1
        self.current.update(headers)
        body, self.lines = self.lines, outer
        return body

    def loop_headers_for(
        self, names: list[str], loop_line: int, bound: list[str] = ()
    ) -> dict[str, str]:
        """A new *header* name for each variable a loop assigns: its value at the start of an
        iteration. A variable defined before the loop is copied into its header first, one
        that is not starts as None; the loop never overwrites the version before it, which
        the adjoints of earlier statements may read. The names the loop statement `bound`
        (its target) keep the plain name inside the loop: their headers are new versions."""
        headers = {}
        for name in names:
            if name in self.current:
                header = self.namer.version(name)
                self.lines.append(copy_line(header, self.current[name]))
            elif name in bound:
                header = self.namer.version(name)
                self.lines.append(copy_line(header, "None"))
            else:  # first assigned in the loop: bound before it all the same, since a nested
                # loop's header copy reads it on the first iteration (an UnboundLocalError)
                header = self.define(name)
                self.lines.append(copy_line(header, "None"))
            self.defined.add(header)
            self.line_of[header] = loop_line
            headers[name] = header
        return headers

    def while_statement(self, node: cst.While) -> None:
        """``while test: body`` as ``c = test; while c: body; c = test`` with ``c`` and an
        iteration counter carried like any other value (header names, back-edge copies); the
        counter tells the adjoint how many iterations to run backwards."""
        if node.orelse is not None:
            raise self.parsed.error(node.orelse, "while ... else is not supported")
        loop_line, comment = self.source_line, self.comment
        condition, counter = self.namer.fresh("_running"), self.namer.fresh("_trips")
        self.assign([cst.Name(counter)], cst.Integer("0"), origin_node=node)
        self.assign([cst.Name(condition)], node.test, origin_node=node.test)
        self.comment = None
        collector = AssignedNames()
        visit(node.body, collector)
        names = [*collector.names, condition, counter, *self.returning(node)]
        headers = self.loop_headers_for(names, loop_line)
        self.loop_headers[headers[condition]] = tuple(headers.values())
        self.loop_counts[headers[condition]] = headers[counter]
        body = self.loop_body((headers, counter, (condition, node.test)), list(node.body.body))
        self.source_line = loop_line
        leading = comment_lines(comment)
        self.lines.append(
            cst.While(test=cst.Name(headers[condition]), body=indented(body), leading_lines=leading)
        )

    def iteration(self, node: cst.For):
        """How a loop iterates, as an index loop: the ``range`` to run over, the name of the
        index, and (name, sequence) pairs for the names each iteration reads from sequences
        (``for v in x`` reads ``v = x[i]``; ``enumerate`` and ``zip`` read several)."""
        target, source = node.target, node.iter
        if is_builtin_call(source, "range", self.resolution):
            if not isinstance(target, cst.Name):
                raise self.parsed.error(target, "a loop over range needs a plain name as target")
            return self.atom(source), target.value, []
        if self._gives_constants(source):
            # ``for i in backwards(r)`` (an adjoint loop), ``for k in np.argsort(x)``: the
            # items carry no derivative, so the loop runs over them as they are
            if not isinstance(target, cst.Name):
                raise self.parsed.error(target, "a loop over indices needs a plain name as target")
            return self.atom(source), target.value, []
        if is_builtin_call(source, "reversed", self.resolution) and len(source.args) == 1:
            # any other sequence read backwards, item by item (a range popped off a stack
            # by the adjoint of a nested loop, a list): ``v = s[i]`` for i = n-1, ..., 0
            sequence = self.atom(source.args[0].value)
            names = target_names(target, 1)
            if names is None:
                raise self.parsed.error(target, "this loop target does not match what it iterates")
            count = self.atom_of(cst.Call(cst.Name("len"), (cst.Arg(sequence),)))
            last = self.atom_of(cst.BinaryOperation(count, cst.Subtract(), cst.Integer("1")))
            minus_one = cst.UnaryOperation(cst.Minus(), cst.Integer("1"))
            backwards = (cst.Arg(last), cst.Arg(minus_one), cst.Arg(minus_one))
            iterable = self.atom_of(cst.Call(cst.Name("range"), backwards))
            return iterable, self.namer.fresh("_i"), [(names[0], sequence)]
        if is_builtin_call(source, "enumerate", self.resolution):
            if not 1 <= len(source.args) <= 2 or source.args[0].keyword is not None:
                raise self.parsed.error(source, "enumerate takes a sequence and a start")
            inner = source.args[0].value
            # enumerate's counter: the index itself, or the index plus the start
            counter = Counter(self.atom(source.args[1].value)) if len(source.args) > 1 else None
            if is_builtin_call(inner, "zip", self.resolution):
                # enumerate(zip(a, b)) with ``i, (x, y)``: the loop over a and b's indices
                target = self._enumerated_zip(target, inner)
                sequences = [counter, *(self.sequence_atom(a.value) for a in inner.args)]
            else:
                sequences = [counter, self.sequence_atom(inner)]
        elif is_builtin_call(source, "zip", self.resolution):
            columns = self.transposed(source)  # zip(*rows): a loop over the columns
            if columns is not None:
                sequences = [columns]
            else:  # (a star of a tuple whose items are known: written out)
                source = self.spread(source)
                sequences = [self.sequence_atom(a.value) for a in source.args if a.keyword is None]
        else:
            sequences = [self.sequence_atom(source)]
        names = target_names(target, len(sequences))
        packed = []
        if names is None and isinstance(target, cst.Name) and len(sequences) > 1:
            # for pair in zip(a, b): the items read as parts, then ``pair = (a_i, b_i)``
            names = [cst.Name(self.namer.fresh(f"_{target.value}")) for _ in sequences]
            packed = [(target, cst.Tuple(tuple(cst.Element(n) for n in names)))]
        if names is None:
            raise self.parsed.error(target, "this loop target does not match what it iterates")
        lengths = [
            self.atom_of(cst.Call(cst.Name("len"), (cst.Arg(seq),)))
            for seq in sequences
            if seq is not None and not isinstance(seq, Counter)
        ]
        count = lengths[0]
        if len(lengths) > 1:
            count = self.atom_of(cst.Call(cst.Name("min"), tuple(cst.Arg(n) for n in lengths)))
        iterable = self.atom_of(cst.Call(cst.Name("range"), (cst.Arg(count),)))
        index = self.namer.fresh("_i")
        return iterable, index, [*zip(names, sequences, strict=True), *packed]

    def _calls_a_builtin(self, call: cst.Call) -> bool:
        found, fn = self.resolution.value_of(call.func)
        return not found or getattr(fn, "__module__", None) == "builtins"

    def _enumerated_zip(self, target: cst.BaseExpression, zipped: cst.Call) -> cst.Tuple:
        """``i, (x, y)`` for ``enumerate(zip(a, b))`` as the flat target ``i, x, y`` (an item
        of the zip read whole, ``i, pair``, is not supported)."""
        count = len(zipped.args)
        if any(a.keyword is not None or a.star for a in zipped.args) or not (
            isinstance(target, (cst.Tuple, cst.List))
            and len(target.elements) == 2
            and isinstance(target.elements[1].value, (cst.Tuple, cst.List))
            and len(target.elements[1].value.elements) == count
        ):
            raise self.parsed.error(target, "enumerate(zip(...)) needs a target like i, (a, b)")
        inner = target.elements[1].value.elements
        return cst.Tuple((target.elements[0], *inner))

    def _gives_constants(self, source: cst.BaseExpression) -> bool:
        """`source` calls a primitive registered without derivative (the user's, or a
        runtime helper normal form calls: ``keys_of(d)``)."""
        if not isinstance(source, cst.Call):
            return False
        found, fn = self.resolution.value_of(source.func)
        if not found and isinstance(source.func, cst.Name):
            if self.resolution.is_local(source.func.value):
                return False
            found, fn = evaluate_spelling(source.func, {})
        if not found:
            return False
        rule = registry.lookup(fn)
        return rule is not None and not rule.differentiable

    def sequence_atom(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        """The sequence a loop indexes: a name, a list or tuple literal (``for t in [a, b]``),
        a dict view of a local (``d.items()``: a list, see `anf_lambdas`), a call of
        ``sorted``, ``list``, ``tuple`` or ``range``, or of a function giving an array
        (``zip(w, np.cos(w))``). Other builtins (``filter``, ``iter``, a ``zip`` inside a
        ``zip``) give iterators, which have no items to index."""
        if (
            isinstance(expr, cst.Call)
            and not self.dict_view_call(expr)
            and not any(is_builtin_call(expr, name, self.resolution) for name in _LISTING)
            and self._calls_a_builtin(expr)
        ):
            raise self.parsed.error(
                expr,
                "looping over the result of this call is not supported: loop over a list "
                "(list(...)), a range or an array",
            )
        return self.atom(expr)
