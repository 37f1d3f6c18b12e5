"""The test table: one row per way of calling a differentiable primitive. Data, not tests.

`tests/test_rule_templates.py` checks every row's reverse-rule template against central finite
differences, and fails when a registered differentiable rule has no row here. A row says how to
call the primitive and on what:

- ``args`` maps the input arrays to the call's positional arguments; constants that are not
  differentiated (an index, a shape, a boolean condition) live in this lambda, never in the
  inputs. The default passes the inputs as they are.
- ``shapes`` lists shape cases, each a tuple with one shape per input; shape ``()`` gives a
  Python float (so `math` functions and builtins get what they expect).
- ``domain`` is ``(low, high)`` for uniform inputs, a callable ``(rng, shape) -> array``, or a
  tuple with one of those per input.
- ``argnums``: the positional arguments whose contributions are checked (None: all that hold an
  input). ``values`` replaces random inputs by fixed ones (special points such as zeros).
- ``output``: for primitives returning a tuple, the component the rule's ``g`` stands for.

Special cases are rows (ties, zeros, integer-array indices), not branches in the tests.
"""

from __future__ import annotations

import builtins
import dataclasses
import math
import operator
from collections.abc import Callable

import numpy as np
import sympy as sp
from rule_table_matrix import MATRIX  # decompositions, FFT, scipy.linalg, signal
from rule_table_scipy import SCIPY, SCIPY_NONDIFFERENTIABLE, SCIPY_SYMBOLIC

from s2sgrad import nn, runtime  # nn registers sg.nn.relu (with relu's rule)

Shape = tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class Row:
    primitive: Callable
    shapes: tuple[tuple[Shape, ...], ...]
    args: Callable = lambda *xs: xs
    kwargs: dict = dataclasses.field(default_factory=dict)
    domain: object = (-2.0, 2.0)
    argnums: tuple[int, ...] | None = None
    values: tuple | None = None
    output: int | None = None
    tol: float = 1e-6

    def call(self, *inputs):
        """The primitive's value (the component `output` of it) at `inputs`."""
        ans = self.primitive(*self.args(*inputs), **self.kwargs)
        return ans if self.output is None else ans[self.output]

    @property
    def id(self) -> str:
        name = getattr(self.primitive, "__name__", type(self.primitive).__name__)
        module = getattr(self.primitive, "__module__", None) or "numpy"
        extra = ",".join(f"{k}={v}" for k, v in self.kwargs.items())
        return f"{module.lstrip('_')}.{name}({extra})"


def well_conditioned(rng, shape):
    """Square matrices near the identity, so inverses and determinants are tame."""
    return np.eye(shape[-1]) + 0.3 * rng.uniform(-1.0, 1.0, shape)


POSITIVE = (0.5, 2.0)
UNIT = (-0.9, 0.9)
UNARY_SHAPES = (((3, 4),), ((5,),), ((),))
SCALAR = (((),),)
BINARY_SHAPES = (
    ((3, 4), (3, 4)),
    ((3, 1), (1, 4)),
    ((4,), (3, 4)),
    ((), (3,)),
    ((2, 3), ()),
    ((), ()),
)
SCALAR_PAIR = (((), ()),)


def _unary(primitives, domain=(-2.0, 2.0), shapes=UNARY_SHAPES):
    return [Row(p, shapes, domain=domain) for p in primitives]


def _binary(primitives, domain=(-2.0, 2.0), shapes=BINARY_SHAPES):
    return [Row(p, shapes, domain=domain) for p in primitives]


MASK = np.arange(12).reshape(3, 4) % 3 == 0
CONDITION = np.array([True, False, True, False])

ELEMENTWISE = [
    *_binary([operator.add, np.add, operator.sub, np.subtract, operator.mul, np.multiply]),
    *_binary([operator.truediv, np.divide], domain=((-2.0, 2.0), POSITIVE)),
    *_binary([np.maximum, np.minimum]),
    *_binary([builtins.max, builtins.min], shapes=SCALAR_PAIR),
    *_binary([operator.pow, np.power], domain=(POSITIVE, (-2.0, 2.0))),
    *_binary([operator.mod, np.mod], domain=((0.1, 3.0), POSITIVE)),
    *_binary([np.arctan2, np.logaddexp, np.logaddexp2, np.fmax, np.fmin]),
    *_binary([np.hypot]),
    *_binary([runtime.safe_divide], domain=((-2.0, 2.0), POSITIVE)),
    Row(
        runtime.scaled_power,
        (((3, 4), (3, 4), (3, 4)), ((4,), (3, 4), ()), ((), (), ())),
        domain=((-2.0, 2.0), POSITIVE, (-2.0, 2.0)),
    ),
    *_binary([math.pow, builtins.pow], domain=(POSITIVE, (-2.0, 2.0)), shapes=SCALAR_PAIR),
    *_binary([math.atan2], shapes=SCALAR_PAIR),
    Row(math.log, SCALAR_PAIR, domain=(POSITIVE, (1.5, 3.0))),
    Row(
        np.clip,
        (((3, 4), (), ()), ((3, 4), (4,), (3, 1))),
        domain=((-2.0, 2.0), (-1.0, -0.5), (0.5, 1.0)),
    ),
    Row(
        np.where,
        (((3, 4), (3, 4)), ((4,), (3, 1)), ((), (4,))),
        args=lambda x, y: (CONDITION, x, y),
    ),
    *_unary(
        [
            operator.neg,
            np.negative,
            operator.pos,
            np.positive,
            np.square,
            np.exp,
            np.exp2,
            np.expm1,
            np.sin,
            np.cos,
            np.tan,
            np.arctan,
            np.sinh,
            np.cosh,
            np.tanh,
            np.absolute,
            builtins.abs,
            np.float64,
            np.copy,
            np.fabs,
            np.arcsinh,
            np.sinc,
            np.deg2rad,
            np.radians,
            np.rad2deg,
            np.degrees,
            np.nan_to_num,
            np.real,
            np.imag,
            np.conj,
            np.angle,
            np.real_if_close,
        ]
    ),
    Row(np.sinc, (((5,),),), values=(np.array([0.0, 1e-4, -5e-4, 2e-3, 1.0]),)),
    Row(np.reciprocal, UNARY_SHAPES, domain=POSITIVE),
    Row(np.arccosh, UNARY_SHAPES, domain=(1.2, 3.0)),
    Row(np.arctanh, UNARY_SHAPES, domain=UNIT),
    *_unary([runtime.relu, nn.relu]),
    *_unary([np.sqrt, np.log, np.log2, np.log10, np.log1p], domain=POSITIVE),
    *_unary([np.arcsin, np.arccos], domain=UNIT),
    *_unary(
        [
            math.exp,
            math.expm1,
            math.sin,
            math.cos,
            math.tan,
            math.atan,
            math.sinh,
            math.cosh,
            math.tanh,
            math.fabs,
            builtins.float,
            math.asinh,
            math.radians,
            math.degrees,
        ],
        shapes=SCALAR,
    ),
    Row(math.acosh, SCALAR, domain=(1.2, 3.0)),
    Row(math.atanh, SCALAR, domain=UNIT),
    *_unary([math.sqrt, math.log, math.log2, math.log10, math.log1p], POSITIVE, SCALAR),
    *_unary([math.asin, math.acos], UNIT, SCALAR),
]

INDEXING = [
    Row(operator.getitem, (((5,),), ((3, 4),)), args=lambda x: (x, 1)),
    Row(operator.getitem, (((5,),), ((4, 3),)), args=lambda x: (x, slice(1, 3))),
    Row(operator.getitem, (((5,),), ((4, 3),)), args=lambda x: (x, np.array([0, 2, 0, 0]))),
    Row(operator.getitem, (((3, 4),),), args=lambda x: (x, (slice(None), [1, 1, 3]))),
    Row(operator.getitem, (((3, 4),),), args=lambda x: (x, (Ellipsis, None, 2))),
    Row(operator.getitem, (((3, 4),),), args=lambda x: (x, MASK)),
    # the adjoint of indexing, differentiated again (nested tapes): repeated rows add up
    Row(
        runtime.index_adjoint,
        (((3, 3),),),
        args=lambda g: (g, np.zeros((4, 3)), (np.array([0, 2, 0]), slice(None))),
    ),
    # the adjoints of functions that move elements, differentiated again (nested tapes): each
    # helper's reverse rule is the other's forward one (their transposes)
    Row(
        runtime.moved_adjoint,
        (((8,),),),
        args=lambda g: (g, np.zeros(4), np.tile(runtime.element_numbers(np.zeros(4)), 2)),
    ),
    Row(
        runtime.moved_adjoint,
        (((6,),),),
        args=lambda g: (g, np.zeros(4), np.pad(runtime.element_numbers(np.zeros(4)), 1)),
    ),
    Row(
        runtime.moved_tangent,
        (((4,),),),
        args=lambda t: (t, np.zeros(4), np.roll(runtime.element_numbers(np.zeros(4)), 1)),
    ),
    Row(runtime.diff_adjoint, (((3,),),), args=lambda g: (g, np.zeros(4), 1, -1)),
    Row(runtime.diff_adjoint, (((2, 2),),), args=lambda g: (g, np.zeros((2, 4)), 2, 1)),
    Row(
        runtime.picked_adjoint,
        (((2, 2),),),
        args=lambda g: (g, np.zeros((2, 3)), np.array([[0, 2], [1, 1]]), 1),
    ),
]

AXES = (
    {},
    {"axis": 1},
    {"axis": 0, "keepdims": True},
    {"axis": (0, 2)},
    {"axis": -1, "keepdims": True},
    {"keepdims": True},
)
REDUCTION_SHAPES = (((2, 3, 4),),)

REDUCTIONS = [
    *[
        Row(p, REDUCTION_SHAPES, kwargs=kw)
        for p in (np.sum, np.mean, np.prod, np.max, np.amax, np.min, np.amin, np.var, np.std)
        for kw in AXES
    ],
    *[Row(p, (((5,),), ((),))) for p in (np.sum, np.mean, np.prod, np.max, np.min)],
    Row(np.var, REDUCTION_SHAPES, kwargs={"axis": 1, "ddof": 1}),
    Row(np.std, REDUCTION_SHAPES, kwargs={"ddof": 1}),
    Row(
        np.prod,
        (((2, 3),),),
        kwargs={"axis": 1},
        values=(np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 1.5]]),),
    ),
    Row(np.prod, (((4,),),), values=(np.array([1.5, 0.0, -2.0, 0.5]),)),
    Row(np.cumsum, (((5,),), ((2, 3),))),
    Row(np.cumsum, (((2, 3),),), kwargs={"axis": 1}),
    Row(np.cumsum, (((2, 3, 4),),), kwargs={"axis": -3}),
    Row(runtime.item_of, (((3,),), ((2, 3),)), args=lambda x: (x, 1)),
    Row(runtime.item_of, (((2, 3),),), args=lambda x: (x, 1, 2)),
    Row(runtime.item_of, (((1,),),)),
    Row(np.cumprod, (((5,),), ((2, 3),))),
    Row(np.cumprod, (((2, 3, 4),),), kwargs={"axis": 1}),
    Row(
        np.cumprod,
        (((2, 3),),),
        kwargs={"axis": -1},
        values=(np.array([[1.5, 0.0, 2.0], [0.0, 0.0, -1.0]]),),
    ),
]

SHAPE = [
    Row(np.transpose, (((2, 3),), ((2, 3, 4),), ((),))),
    Row(np.transpose, (((2, 3, 4),),), kwargs={"axes": (1, -1, 0)}),
    Row(np.reshape, (((2, 3),),), args=lambda x: (x, (3, 2))),
    Row(np.reshape, (((2, 3),),), args=lambda x: (x, -1), kwargs={"order": "F"}),
    Row(np.ravel, (((2, 3),), ((4,),))),
    Row(np.ravel, (((2, 3),),), kwargs={"order": "F"}),
    Row(np.expand_dims, (((2, 3),),), kwargs={"axis": 1}),
    Row(np.expand_dims, (((2, 3),),), kwargs={"axis": (0, -1)}),
    Row(np.squeeze, (((1, 3, 1),),)),
    Row(np.squeeze, (((1, 3, 1),),), kwargs={"axis": 2}),
    Row(np.swapaxes, (((2, 3, 4),),), args=lambda x: (x, 0, -1)),
    Row(np.moveaxis, (((2, 3, 4),),), args=lambda x: (x, 0, -1)),
    Row(np.moveaxis, (((2, 3, 4),),), args=lambda x: (x, (0, 1), (2, 0))),
    Row(np.flip, (((2, 3),),)),
    Row(np.delete, (((3, 4),),), args=lambda x: (x, 1, 1)),
    Row(np.delete, (((5,),),), args=lambda x: (x, [0, 3])),
    Row(np.flip, (((2, 3),),), kwargs={"axis": 1}),
    Row(np.broadcast_to, (((3, 1),), ((4,),), ((),)), args=lambda x: (x, (2, 3, 4))),
    Row(np.linspace, (((), ()), ((2,), (2,)), ((3,), ())), args=lambda a, b: (a, b, 4)),
    Row(
        np.linspace,
        (((2,), ()),),
        args=lambda a, b: (a, b, 3),
        kwargs={"endpoint": False, "axis": -1},
    ),
    Row(np.full, (((),), ((3,),)), args=lambda v: ((2, 3), v)),
    Row(np.full_like, (((),), ((3,),)), args=lambda v: (np.zeros((2, 3)), v)),
    Row(np.concatenate, (((2, 3), (1, 3)),), args=lambda x, y: ([x, y],)),
    Row(
        np.concatenate,
        (((2, 3), (2, 1), (2, 2)),),
        args=lambda *xs: (list(xs),),
        kwargs={"axis": -1},
    ),
    Row(np.concatenate, (((2, 3), (4,)),), args=lambda x, y: ((x, y),), kwargs={"axis": None}),
    Row(np.stack, (((2, 3), (2, 3)),), args=lambda x, y: ([x, y],)),
    Row(np.array, (((2, 3), (2, 3)),), args=lambda x, y: ([x, y],)),
    Row(np.asarray, (((3,), (3,)),), args=lambda x, y: ([x, y],)),
    Row(builtins.sum, (((3,), (3,), (3,)),), args=lambda *xs: (list(xs),)),
    Row(np.stack, (((2, 3), (2, 3), (2, 3)),), args=lambda *xs: (xs,), kwargs={"axis": -1}),
]

ASSEMBLY = [
    Row(np.tile, (((3,),), ((2, 3),)), args=lambda x: (x, (2, 1, 2))),
    Row(np.tile, (((2, 3),),), args=lambda x: (x, 2)),
    Row(np.repeat, (((4,),), ((2, 3),)), args=lambda x: (x, 2)),
    Row(np.repeat, (((2, 3),),), args=lambda x: (x, [1, 0, 3]), kwargs={"axis": 1}),
    Row(np.roll, (((5,),), ((2, 3),)), args=lambda x: (x, 2)),
    Row(np.roll, (((2, 3, 4),),), args=lambda x: (x, (1, -1), (0, 2))),
    Row(np.rollaxis, (((2, 3, 4),),), args=lambda x: (x, 2)),
    Row(np.rollaxis, (((2, 3, 4),),), args=lambda x: (x, 0, 2)),
    Row(np.rot90, (((2, 3),), ((2, 3, 4),))),
    Row(np.rot90, (((2, 3, 4),),), kwargs={"k": 3, "axes": (1, 2)}),
    Row(np.flipud, (((4,),), ((2, 3),))),
    Row(np.fliplr, (((2, 3),),)),
    Row(np.diag, (((3,),), ((3, 4),))),
    Row(np.diag, (((3,),), ((3, 4),)), kwargs={"k": -1}),
    Row(np.diagonal, (((3, 4),),)),
    Row(np.diagonal, (((2, 3, 4),),), kwargs={"offset": 1, "axis1": 2, "axis2": 0}),
    Row(np.tril, (((3, 4),), ((2, 3, 3),))),
    Row(np.triu, (((3, 4),),), kwargs={"k": 1}),
    Row(np.take, (((5,),), ((2, 3),)), args=lambda x: (x, [0, 2, 2, 4])),
    Row(np.take, (((2, 3),),), args=lambda x: (x, np.array([[1, 1], [0, 2]])), kwargs={"axis": 1}),
    Row(
        np.take_along_axis,
        (((2, 3),),),
        args=lambda x: (x, np.array([[2, 0, 0, 1], [1, 1, 2, 0]])),
        kwargs={"axis": 1},
    ),
    # one pick per row (a label per example: a plain scatter), and one index for every row
    Row(np.take_along_axis, (((3, 4),),), args=lambda x: (x, np.array([[2], [0], [3]]), 1)),
    Row(np.take_along_axis, (((3, 4),),), args=lambda x: (x, np.array([[1]]), 1)),
    Row(np.take_along_axis, (((2, 3, 4),),), args=lambda x: (x, np.array([[[0, 1, 1, 0]]]), 0)),
    Row(np.pad, (((3,),), ((2, 3),)), args=lambda x: (x, 1)),
    Row(np.pad, (((2, 3),),), args=lambda x: (x, ((1, 0), (2, 1))), kwargs={"mode": "reflect"}),
    Row(np.pad, (((4,),),), args=lambda x: (x, 2), kwargs={"mode": "edge"}),
    Row(np.pad, (((4,),),), args=lambda x: (x, (1, 3), "wrap")),
    Row(np.append, (((3,), (2,)), ((2, 3), ())), args=lambda x, y: (x, y)),
    Row(np.append, (((2, 3), (1, 3)),), args=lambda x, y: (x, y), kwargs={"axis": 0}),
    Row(np.atleast_1d, (((),), ((3,),))),
    Row(np.atleast_2d, (((3,),), ((2, 3),))),
    Row(np.atleast_3d, (((3,),), ((2, 3),))),
    Row(np.hstack, (((2, 3), (2, 1)), ((3,), (2,))), args=lambda x, y: ([x, y],)),
    Row(np.vstack, (((2, 3), (1, 3)), ((3,), (3,))), args=lambda x, y: ((x, y),)),
    Row(np.row_stack, (((2, 3), (1, 3)),), args=lambda x, y: ((x, y),)),
    Row(np.dstack, (((2, 3), (2, 3)),), args=lambda x, y: ([x, y],)),
    Row(np.column_stack, (((3,), (3, 2)),), args=lambda x, y: ([x, y],)),
    # a list result: `output` picks the piece (``y0, y1, y2 = np.split(x0, 3)``, ``return y1``)
    Row(np.split, (((6,),), ((2, 6),)), args=lambda x: (x, 3), kwargs={"axis": -1}, output=1),
    Row(np.split, (((6, 2),),), args=lambda x: (x, [1, 4]), output=2),
    Row(np.array_split, (((7,),),), args=lambda x: (x, 3), output=0),
    Row(np.hsplit, (((2, 4),),), args=lambda x: (x, 2), output=1),
    Row(np.vsplit, (((4, 2),),), args=lambda x: (x, [1]), output=1),
    Row(np.dsplit, (((1, 2, 4),),), args=lambda x: (x, 2), output=0),
    Row(np.sort, (((5,),), ((3, 4),))),
    Row(np.sort, (((3, 4),),), kwargs={"axis": 0}),
    Row(np.sort, (((3, 4),),), kwargs={"axis": None}),
    Row(np.partition, (((5,),), ((3, 4),)), args=lambda x: (x, 2)),
    Row(np.tensordot, (((2, 3, 4), (3, 4, 5)), ((3, 4), (3, 4)))),
    Row(np.tensordot, (((2, 3, 4), (4, 2)),), kwargs={"axes": ([0, 2], [1, 0])}),
    Row(np.tensordot, (((2, 3), (4,)),), kwargs={"axes": 0}),
    Row(np.tensordot, (((2, 3), (3, 5)),), kwargs={"axes": 1}),
    Row(np.kron, (((2, 3), (3, 2)), ((3,), (2,)), ((2,), (3, 2)))),
    Row(np.cross, (((3,), (3,)), ((4, 3), (3,)))),
    Row(np.cross, (((3, 4), (4, 3)),), kwargs={"axisa": 0, "axisc": 0}),
    Row(np.diff, (((5,),), ((3, 4),))),
    Row(np.diff, (((3, 5),),), kwargs={"n": 2, "axis": 0}),
]

MATRIX_PAIRS = (((3, 4), (4, 2)), ((4,), (4, 2)), ((3, 4), (4,)), ((4,), (4,)))
BATCHED_PAIRS = (
    ((2, 3, 4), (4, 5)),
    ((2, 3, 4), (2, 4, 5)),
    ((1, 3, 4), (2, 4, 2)),
    ((4,), (2, 4, 3)),
    ((2, 3, 4), (4,)),
)
SQUARE = (((3, 3),), ((2, 4, 4),))

LINALG = [
    Row(np.matmul, MATRIX_PAIRS + BATCHED_PAIRS),
    Row(operator.matmul, MATRIX_PAIRS + BATCHED_PAIRS),
    Row(
        np.dot,
        (*MATRIX_PAIRS, ((2, 3, 4), (5, 4, 2)), ((2, 3, 4), (4,)), ((), (3, 2)), ((3, 2), ())),
    ),
    Row(np.inner, (((3, 4), (2, 4)), ((4,), (4,)), ((2, 3, 4), (4,)), ((4,), (2, 4)), ((), (3,)))),
    Row(np.outer, (((3,), (4,)), ((2, 2), (3,)), ((), (2,)))),
    Row(np.einsum, (((3, 4), (4, 2)),), args=lambda a, b: ("ij,jk->ik", a, b)),
    Row(np.einsum, (((3, 4), (4, 2)),), args=lambda a, b: ("ij,jk", a, b)),
    Row(np.einsum, (((3, 4), (3, 4)),), args=lambda a, b: ("ij,ij->", a, b)),
    Row(np.einsum, (((3, 3),),), args=lambda a: ("ii->", a)),
    Row(np.einsum, (((3, 3),),), args=lambda a: ("ii->i", a)),
    Row(np.einsum, (((3, 4),),), args=lambda a: ("ij->ji", a)),
    Row(np.einsum, (((3, 4), (4,)),), args=lambda a, b: ("ij,k->ik", a, b)),
    Row(np.einsum, (((2, 3), (3, 4), (4,)),), args=lambda a, b, c: ("ij,jk,k->i", a, b, c)),
    Row(
        np.einsum,
        (((2, 3, 4), (4, 5)), ((3, 4), (4, 5)), ((1, 3, 4), (2, 4, 5))),
        args=lambda a, b: ("...ij,...jk->...ik", a, b),
    ),
    Row(
        np.einsum,
        (((2, 3), (2, 3)),),
        args=lambda a, b: ("ij,ij->ij", a, b),
        kwargs={"optimize": True},
    ),
    Row(np.trace, (((3, 3),), ((3, 4),))),
    Row(np.trace, (((3, 4, 2),),), kwargs={"offset": 1, "axis1": 1, "axis2": 0}),
    Row(np.trace, (((2, 3, 4),),), kwargs={"offset": -1, "axis1": -1, "axis2": 1}),
    Row(np.linalg.inv, SQUARE, domain=well_conditioned, tol=1e-5),
    Row(np.linalg.det, SQUARE, domain=well_conditioned),
    Row(np.linalg.slogdet, SQUARE, domain=well_conditioned, output=1),
    Row(
        np.linalg.slogdet,
        (((3, 3),),),
        output=1,
        values=(np.array([[0.0, 2.0, 1.0], [1.0, 0.5, 0.0], [3.0, 1.0, -1.0]]),),
    ),
    Row(
        np.linalg.solve,
        (
            ((3, 3), (3,)),
            ((3, 3), (3, 2)),
            ((2, 3, 3), (2, 3, 1)),
            ((2, 3, 3), (3, 2)),
            ((3, 3), (2, 3, 2)),
            ((2, 3, 3), (3,)),
        ),
        domain=(well_conditioned, (-2.0, 2.0)),
        tol=1e-5,
    ),
    Row(np.linalg.norm, (((5,),), ((2, 3),), ((2, 3, 4),))),
    *[Row(np.linalg.norm, (((2, 3, 4),),), kwargs=kw) for kw in AXES[1:5]],
    *[Row(np.linalg.norm, (((5,),),), kwargs={"ord": p}) for p in (1, 2, 3, 0.5, np.inf, -np.inf)],
    Row(np.linalg.norm, (((2, 3, 4),),), kwargs={"ord": 1, "axis": 1}),
    Row(np.linalg.norm, (((2, 3, 4),),), kwargs={"ord": np.inf, "axis": -1, "keepdims": True}),
    *[
        Row(np.linalg.norm, (((3, 4),),), kwargs={"ord": p})
        for p in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)
    ],
    *[
        Row(np.linalg.norm, (((2, 3, 4),),), kwargs={"ord": p, "axis": (2, 0)})
        for p in (None, "fro", "nuc", 1, 2, -np.inf)
    ],
    Row(np.linalg.norm, (((2, 3, 4),),), kwargs={"ord": 2, "axis": (1, 2), "keepdims": True}),
]

# the helpers at a transformed function's edges (runtime/boundaries.py), differentiated again:
# identities, whether or not the value is copied
EDGES = [
    Row(runtime.fresh_containers, (((3,),), ((),))),
    Row(runtime.unaliased, (((2, 3),),), args=lambda x: (x, (x, 1.0)), argnums=(0,)),
    Row(runtime.unaliased, (((3,),),), args=lambda x: (x, ()), argnums=(0,)),
]

TABLE = [*ELEMENTWISE, *INDEXING, *REDUCTIONS, *SHAPE, *ASSEMBLY, *LINALG, *EDGES, *MATRIX, *SCIPY]


# -- symbolic derivatives of the elementwise rules ----------------------------------------------


@dataclasses.dataclass(frozen=True)
class Symbolic:
    """An elementwise primitive written as a sympy formula of its (scalar) parameters."""

    primitive: Callable
    formula: Callable
    domain: object = (-2.0, 2.0)


def _sym(primitives, formula, domain=(-2.0, 2.0)):
    return [Symbolic(p, formula, domain) for p in primitives]


SYMBOLIC = [
    *_sym([operator.add, np.add], lambda x, y: x + y),
    *_sym([operator.sub, np.subtract], lambda x, y: x - y),
    *_sym([operator.mul, np.multiply], lambda x, y: x * y),
    *_sym([operator.truediv, np.divide], lambda x, y: x / y, ((-2.0, 2.0), POSITIVE)),
    *_sym([operator.neg, np.negative], lambda x: -x),
    *_sym([operator.pos, np.positive, builtins.float, np.float64, np.copy], lambda x: x),
    *_sym(
        [operator.pow, np.power, math.pow, builtins.pow], lambda x, y: x**y, (POSITIVE, (-2.0, 2.0))
    ),
    *_sym([operator.mod, np.mod], lambda x, y: x - y * sp.floor(x / y), ((0.1, 3.0), POSITIVE)),
    *_sym([np.square], lambda x: x**2),
    *_sym([np.sqrt, math.sqrt], sp.sqrt, POSITIVE),
    *_sym([np.absolute, builtins.abs, math.fabs], sp.Abs),
    *_sym([np.maximum, builtins.max], sp.Max),
    *_sym([runtime.relu, nn.relu], lambda x: sp.Max(x, 0)),
    *_sym([np.minimum, builtins.min], sp.Min),
    *_sym(
        [np.clip],
        lambda a, lo, hi: sp.Min(sp.Max(a, lo), hi),
        ((-2.0, 2.0), (-1.0, -0.5), (0.5, 1.0)),
    ),
    *_sym([np.exp, math.exp], sp.exp),
    *_sym([np.exp2], lambda x: 2**x),
    *_sym([np.expm1, math.expm1], lambda x: sp.exp(x) - 1),
    *_sym([np.log], sp.log, POSITIVE),
    *_sym([math.log], lambda x, base: sp.log(x) / sp.log(base), (POSITIVE, (1.5, 3.0))),
    *_sym([np.log2, math.log2], lambda x: sp.log(x, 2), POSITIVE),
    *_sym([np.log10, math.log10], lambda x: sp.log(x, 10), POSITIVE),
    *_sym([np.log1p, math.log1p], lambda x: sp.log(1 + x), POSITIVE),
    *_sym([np.logaddexp], lambda x, y: sp.log(sp.exp(x) + sp.exp(y))),
    *_sym([np.sin, math.sin], sp.sin),
    *_sym([np.cos, math.cos], sp.cos),
    *_sym([np.tan, math.tan], sp.tan, (-1.2, 1.2)),
    *_sym([np.arcsin, math.asin], sp.asin, UNIT),
    *_sym([np.arccos, math.acos], sp.acos, UNIT),
    *_sym([np.arctan, math.atan], sp.atan),
    *_sym([np.arctan2, math.atan2], sp.atan2),
    *_sym([runtime.safe_divide], lambda x, y: x / y, ((-2.0, 2.0), POSITIVE)),
    *_sym([runtime.scaled_power], lambda c, x, p: c * x**p, ((-2.0, 2.0), POSITIVE, (-2.0, 2.0))),
    *_sym([np.sinh, math.sinh], sp.sinh),
    *_sym([np.cosh, math.cosh], sp.cosh),
    *_sym([np.tanh, math.tanh], sp.tanh),
    *_sym([np.arcsinh, math.asinh], sp.asinh),
    *_sym([np.arccosh, math.acosh], sp.acosh, (1.2, 3.0)),
    *_sym([np.arctanh, math.atanh], sp.atanh, UNIT),
    *_sym([np.fabs], sp.Abs),
    *_sym([np.fmax], sp.Max),
    *_sym([np.fmin], sp.Min),
    *_sym([np.reciprocal], lambda x: 1 / x, POSITIVE),
    *_sym([np.sinc], lambda x: sp.sin(sp.pi * x) / (sp.pi * x), (0.1, 2.0)),
    *_sym([np.hypot], lambda x, y: sp.sqrt(x**2 + y**2)),
    *_sym([np.logaddexp2], lambda x, y: sp.log(2**x + 2**y, 2)),
    *_sym([np.deg2rad, np.radians, math.radians], lambda x: x * sp.pi / 180),
    *_sym([np.rad2deg, np.degrees, math.degrees], lambda x: x * 180 / sp.pi),
    *_sym([np.nan_to_num, np.real, np.real_if_close, np.conj], lambda x: x),
    *_sym([np.imag, np.angle], lambda x: sp.Integer(0), (0.1, 2.0)),
    *SCIPY_SYMBOLIC,
]

# elementwise rules the symbolic check leaves to the finite-difference rows, and why
SYMBOLIC_SKIPPED = {
    np.where: "its condition is boolean, not a real variable",
}

NONDIFFERENTIABLE = [
    np.floor,
    np.ceil,
    np.round,
    np.sign,
    np.argmax,
    np.argmin,
    np.argsort,
    np.nonzero,
    operator.lt,
    operator.le,
    operator.eq,
    operator.ne,
    operator.floordiv,
    np.less,
    np.equal,
    np.isnan,
    np.iscomplex,
    np.isrealobj,
    math.floor,
    builtins.round,
    builtins.len,
    np.shape,
    np.zeros_like,
    np.eye,
    *SCIPY_NONDIFFERENTIABLE,
]
