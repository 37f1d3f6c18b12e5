"""Helpers that rule templates of the reductions, shape and linalg families call.

Templates are straight-line code (see ``runtime/registry.py``), so every adjoint that needs a
branch on shapes, a loop over operands or a case split on ``ord`` lives here instead. Each helper
takes the values the template sees (``g``, ``ans``, the call's arguments) and returns a
contribution, or a piece of one. NumPy only: generated code imports these at run time.
"""

from __future__ import annotations

import numpy as np

from .adjoint_helpers import unbroadcast, unreduce
from .containers import by_position

__all__ = [
    "absolute_slope",
    "absolute_slope_tangent",
    "conjugate_if_complex",
    "delete_adjoint",
    "dot_adjoint_a",
    "dot_adjoint_b",
    "einsum_adjoint",
    "einsum_operands",
    "extremum_weights",
    "floating",
    "inner_adjoint_a",
    "inner_adjoint_b",
    "invert_axes",
    "item_adjoint",
    "item_of",
    "item_tangent",
    "linspace_adjoint",
    "linspace_weights",
    "norm_adjoint",
    "prod_of_others",
    "real_part_of",
    "reverse_cumsum",
    "safe_divide",
    "scaled_power",
    "solve_adjoint_a",
    "solve_transposed",
    "split_like",
    "tie_weights",
    "trace_adjoint",
    "unstack",
]


def _axes(axis, ndim: int) -> tuple[int, ...]:
    """`axis` (None, an int or a tuple, possibly negative) as a sorted tuple of axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return tuple(sorted(int(a) % ndim for a in axes))


def floating(x):
    """`x` as an array of a floating type (float32 stays float32, integers become float64); a
    list or tuple of numbers becomes the array NumPy reads it as."""
    x = np.asarray(x)
    return x if x.dtype.kind in "fc" else x.astype(np.result_type(x.dtype, 1.0))


def safe_divide(x, y):
    """``x / y``, but exactly 0 wherever ``x`` is 0, whatever ``y`` is there (0, inf or NaN).

    The NaN-safe division of derivative rules (README, "NaN-safe gradients"). A rule whose
    derivative is singular divides the incoming adjoint by the singular factor with it:
    ``safe_divide(g, 2 * ans)`` for `sqrt`. Where ``g`` is 0, typically the branch
    ``np.where`` did not select, the contribution is exactly 0 instead of ``0 / 0 = NaN``;
    elsewhere it is the plain quotient, ``±inf`` where ``y`` is 0 (an infinite derivative is a
    value here, so no warning is issued). At the kinks of ``norm`` and ``std`` the numerator
    (``x`` or the centered data) is 0 too, which gives them the subgradient 0.
    """
    if isinstance(x, float) and isinstance(y, float) and y:  # Python numbers: no array work
        return x / y if x else 0.0
    if isinstance(y, np.ndarray) and y.all():  # no zero divisor: no warning to silence
        quotient = np.divide(x, y)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            quotient = np.divide(x, y)
    if np.isnan(quotient).any():  # 0/0 or 0/NaN somewhere: those are 0
        quotient = np.where(np.asarray(x) == 0, 0.0, quotient)[()]
        if np.iscomplexobj(quotient):  # a complex x / 0 is NaN in NumPy; inf, as a real one
            quotient = np.where((np.asarray(y) == 0) & (np.asarray(x) != 0), np.inf, quotient)[()]
    return quotient


def absolute_slope(x, magnitude):
    """The slope of ``|x|`` in the rules' pairing: ``sign(x)`` for real `x`, and
    ``conj(z) / |z|`` for complex `z` (0 where it is 0); `magnitude` is ``|x|``."""
    if not np.iscomplexobj(x):
        return np.sign(x)
    return safe_divide(np.conj(x), magnitude)


def absolute_slope_tangent(t, x, magnitude, tx=None, tmagnitude=None):
    """The tangent of `absolute_slope` for the tangent `t` of `x` (0 for real `x`, where the
    slope is piecewise constant). `tx`, `tmagnitude`: the tangents of `x` and `magnitude`
    where this is differentiated again (a third derivative), which only a real `x` has."""
    if not np.iscomplexobj(x):  # zeros shaped like the slope's tangent (with t's batch axes)
        shapes = [np.shape(v) for v in (t, tx, tmagnitude) if v is not None]
        return np.zeros(np.broadcast_shapes(np.shape(x), *shapes))
    if tx is not None or tmagnitude is not None:
        raise LookupError(
            "third derivatives through the magnitude of a complex value (np.abs of a complex "
            "array) are not supported yet: use second derivatives, or write |z| as "
            "np.sqrt(z.real ** 2 + z.imag ** 2)"
        )
    dmagnitude = np.real(safe_divide(np.conj(x), magnitude) * t)
    return safe_divide(np.conj(t), magnitude) - safe_divide(np.conj(x) * dmagnitude, magnitude**2)


def conjugate_if_complex(x):
    """``np.conj(x)``, without the copy for a real `x` (the common case of rules that hold for
    complex arguments too)."""
    return np.conj(x) if np.iscomplexobj(x) else x


def real_part_of(x, v):
    """`v`, the adjoint of a complex-valued primitive's argument `x`, as `x`'s kind of number:
    its real part when `x` is real (the imaginary part points off the real line `x` lives
    on), all of it when `x` is complex. The templates' lazily broadcast ``g`` gets `x`'s
    shape here: the compiler takes an elementwise rule's contribution to have at least its
    argument's shape unless it can see otherwise."""
    if not np.iscomplexobj(x) and np.iscomplexobj(v):
        v = np.real(v)
    shape = np.shape(x)
    return v if np.shape(v) == shape else v + np.zeros(shape, np.result_type(v, x, 1.0))


def scaled_power(c, x, p):
    """``c * x ** p``, but exactly 0 wherever ``c`` is 0, and never an exception.

    The slope of ``x ** y`` in ``x`` is ``scaled_power(g * y, x, y - 1)``. Written as ``g * y *
    x ** (y - 1)`` it would be ``0 * inf = NaN`` at ``x = 0`` for ``y = 0`` (where ``x ** 0``
    is the constant 1, slope 0), and Python numbers raise ``ZeroDivisionError`` for ``0.0 **
    -1.0``. A negative power of 0 is ``inf`` here (an infinite slope is a value, as in
    `safe_divide`). Its own rules make it differentiable again: the slope of ``x ** 2`` at 0
    is 0 and its second derivative 2. The compiler writes the plain ``c * x ** p`` where `p`
    is a number it knows to be >= 0 (then ``x ** p`` is finite).
    """
    if isinstance(p, (int, float, np.number)) and p >= 0:
        return c * x**p
    scalars = all(isinstance(v, (int, float)) for v in (c, x, p))
    x = floating(x)  # integers to negative powers fail
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.multiply(c, np.power(x, p))
    zero = np.asarray(c) == 0
    if zero.any():
        out = np.where(zero, 0.0, out)
    return float(out) if scalars else out[()]


def tie_weights(x, y, ans):
    """The share of the adjoint of ``ans = max(x, y)`` (or ``min``) that goes to `x`: 1 where
    `x` is the result, 0 where `y` is, 1/2 where they tie (the symmetric difference
    quotient). The division for ties is done only when there is one (ReLU's common case has
    none)."""
    hit = x == ans
    ties = x == y
    if isinstance(ties, np.ndarray):
        tied = ties.any()
    elif isinstance(ties, (bool, np.bool_)):
        tied = ties  # (np.any: a few us more)
    else:  # a Tensor mask: the adjoint's code run under a nested tape
        tied = np.any(ties)
    if tied:
        return hit / (1.0 + ties)
    return hit * 1.0  # numbers, not booleans: two boolean masks would add as a logical or


# -- reductions -----------------------------------------------------------------------------------


def extremum_weights(a, ans, axis=None, keepdims=False):
    """Where `a` attains its reduced max/min `ans`, 1/(number of ties); 0 elsewhere.

    Ties share the adjoint equally (as JAX does), so the weights of each slice sum to 1.
    """
    hit = np.asarray(a) == unreduce(ans, a, axis, keepdims)
    return hit / np.sum(hit, axis=axis, keepdims=True)


def prod_of_others(a, axis=None):
    """For each element of `a`, the product of the other elements of its reduction slice.

    This is the derivative of ``np.prod(a, axis)``. It is built from exclusive cumulative
    products from both ends, so it is exact when the slice holds zeros (``ans / a`` is not).
    """
    a = floating(a)
    axes = _axes(axis, a.ndim)
    if not axes:
        return np.ones_like(a)
    ends = tuple(range(a.ndim - len(axes), a.ndim))
    moved = np.moveaxis(a, axes, ends)
    flat = moved.reshape(*moved.shape[: a.ndim - len(axes)], -1)
    ones = np.ones_like(flat[..., :1])
    before = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    others = (before * after).reshape(moved.shape)
    return np.moveaxis(others, ends, axes)


def reverse_cumsum(g, a, axis=None):
    """The adjoint of ``np.cumsum(a, axis)``: sums of `g` from each position to the end.

    With ``axis=None`` cumsum works on ``a`` flattened, so the result is reshaped back. `g`
    may be smaller than cumsum's result (lazily broadcast, like a seed ``1.0``): it is
    broadcast to it first, since each position sums a different number of its entries.
    """
    if axis is None:
        size = np.size(a)
        g = np.ravel(g) if np.size(g) == size else np.broadcast_to(g, (size,))
        return np.reshape(np.cumsum(g[::-1])[::-1], np.shape(a))
    g = np.broadcast_to(g, np.shape(a))
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis)


# -- shapes ---------------------------------------------------------------------------------------


def invert_axes(axes, ndim):
    """The permutation undoing ``np.transpose(x, axes)`` (None, meaning reversal, undoes itself)."""
    if axes is None:
        return None
    return tuple(int(i) for i in np.argsort([int(a) % ndim for a in axes]))


def split_like(g, arrays, axis=0):
    """The adjoint of ``np.concatenate(arrays, axis)``: `g` cut into pieces shaped like `arrays`.

    Returns a container adjoint with one adjoint per entry of `arrays` (by position: the list
    may grow again, by the adjoint of a ``pop``, and a position past its end is then a zero).
    ``axis=None`` concatenates the flattened arrays, so pieces are reshaped.
    """
    if axis is None:
        sizes = [np.size(x) for x in arrays]
        pieces = np.split(np.ravel(g), np.cumsum(sizes)[:-1])
        pieces = [np.reshape(p, np.shape(x)) for p, x in zip(pieces, arrays, strict=True)]
        return by_position(pieces)
    sizes = [np.shape(x)[axis] for x in arrays]
    return by_position(np.split(g, np.cumsum(sizes)[:-1], axis=axis))


def unstack(g, axis=0):
    """The adjoint of ``np.stack(arrays, axis)``: the slices of `g` along `axis`, as a
    container adjoint by position (see `split_like`)."""
    return by_position(np.moveaxis(np.asarray(g), axis, 0))


# -- products -------------------------------------------------------------------------------------


def dot_adjoint_a(g, a, b):
    """The adjoint of `a` in ``np.dot(a, b)``.

    ``dot`` contracts the last axis of `a` with the second-to-last of `b` (the last if `b` is
    1-D), and its result's axes are `a`'s remaining ones followed by `b`'s; a 0-d operand
    multiplies.
    """
    a_nd, b_nd = np.ndim(a), np.ndim(b)
    if a_nd == 0:
        return np.sum(g * b)
    if b_nd == 0:
        return g * b
    b_axes = [i for i in range(b_nd) if i != max(b_nd - 2, 0)]
    return np.tensordot(g, b, axes=(list(range(a_nd - 1, np.ndim(g))), b_axes))


def dot_adjoint_b(g, a, b):
    """The adjoint of `b` in ``np.dot(a, b)`` (see `dot_adjoint_a`)."""
    a_nd, b_nd = np.ndim(a), np.ndim(b)
    if b_nd == 0:
        return np.sum(g * a)
    if a_nd == 0:
        return g * a
    lead = list(range(a_nd - 1))
    out = np.tensordot(a, g, axes=(lead, lead))  # (n, *b.shape[:-2], m) or (n,)
    return np.moveaxis(out, 0, -2) if b_nd >= 2 else out


def inner_adjoint_a(g, a, b):
    """The adjoint of `a` in ``np.inner(a, b)``, which contracts the last axes of both."""
    a_nd, b_nd = np.ndim(a), np.ndim(b)
    if a_nd == 0:
        return np.sum(g * b)
    if b_nd == 0:
        return g * b
    return np.tensordot(g, b, axes=(list(range(a_nd - 1, np.ndim(g))), list(range(b_nd - 1))))


def inner_adjoint_b(g, a, b):
    """The adjoint of `b` in ``np.inner(a, b)``."""
    a_nd, b_nd = np.ndim(a), np.ndim(b)
    if b_nd == 0:
        return np.sum(g * a)
    if a_nd == 0:
        return g * a
    lead = list(range(a_nd - 1))
    return np.moveaxis(np.tensordot(a, g, axes=(lead, lead)), 0, -1)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _parse_einsum(subscripts: str, ndims: list[int]) -> tuple[list[str], str]:
    """Operand and output subscripts of an einsum with '...' replaced by explicit letters."""
    subscripts = subscripts.replace(" ", "")
    lhs, arrow, output = subscripts.partition("->")
    inputs = lhs.split(",")
    unused = [c for c in _LETTERS if c not in subscripts]
    ell_nd = max(
        (nd - len(s) + 3 for s, nd in zip(inputs, ndims, strict=True) if "..." in s), default=0
    )
    ell = "".join(unused[:ell_nd])
    inputs = [
        s.replace("...", ell[ell_nd - (nd - len(s) + 3) :]) if "..." in s else s
        for s, nd in zip(inputs, ndims, strict=True)
    ]
    if arrow:
        output = output.replace("...", ell)
    else:  # implicit mode: broadcast letters, then letters used once, in alphabetical order
        joined = "".join(inputs)
        output = ell + "".join(
            sorted(c for c in set(joined) if joined.count(c) == 1 and c not in ell)
        )
    return inputs, output


def einsum_operands(subscripts, operands) -> tuple[str, list[int]]:
    """The subscripts of ``np.einsum(subscripts, *operands)`` as a string, and the positions
    of the arrays in ``(subscripts, *operands)``. In the sublist form ``np.einsum(a, [0, 1],
    b, [1, 2], [0, 2])`` the "subscripts" are the first array and integer lists follow each
    array (an output list last): the positions are then 0, 2, 4, ..."""
    if isinstance(subscripts, str):
        return subscripts, list(range(1, len(operands) + 1))
    full = (subscripts, *operands)
    count = len(full) // 2

    def letters(sublist) -> str:
        return "".join("..." if s is Ellipsis else _LETTERS[int(s)] for s in sublist)

    spec = ",".join(letters(full[2 * i + 1]) for i in range(count))
    if len(full) % 2:
        spec += "->" + letters(full[-1])
    return spec, [2 * i for i in range(count)]


def einsum_adjoint(g, subscripts, operands, argnum, optimize=False):
    """The adjoint of the operand at position `argnum` of ``np.einsum(subscripts, *operands)``
    (counting `subscripts`, which is the first operand in the sublist form).

    It is itself an einsum of `g` with the other operands, mapping the output's letters back to
    the operand's. Two cases need extra factors: a letter repeated in the operand (a diagonal,
    ``'ii->'``) gets an identity matrix, and a letter the operand alone sums over gets ones.
    Letters along which the operand was broadcast are summed back by `unbroadcast`.
    """
    full = (subscripts, *operands)
    subscripts, positions = einsum_operands(subscripts, operands)
    operands = [full[p] for p in positions]
    k = positions.index(argnum)
    inputs, output = _parse_einsum(subscripts, [np.ndim(x) for x in operands])
    target, shape = inputs[k], np.shape(operands[k])
    other_subs = [s for i, s in enumerate(inputs) if i != k]
    others = [x for i, x in enumerate(operands) if i != k]
    available = set(output + "".join(other_subs))
    fresh = iter(c for c in _LETTERS if c not in "".join(inputs) + output)
    letters, seen = [], set()
    for letter, n in zip(target, shape, strict=True):
        if letter in seen:
            new = next(fresh)
            other_subs.append(letter + new)
            others.append(np.eye(n))
            letters.append(new)
            continue
        if letter not in available:
            other_subs.append(letter)
            others.append(np.ones(n))
        seen.add(letter)
        letters.append(letter)
    spec = ",".join([output, *other_subs]) + "->" + "".join(letters)
    return unbroadcast(np.einsum(spec, g, *others, optimize=optimize), operands[k])


def trace_adjoint(g, a, offset=0, axis1=0, axis2=1):
    """The adjoint of ``np.trace(a, offset, axis1, axis2)``: `g` spread over that diagonal."""
    nd = np.ndim(a)
    axis1, axis2 = axis1 % nd, axis2 % nd
    n, m = np.shape(a)[axis1], np.shape(a)[axis2]
    eye = np.eye(n, m, k=offset)
    out = np.asarray(g)[..., None, None] * eye  # axes: the other axes in order, axis1, axis2
    return np.moveaxis(out, (-2, -1), (axis1, axis2))


# -- linear solves --------------------------------------------------------------------------------


def _solves_vector(a, b) -> bool:
    """Whether ``np.linalg.solve(a, b)`` treats `b` as a vector (the rule changed in NumPy 2)."""
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        return np.ndim(b) == 1
    return np.ndim(b) == np.ndim(a) - 1


def solve_transposed(a, g, b):
    """``solve(a^T, g)`` with `g` shaped like the solution of ``solve(a, b)``.

    This is the (broadcast) adjoint of `b`; the rule sums it back to `b`'s shape.
    """
    at = np.swapaxes(a, -1, -2)
    if _solves_vector(a, b):
        return np.linalg.solve(at, np.asarray(g)[..., None])[..., 0]
    return np.linalg.solve(at, g)


def solve_adjoint_a(gb, ans, a, b):
    """The adjoint of `a` in ``x = solve(a, b)``: ``-gb x^T``, summed to `a`'s shape."""
    if _solves_vector(a, b):
        outer = gb[..., :, None] * ans[..., None, :]
    else:
        outer = gb @ np.swapaxes(ans, -1, -2)
    return unbroadcast(-outer, a)


# -- norms ----------------------------------------------------------------------------------------


def norm_adjoint(g, ans, x, ord=None, axis=None, keepdims=False):
    """The adjoint of ``np.linalg.norm(x, ord, axis, keepdims)``, 0 where the norm is 0.

    Vector norms (``axis`` an int, or ``x`` 1-D, or ``ord=None`` with no axis) support any real
    ``ord``; matrix norms (``axis`` a pair, or ``x`` 2-D with ``ord`` given) support
    ``'fro'``, ``'nuc'``, ±1, ±2 and ±inf. Ties among maximal entries share the adjoint.
    """
    x = floating(x)
    matrix = (axis is None and ord is not None and x.ndim == 2) or (
        axis is not None and not isinstance(axis, (int, np.integer)) and len(axis) == 2
    )
    if axis is None and ord is not None:
        axis = tuple(range(x.ndim))
    g = unreduce(g, x, axis, keepdims)
    ans = unreduce(ans, x, axis, keepdims)
    if not matrix:
        return g * _conjugate_if_complex(_vector_norm_derivative(x, ans, ord, axis))
    if np.iscomplexobj(x) and ord in ("nuc", 2, -2):
        raise ValueError(
            f"derivatives of np.linalg.norm(x, ord={ord!r}) are implemented for real matrices "
            f"only (x is complex)"
        )
    rows, cols = axis[0] % x.ndim, axis[1] % x.ndim

    def to_end(t):
        return np.moveaxis(np.asarray(t), (rows, cols), (-2, -1))

    deriv = _matrix_norm_derivative(to_end(x), to_end(ans), ord)
    return g * _conjugate_if_complex(np.moveaxis(deriv, (-2, -1), (rows, cols)))


def _conjugate_if_complex(deriv):
    """d norm / d x in JAX's pairing ``Re(sum(g * dz))``: for a complex `x` the entrywise
    derivatives, written with ``x`` and ``sign(x) = x / |x|``, are conjugated (|z|'s slope is
    conj(z) / |z|, README's complex numbers)."""
    return np.conj(deriv) if np.iscomplexobj(deriv) else deriv


def _vector_norm_derivative(x, ans, ord, axis):
    if ord is None or ord == 2:
        return safe_divide(x, ans)
    if ord == 0:
        return np.zeros_like(x)
    if ord == 1:
        return np.sign(x)
    if np.isinf(ord):
        return np.sign(x) * extremum_weights(np.abs(x), ans, axis, keepdims=True)
    # sign(x) |x|^(ord-1) / ans^(ord-1), written so that a zero entry gets 0 (sign(0) = 0)
    # for every ord, where |x|^(ord-1) alone would be infinite for ord < 1
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.abs(x) ** (1 - ord) * ans ** (ord - 1)
    return safe_divide(np.sign(x), scale)


def _matrix_norm_derivative(x, ans, ord):
    """d norm / d x for matrices `x` stacked on leading axes, `ans` with trailing (1, 1)."""
    if ord is None or ord == "fro":
        return safe_divide(x, ans)
    if ord == "nuc":
        u, _, vt = np.linalg.svd(x, full_matrices=False)
        return u @ vt
    if ord in (2, -2):
        u, _, vt = np.linalg.svd(x, full_matrices=False)
        i = 0 if ord == 2 else -1  # singular values come sorted, largest first
        return u[..., :, [i]] * vt[..., [i], :]
    # induced 1- and inf-norms: max (or min) over columns (rows) of absolute sums
    axis = -2 if ord in (1, -1) else -1
    sums = np.sum(np.abs(x), axis=axis, keepdims=True)
    return np.sign(x) * extremum_weights(sums, ans, axis=(-2, -1), keepdims=True)


def singular_derivative_tangent(x, tx, ord):
    """The tangent along `tx` of ``d norm / d x`` for the nuclear (``U @ Vt``) and spectral
    (``u_i v_i^T``, ``i`` the largest or smallest singular value) norms of the matrices on
    the last two axes of `x`, from the derivative of the thin SVD ``x = U S Vt``:

        dP = U^T dx V,  F[i, j] = 1 / (s_j^2 - s_i^2) (0 on the diagonal)
        dU = U (F * (dP S + S dP^T)) + (I - U U^T) dx V S^-1
        dV = V (F * (S dP + dP^T S)) + (I - V V^T) dx^T U S^-1

    valid where the singular values are distinct and nonzero (where the norm is smooth)."""
    u, s, vt = np.linalg.svd(x, full_matrices=False)
    v = np.swapaxes(vt, -1, -2)
    dp = np.swapaxes(u, -1, -2) @ tx @ v
    s_row = s[..., None, :]  # s_j along the last axis
    s_col = s[..., :, None]
    gaps = s_row**2 - s_col**2
    eye = np.eye(s.shape[-1], dtype=bool)
    with np.errstate(divide="ignore"):
        f = np.where(eye, 0.0, 1.0 / np.where(eye, 1.0, gaps))
    dp_t = np.swapaxes(dp, -1, -2)
    du = u @ (f * (dp * s_row + s_col * dp_t))
    dv = v @ (f * (s_col * dp + dp_t * s_row))
    du = du + (tx @ v - u @ dp) / s_row  # the part of dx V outside U's columns
    dv = dv + (np.swapaxes(tx, -1, -2) @ u - v @ dp_t) / s_row
    if ord == "nuc":
        return du @ vt + u @ np.swapaxes(dv, -1, -2)
    i = 0 if ord == 2 else -1
    return du[..., :, [i]] * vt[..., [i], :] + u[..., :, [i]] * np.swapaxes(dv, -1, -2)[..., [i], :]


def linspace_weights(num, endpoint=True):
    """Where each sample of ``np.linspace(start, stop, num, endpoint)`` lies between the ends,
    from 0 (`start`) to 1 (`stop`): the slope of each sample in `stop`."""
    num = int(num)
    div = num - 1 if endpoint else num
    steps = np.arange(num, dtype=np.float64)
    return steps / div if div > 0 else steps * 0.0


def linspace_adjoint(g, start, stop, num=50, endpoint=True, axis=0, end=0):
    """The adjoint of `start` (``end=0``) or `stop` (``end=1``) in ``np.linspace(start, stop,
    num, endpoint, axis=axis)``: each sample is ``start + t * (stop - start)``, so `g` along the
    samples' axis is summed with weights ``1 - t`` or ``t``, then reduced to the end's shape
    (ends may broadcast against each other)."""
    t = linspace_weights(num, endpoint)
    weights = t if end else 1.0 - t
    summed = np.tensordot(weights, np.moveaxis(np.asarray(g), axis, 0), axes=(0, 0))
    return unbroadcast(summed, start if end == 0 else stop)


def delete_adjoint(g, arr, obj, axis=None):
    """The adjoint of ``np.delete(arr, obj, axis)``: `g` at the kept positions, zero at the
    deleted ones."""
    shape = np.shape(arr)
    if axis is None:
        keep = np.ones(int(np.prod(shape)), dtype=bool)
        keep[obj] = False
        out = np.zeros(keep.shape, dtype=np.result_type(g, 1.0))
        out[keep] = g
        return out.reshape(shape)
    axis = axis % len(shape)
    keep = np.ones(shape[axis], dtype=bool)
    keep[obj] = False
    out = np.zeros(shape, dtype=np.result_type(g, 1.0))
    out[(slice(None),) * axis + (keep,)] = g
    return out


# -- ndarray.item ---------------------------------------------------------------------------------


def item_of(a, *index):
    """``a.item(*index)``: what generated code calls for the method (so it has rules)."""
    return np.asarray(a).item(*index)


def _flat_position(a, index) -> int:
    if len(index) == 1 and isinstance(index[0], tuple):  # ``a.item((1, 2))``: one tuple
        index = index[0]
    if not index:
        if np.size(a) != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return 0
    if len(index) == 1:
        return int(index[0]) % int(np.size(a))
    return int(np.ravel_multi_index(tuple(int(i) for i in index), np.shape(a)))


def item_adjoint(g, a, index=()):
    """The adjoint of ``a.item(*index)``: `g` at that element, zeros elsewhere."""
    out = np.zeros(np.size(a), dtype=np.result_type(g, a, 1.0))
    out[_flat_position(a, index)] = g
    return np.reshape(out, np.shape(a))


def item_tangent(t, a, index=()):
    """The tangent of ``a.item(*index)`` for `t`, with `t`'s leading batch axes."""
    lead = np.shape(t)[: np.ndim(t) - np.ndim(a)]
    return np.reshape(t, (*lead, -1))[..., _flat_position(a, index)]
