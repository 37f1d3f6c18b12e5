"""Python text of a lowered recording: one assignment per recorded operation (``t3 =
np.sin(t2)``), NumPy functions by their ``np.`` names, runtime primitives by theirs, anything
else through the namespace the text is compiled in. The compiler reads this text as it reads a
user's function; `sg.source(tape)` comments name its lines.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

import numpy as np

from s2sgrad import runtime
from s2sgrad.runtime import qualified_name

from .recorded_calls import Expression, _is_literal
from .tensor import Tensor, holds_tensor

if TYPE_CHECKING:
    from .lowering import Lowered

_INFIX = {
    operator.add: "+",
    operator.sub: "-",
    operator.mul: "*",
    operator.truediv: "/",
    operator.floordiv: "//",
    operator.mod: "%",
    operator.pow: "**",
    operator.matmul: "@",
}
_PREFIX = {operator.neg: "-", operator.pos: "+"}


class _Renderer:
    """Python text of a `Lowered` region's statements and names."""

    def __init__(self, low: Lowered):
        self.low = low
        self.namespace: dict[str, object] = {}

    def slot(self, slot: int) -> str:
        if slot >= 0:
            return f"t{slot}"
        return _arg_name(self.low, -1 - slot)

    def value(self, value, refs, consts, nested: bool = True, subscript: bool = False) -> str:
        """Mirrors `_pattern`: a Tensor's slot, a list of Tensors, or a static value (slices
        as ``1:3`` in a `subscript`, as ``slice(1, 3, None)`` elsewhere)."""
        if isinstance(value, Tensor):
            return self.slot(next(refs))
        cls = value.__class__
        if nested and (cls is list or cls is tuple) and holds_tensor(value):
            inner = ", ".join(self.value(a, refs, consts, True) for a in value)
            if cls is list:
                return f"[{inner}]"
            return f"({inner}{',' if len(value) == 1 else ''})"
        return self.static(value, consts, subscript)

    def static(self, value, consts, subscript: bool = False) -> str:
        if _is_literal(value):
            text = _literal_text(value, subscript)
            return f"({text})" if text.startswith("-") else text
        if isinstance(value, (np.ndarray, np.generic)):
            return self.slot(next(consts))
        if callable(value) or isinstance(value, (np.dtype, type)):
            return self.object_name(value)
        return self.slot(next(consts))

    def object_name(self, value) -> str:
        spelling = spell(value)
        if spelling is not None:
            return spelling
        name = getattr(value, "__name__", None)
        if name is not None and getattr(runtime, name, None) is value:
            self.namespace[name] = value  # a runtime primitive (relu) reads as its name
            return name
        name = f"_fn{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def statement(self, item) -> str:
        if item[0] == "seed":
            _, before, seed, after = item
            return f"t{after} = t{before} + {self.slot(seed)}"
        node, refs, consts, outs, is_tuple = item
        fn, args, kwargs = node[0], node[1], node[2]
        refs, consts = iter(refs), iter(consts)
        getitem = fn is operator.getitem
        parts = [self.value(a, refs, consts, True, getitem and i == 1) for i, a in enumerate(args)]
        if kwargs:
            parts += [f"{k}={self.value(v, refs, consts, False)}" for k, v in kwargs.items()]
        if fn in _INFIX:
            expr = f"{parts[0]} {_INFIX[fn]} {parts[1]}"
        elif fn in _PREFIX:
            expr = f"{_PREFIX[fn]}{parts[0]}"
        elif getitem:
            expr = f"{parts[0]}[{_index_text(args[1], parts[1])}]"
        elif fn.__class__ is Expression:
            expr = fn.text.format(*parts)
            self.namespace.update(fn.names)
        else:
            expr = f"{self.object_name(fn)}({', '.join(parts)})"
        names = [f"t{o}" for o in outs]
        target = ", ".join(names) + ("," if is_tuple and len(names) == 1 else "")
        return f"{target} = {expr}"


def _index_text(index, text: str) -> str:
    if index.__class__ is tuple and _is_literal(index) and index:
        return text[1:-1].rstrip(",")
    return text


def _literal_text(value, subscript: bool = False) -> str:
    if isinstance(value, slice):
        if not subscript:
            return f"slice({value.start!r}, {value.stop!r}, {value.step!r})"
        start = "" if value.start is None else repr(value.start)
        stop = "" if value.stop is None else repr(value.stop)
        step = "" if value.step is None else f":{value.step!r}"
        return f"{start}:{stop}{step}"
    if value is Ellipsis:
        return "..."
    if value.__class__ is tuple:
        inner = ", ".join(_literal_text(v, subscript) for v in value)
        return f"({inner}{',' if len(value) == 1 else ''})"
    return repr(value)


def _arg_name(low: Lowered, slot: int) -> str:
    return f"{'x' if low.arg_kinds[slot] == 's' else 'c'}{slot}"


def spell(fn) -> str | None:
    """``np.sin`` for `numpy.sin`, ``np.linalg.inv`` for `numpy.linalg.inv`; None otherwise."""
    name = qualified_name(fn)
    if not name.startswith("numpy."):
        return None
    value = np
    for part in name.split(".")[1:]:
        value = getattr(value, part, None)
    return "np." + name[len("numpy.") :] if value is fn else None


def render(low: Lowered) -> tuple[str, dict]:
    """The lowered function's source (one line per recorded operation) and its namespace."""
    renderer = _Renderer(low)
    lines = [renderer.statement(item) for item in low.items]
    terms = []
    for slot, og in low.returned:
        value = renderer.slot(slot)
        terms.append(value if og is None else f"np.sum({value} * {renderer.slot(og)})")
    if not terms:
        terms = ["0.0"]
    result = terms[0] if len(terms) == 1 else " + ".join(f"np.sum({t})" for t in terms)
    params = ", ".join(_arg_name(low, i) for i in range(len(low.arg_kinds)))
    text = "\n".join(f"    {line}" for line in lines)
    header = '"""A GradientTape recording, lowered by s2sgrad (one line per operation)."""\n'
    source = (
        f"{header}import numpy as np\n\n\ndef recorded({params}):\n{text}\n    return {result}\n"
    )
    return source, renderer.namespace
