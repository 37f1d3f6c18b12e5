"""`sg.check_grads`: compiled derivatives against central finite differences, in random directions.

One checker for every test (autograd's and JAX's ``check_grads``). For an argument point ``x``
and a random direction ``v`` (one standard normal draw per differentiable leaf):

- **forward**: ``sg.jvp(f, x, v)`` against ``(f(x + eps v) - f(x - eps v)) / (2 eps)``;
- **reverse**: the VJP through inner products, ``<vjp(u), v>`` against ``<u, that difference>``
  for a random output cotangent ``u`` (`sg.vjp`; `sg.grad` too when the output is a number);
- **order 2** checks the generated derivative code itself, as a function of the primals and
  of the direction (or cotangent), by forward mode over it: forward over forward for
  ``"forward"``, forward over reverse for ``"reverse"``, which is how `sg.hessian`, `sg.hvp`
  and ``sg.grad(sg.grad(f))`` compute second derivatives. Order ``n`` recurses ``n - 1`` times.

Differences are taken in float64 (floating inputs are promoted first). Integer and bool
arguments, and integer leaves of pytree arguments, are constants: they get no direction.
"""

from __future__ import annotations

import numbers

import numpy as np

from s2sgrad.runtime.containers import keyed

from . import tree
from .traceback_filter import api_boundary

__all__ = ["check_grads"]

_MODES = ("forward", "reverse")


@api_boundary
def check_grads(
    f,
    args,
    order=1,
    modes=_MODES,
    wrt=None,
    eps=1e-6,
    rtol=1e-5,
    atol=1e-6,
    seed=0,
):
    """Raise AssertionError where s2sgrad's derivatives of `f` disagree with finite differences.

    Args:
        f: a Python function (or a function s2sgrad returned, such as ``sg.grad(g)``).
        args: a tuple (or list) of positional arguments: arrays, floats, pytrees of them
            (nested dict/list/tuple/NamedTuple/dataclass), and integers or bools, which are
            held constant.
        order: 1 checks first derivatives; 2 also checks the generated derivative code by
            differentiating it again (see the module docstring); and so on.
        modes: ``("forward", "reverse")`` or either one (a single string is accepted).
        wrt: argument indices or names to perturb (an index, a name, or a tuple of them);
            None perturbs every argument with floating values.
        eps: the step of the central differences (in float64).
        rtol, atol: the tolerance, elementwise as in `numpy.allclose`, with ``atol`` scaled by
            the size of the expected values when they are larger than 1.
        seed: seeds the random directions; the error message repeats it.

    Raises:
        AssertionError: naming the mode, the order, the arguments, the expected and computed
            values and the seed.
        TypeError, ValueError: bad arguments to `check_grads` itself.

    Example:
        >>> def f(x, n):
        ...     return np.sum(np.sin(x) ** n)
        >>> sg.check_grads(f, (np.linspace(0.1, 1.0, 4), 3), order=2)   # doctest: +SKIP
    """
    if not callable(f):
        raise TypeError(f"check_grads: f must be a function; got {type(f).__name__}")
    if not isinstance(args, (tuple, list)):
        raise TypeError(
            f"check_grads: args must be a tuple (or list) of arguments; got {type(args).__name__}"
            f" (for one argument write args=(x,))"
        )
    if isinstance(order, bool) or not isinstance(order, numbers.Integral) or order < 1:
        raise ValueError(f"check_grads: order must be an integer >= 1; got {order!r}")
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    unknown = [m for m in modes if m not in _MODES]
    if unknown or not modes:
        raise ValueError(f"check_grads: modes must be 'forward' and/or 'reverse'; got {modes!r}")
    for name, value in (("eps", eps), ("rtol", rtol), ("atol", atol)):
        if not isinstance(value, numbers.Real) or value < 0 or (name == "eps" and value == 0):
            raise ValueError(f"check_grads: {name} must be a positive number; got {value!r}")
    from .callables import python_function
    from .composed import bind, parameter_names

    f = python_function(f)  # a method, lambda or partial: the function the transforms read
    values = bind(f, tuple(_promote(a) for a in args))
    params = parameter_names(f)
    active = _active_positions(params, values, wrt)
    checker = _Checker(eps, rtol, atol)
    names = [params[i] for i in range(len(values))]
    checker.run(f, values, names, active, order, modes, seed)


class _Checker:
    def __init__(self, eps, rtol, atol):
        self.eps, self.rtol, self.atol = eps, rtol, atol

    def run(self, f, values, names, active, order, modes, seed, what="", level=1):
        rng = np.random.default_rng(seed)
        direction = tuple(
            _random_like(v, rng) if i in active else None for i, v in enumerate(values)
        )
        context = _Context(what or getattr(f, "__name__", "f"), names, active, seed, level)
        expected = self.difference(f, values, direction)
        if "forward" in modes:
            self.check_forward(f, values, direction, expected, context)
        if "reverse" in modes:
            cotangent = self.check_reverse(f, values, direction, expected, context, rng)
        if order > 1 and "forward" in modes:
            jvp_code, jvp_args = _jvp_code(f, values, direction)
            self.run(
                jvp_code,
                jvp_args,
                [*names, *(f"t_{names[i]}" for i in sorted(active))],
                set(active) | set(range(len(values), len(jvp_args))),
                order - 1,
                ("forward",),
                seed + 1,
                f"the generated JVP code of {context.function} (forward over forward)",
                level + 1,
            )
        if order > 1 and "reverse" in modes:
            vjp_code, vjp_args = _vjp_code(f, values, cotangent)
            self.run(
                vjp_code,
                vjp_args,
                [*names, "cotangent"],
                set(active) | {len(values)},
                order - 1,
                ("forward",),
                seed + 2,
                f"the generated VJP code of {context.function} (forward over reverse)",
                level + 1,
            )

    # -- the two checks ----------------------------------------------------------------------

    def check_forward(self, f, values, direction, expected, context):
        from .forward_api import jvp

        _, tangent = jvp(f, values, direction)
        self.compare(_pairs(expected, tangent), "forward", "sg.jvp", context)

    def check_reverse(self, f, values, direction, expected, context, rng):
        from .composed import vjp
        from .transform_api import grad

        out, back = vjp(f, *values)
        cotangent = _random_like(out, rng)
        if cotangent is None:
            raise ValueError(f"check_grads: {context.function} has no floating output to check")
        grads = back(cotangent)
        got = _inner(grads, direction, context.active)
        want = _inner(cotangent, expected)
        self.compare([(want, got)], "reverse", "<sg.vjp(u), v> vs <u, difference>", context)
        if tree.structure(out).kind == "leaf" and np.ndim(out) == 0:
            names = tuple(context.names[i] for i in sorted(context.active))
            gradient = grad(f, wrt=names)(*values)
            got = _inner(gradient, tuple(direction[i] for i in sorted(context.active)))
            self.compare([(_inner(1.0, expected), got)], "reverse", "<sg.grad, v>", context)
        return cotangent

    def difference(self, f, values, direction):
        """The central difference of `f` at `values` along `direction`, per output leaf."""
        hi = f(*_moved(values, direction, self.eps))
        lo = f(*_moved(values, direction, -self.eps))
        return _difference(hi, lo, self.eps)

    def compare(self, pairs, mode, how, context):
        for k, (w, g) in enumerate(pairs):
            w = np.asarray(w, dtype=np.float64)
            g = np.zeros_like(w) if g is None else np.asarray(g, dtype=np.float64)
            where = f" (output leaf {k})" if len(pairs) > 1 else ""
            if np.shape(g) != np.shape(w):
                context.fail(mode, how, f"shape {np.shape(w)}", f"shape {np.shape(g)}", where)
            scale = max(1.0, float(np.max(np.abs(w), initial=0.0)))
            ok = np.abs(g - w) <= self.atol * scale + self.rtol * np.abs(w)
            if not np.all(ok):
                worst = float(np.max(np.abs(g - w)[~ok]))
                detail = f"{where}; largest error {worst:.3g}, rtol={self.rtol}, atol={self.atol}"
                context.fail(mode, how, _show(w), _show(g), detail)


class _Context:
    """What an AssertionError reports: which function, arguments, order and seed."""

    def __init__(self, function, names, active, seed, level):
        self.function, self.names, self.active = function, names, active
        self.seed, self.level = seed, level

    def fail(self, mode, how, expected, got, detail):
        arguments = ", ".join(self.names[i] for i in sorted(self.active)) or "(none)"
        raise AssertionError(
            f"check_grads: {mode} mode, derivative order {self.level}, of {self.function}, "
            f"differentiating with respect to {arguments} ({how}){detail}\n"
            f"  expected (central differences): {expected}\n"
            f"  got:                            {got}\n"
            f"  random direction seed={self.seed}"
        )


# -- the derivative code checked at order 2 -------------------------------------------------------


def _jvp_code(f, values, direction):
    """The generated forward-mode function of `f` and its arguments (primals, then tangents)."""
    from .composed import concrete
    from .forward_api import _positional, forward_transform

    fn = concrete(f, values)
    params = _positional(fn)
    wrt = tuple(p for p, t in zip(params, direction, strict=False) if t is not None)
    # (read by field, ``tp["W"]``, as `sg.jvp` reads a NamedTuple's or dataclass's tangent)
    tangents = tuple(keyed(t) for t in direction if t is not None)
    code = forward_transform(fn, wrt).function_for(*values)
    return code, (*values, *tangents)


def _vjp_code(f, values, cotangent):
    """The generated VJP function of `f` (its last parameter the output's adjoint)."""
    from .composed import _is_float_like, concrete, parameter_names, vjp_transform

    fn = concrete(f, values)
    names = tuple(n for n, v in zip(parameter_names(f), values, strict=True) if _is_float_like(v))
    cotangent = keyed(cotangent)
    code = vjp_transform(fn, names).function_for(*values, cotangent)
    return code, (*values, cotangent)


# -- pytrees (walked with `sg.tree`) --------------------------------------------------------------


def _is_float_leaf(x) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (float, complex, np.floating, np.complexfloating)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind in "fc"


def _promote_leaf(x):
    if isinstance(x, np.ndarray) and x.dtype.kind == "f" and x.dtype != np.float64:
        return x.astype(np.float64)
    if isinstance(x, np.floating) and not isinstance(x, np.float64):
        return float(x)
    return x


def _promote(x):
    """Floating leaves as float64 (complex stays complex); everything else as given."""
    return tree.map(_promote_leaf, x)


def _has_float(x) -> bool:
    return any(_is_float_leaf(leaf) for leaf in tree.leaves(x))


def _random_like(x, rng):
    """A standard normal draw shaped like `x` (same pytree), zero on integer leaves;
    None when `x` holds no floating value."""
    if not _has_float(x):
        return None

    def draw(leaf):
        if not _is_float_leaf(leaf):
            return 0.0 if np.ndim(leaf) == 0 else np.zeros(np.shape(leaf))
        if np.ndim(leaf) == 0 and not isinstance(leaf, np.ndarray):
            return float(rng.normal())
        return rng.normal(size=np.shape(leaf))

    return tree.map(draw, x)


def _moved(values, direction, step):
    return tuple(_move(a, v, step) for a, v in zip(values, direction, strict=True))


def _move(a, v, step):
    """`a` moved by ``step * v`` on its floating leaves (`v` has `a`'s structure)."""
    if v is None:
        return a

    def moved(x, t):
        if not _is_float_leaf(x):
            return x
        y = x + step * t
        return float(y) if isinstance(x, float) else y

    return tree.map(moved, a, v)


def _difference(hi, lo, eps):
    """``(hi - lo) / (2 eps)`` on the floating leaves of two outputs of one function (None
    on the others), in their structure."""

    def quotient(a, b):
        if not _is_float_leaf(np.asarray(a)):
            return None
        return (np.asarray(a, np.float64) - b) / (2 * eps)

    return tree.map(quotient, hi, lo)


def _pairs(want, got) -> list:
    """``(expected, computed)`` leaf pairs in the structure of `want`: its None leaves (outputs
    without floating values) are skipped; a None in `got` stands for zeros."""
    wanted, treedef = tree.flatten(want)
    pairs = zip(wanted, treedef.flatten_up_to(got), strict=True)
    return [(w, g) for w, g in pairs if w is not None]


def _inner(values, reference, positions=None) -> float:
    """Sum of elementwise products of the floating leaves of `values` and of `reference` (a
    pytree `values` has, or fills with None, which counts as 0)."""
    if positions is not None:  # a tuple of per-argument results, only `positions` count
        return sum(_inner(values[i], reference[i]) for i in sorted(positions))
    if values is None or reference is None:
        return 0.0
    references, treedef = tree.flatten(reference)
    total = 0.0
    for a, b in zip(treedef.flatten_up_to(values), references, strict=True):
        if a is not None and b is not None and _is_number(a) and _is_number(b):
            total += float(np.sum(np.asarray(a, np.float64) * np.asarray(b, np.float64)))
    return total


def _is_number(x) -> bool:
    return isinstance(x, (numbers.Number, np.ndarray, np.generic))


def _active_positions(params, values, wrt) -> set[int]:
    if wrt is None:
        return {i for i, v in enumerate(values) if _has_float(v)}
    items = list(wrt) if isinstance(wrt, (tuple, list)) else [wrt]
    positions = set()
    for item in items:
        if isinstance(item, str):
            if item not in params:
                raise ValueError(f"check_grads: wrt={item!r} is not a parameter ({params})")
            positions.add(params.index(item))
        elif isinstance(item, numbers.Integral) and not isinstance(item, bool):
            if not -len(values) <= item < len(values):
                raise ValueError(f"check_grads: wrt={item} is out of range for {len(values)} args")
            positions.add(int(item) % len(values))
        else:
            raise TypeError(f"check_grads: wrt must be argument indices or names; got {item!r}")
    constant = [params[i] for i in positions if not _has_float(values[i])]
    if constant:
        raise ValueError(f"check_grads: wrt names arguments without floating values: {constant}")
    return positions


def _show(value: np.ndarray) -> str:
    text = np.array2string(np.asarray(value), precision=8, threshold=20, max_line_width=200)
    return text.replace("\n", " ")
