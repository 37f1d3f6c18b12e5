"""Programs the differential fuzzer found wrong (results aliasing globals, generated code the
front end refused, copies of constants, callees' defaults, list slots under reverse-mode
Jacobians), reduced, kept as regression tests: each is checked in every mode
(tests/fuzz/oracle.py) against central differences, for aliasing and for mutation."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from fuzz import oracle
from fuzz.program import Snippet
from numerical import numerical_jacobian

import s2sgrad as sg

GLOBALS = "GV = np.array([0.5, -1.0, 0.25])\nG0 = 0.7\nG1 = -0.4\nGL = [0.3, -0.2]\n"

CASES = {
    # sg.vjp called f as written and returned its value unaliased from the arguments only:
    # the global f returns came back as the primal output itself
    "returns a global": (
        """
        def f(v, w):
            return GV
        """,
        [("v", "V"), ("w", "V")],
        "V",
    ),
    "returns a view of a global, under a branch": (
        """
        def f(v, w):
            if np.sum(w) > 10.0:
                return v * 2.0
            return GV[::-1]
        """,
        [("v", "V"), ("w", "V")],
        "V",
    ),
    # a callee called as written (its result carries no derivative) returns its own global:
    # the entry's result was unaliased only from what the entry itself names
    "a callee returns its global": (
        """
        def h():
            return GV

        def f(v, w):
            return h()
        """,
        [("v", "V"), ("w", "V")],
        "V",
    ),
    "a callee returns its global, through another callee": (
        """
        def h(n):
            return GV[:n]

        def k(v):
            return h(3)

        def f(v, w):
            return k(v)
        """,
        [("v", "V"), ("w", "V")],
        "V",
    ),
    # a conditional expression whose branch is a bare local name copied that name as written,
    # not its current version: the value of the first assignment (a silent wrong value and
    # derivative), or a version assigned on another path only (UnboundLocalError; a
    # TransformError when generated code was transformed again, reproducers 028/029)
    "a conditional expression reads a reassigned name": (
        """
        def f(x, w):
            y = x * 2.0
            y = y * x
            return (y if w < 5.0 else x) + (w and y)
        """,
        [("x", "S"), ("w", "S")],
        "S",
    ),
    "a conditional expression after an early return in nested ifs": (
        """
        def f(x, v, w):
            if w > 5.0:
                if G0 < 0.5:
                    return x * 2.0
            s9 = abs(G0) * x
            T10 = (GL[0], np.cumsum(v) * 0.5)
            return (s9 if 0.25 < 0.5 else T10[0]) + np.sum(T10[1] * x)
        """,
        [("x", "S"), ("v", "V"), ("w", "S")],
        "S",
    ),
    "a conditional expression after an early return, generated code transformed again": (
        """
        def f(x, v, w):
            if w < 5.0:
                if G0 < 0.5:
                    return x * 2.0
            s9 = abs(G0) * x
            T10 = (GL[0], np.cumsum(v) * 0.5)
            return (s9 if 0.25 < 0.25 else T10[0]) + np.sum(T10[1] * x) * np.max(v)
        """,
        [("x", "S"), ("v", "V"), ("w", "S")],
        "S",
    ),
    # a method of a constant (``GV.copy()``: a bound method of a global array) was a
    # primitive with no rule, asked for one once an item write made its result active
    "a copy of a global written with an active value": (
        """
        def f(x):
            y1 = (GV).copy()
            y1[0] += x * x
            return np.sum(y1 * y1)
        """,
        [("x", "S")],
        "S",
    ),
    "a copy of a closure's array written in a loop": (
        """
        def make(k):
            C = np.array([0.5, -1.0, 0.25])

            def f(x):
                y5 = C.copy()
                n7 = 0
                while n7 < 2:
                    y5[::2] *= np.tanh(x) + k
                    n7 += 1
                return y5[-1] / (1.0 + x ** 2)

            return f

        f = make(1.1)
        """,
        [("x", "S")],
        "S",
    ),
    "a copy of a global list written with an active value": (
        """
        def f(x, v):
            L2 = GL.copy()
            L2[1] = x * np.sum(v)
            return L2[0] + L2[1] * x
        """,
        [("x", "S"), ("v", "V")],
        "S",
    ),
    # batched forward sweeps (reverse-mode Jacobians, Hessians): a constant written into a
    # list slot left an unbatched 0.0 among batched tangents (reproducer 039: a (2, 2) tangent
    # for a (1, 2) slot), and a number's batched tangent written into a slice of an array was
    # lined up with the slice's last axis instead of the directions (a wrong Jacobian)
    "a list slot written, then read under a reverse-mode Jacobian": (
        """
        def f(v):
            L4 = [G1 + GV[0], 3. + v[0], np.sum(v[1:] * v[:-1])]
            L4[2] = L4[-3] * np.sum(v[1:] * GV[:-1])
            s7 = np.sum(0.25 * GV * np.sqrt(1.0 + v * v))
            return s7 - v[-1] + L4[2]
        """,
        [("v", "V")],
        "S",
    ),
    "a constant written into a list slot": (
        """
        def f(v, x):
            L = [v[0] * x, v * x, x * x]
            L[1] = GV
            L[2] = 0.5
            return np.sum(L[1] * v) * L[0] + np.sum((L[2] * v) * x)
        """,
        [("v", "V"), ("x", "S")],
        "S",
    ),
    # the adjoint of ``y[1:] = s`` for a number s skipped the sum over the slots: a gradient
    # shaped like the slice
    "a number written into a slice of an array": (
        """
        def f(x, v):
            y = v * 1.0
            y[1:] = x * 2.0 + v[0] * 3.0
            return y * v
        """,
        [("x", "S"), ("v", "V")],
        "V",
    ),
    # ``GV[::-1] * 1.0`` folded to the view ``GV[::-1]`` (the guard knew only plain names):
    # the item write that followed changed the global (fuzz campaign seed 50831)
    "a view of a global times 1.0, written into": (
        """
        def f(v, w):
            y1 = ((GV)[::-1]) * 1.0
            y1[1] += 0.75
            y2 = np.reshape(GV, (3,)) + 0.0
            y2[0] = w[1]
            return 0.75 + np.sum(v * y1) + np.sum(y2 * w)
        """,
        [("v", "V"), ("w", "V")],
        "S",
    ),
    # the adjoint of np.cumsum given a lazily broadcast number (the adjoint of a value
    # overwritten in a loop) could not reshape it (fuzz campaign seed 50302)
    "a cumulative sum overwritten in a loop": (
        """
        def f(v, y, w):
            s1 = 0.5
            for i2 in range(3):
                w = np.cumsum(v) * 0.5 + np.maximum(GV, y)
            return np.max(np.maximum(w, s1))
        """,
        [("v", "V"), ("y", "S"), ("w", "V")],
        "S",
    ),
    # sum(items) gave each item the adjoint of the whole sum: a number among vectors got a
    # vector, which reducing it to the number's shape could not reshape (a callee summing its
    # *args, kept a call by its dict write)
    "a sum of a vector and numbers, in a callee": (
        """
        def g(*xs):
            D = {"b": 0.7}
            D["b"] = 0.5
            return sum(v * v * D["b"] for v in xs)

        def f(w, s):
            return np.sum(g(w, s * w[0], 2.0 * s))
        """,
        [("w", "V"), ("s", "S")],
        "S",
    ),
    # the start of sum() got the adjoint of the whole sum: a number starting a sum of vectors
    # had a vector gradient, silently; and in batched forward mode the number's tangent was
    # added to the vectors' with its axis of directions where theirs are elements
    "a number starting a sum of vectors": (
        """
        def f(w, s):
            t = sum([w, w * 2.0], s * s)
            return np.sum(t * s)
        """,
        [("w", "V"), ("s", "S")],
        "S",
    ),
    # a list's adjoint plus unstack's list of arrays (the adjoint of np.stack), in the
    # gradient that hvp differentiates again: taken for an array plus a list, read as one
    # array (fuzz seed 3000633, while values that may be lists were being introduced)
    "a stacked list's adjoint, differentiated again": (
        """
        def f(x, v):
            d = [np.pad(v[1:], (1, 0), constant_values=x)]
            y = 0.5
            for i in range(2):
                y += np.sum(np.stack(d), axis=0)
                if i == 0:
                    return np.sum(np.kron(d[-1], (y + v)[:2]))
            return d[0] @ (v * GV[2])
        """,
        [("x", "S"), ("v", "V")],
        "S",
    ),
    # the value of value_and_grad, moved by the optimizer past the backward sweep, read a
    # view (np.flipud) of an array whose slots the sweep puts back: a silently wrong value
    # (the list of views the optimizer knew lacked flipud; fuzz seed 3200498, pre-existing)
    "a view read by the value, of an array the backward sweep restores": (
        """
        def f(y, w):
            y1 = np.full(3, 0.5)
            for i2 in range(1):
                y1[1:3] += y
            c3 = 0.5
            return np.sum(np.pad(w[1:], (1, 0), constant_values=c3)[1:] * np.flipud(y1)[:-1])
        """,
        [("y", "S"), ("w", "V")],
        "S",
    ),
    "a number starting a sum of vectors, the sum returned": (
        """
        def f(w, s):
            return sum([w * s, w * 2.0], s * s)
        """,
        [("w", "V"), ("s", "S")],
        "V",
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_reduced_fuzz_program_is_right_in_every_mode(name, tmp_path):
    source, params, out_kind = CASES[name]
    program = Snippet(GLOBALS + textwrap.dedent(source), params, out_kind)
    outcome = oracle.check(program, tmp_path, oracle.modes_for(program, 7))
    assert oracle.right_or_refused_by_its_mode(outcome), "\n".join(map(str, outcome.failures))


def _number_into_a_slice(x):
    y = np.zeros(3)
    y[1:] = x[0] * 2.0 + x[1] * 3.0
    return y


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_a_number_written_into_a_slice_has_its_jacobian(mode):
    # two directions and a slice of two slots: the directions were written along the slots
    jacobian = sg.jacobian(_number_into_a_slice, mode=mode)(np.array([0.3, 0.7]))
    np.testing.assert_allclose(jacobian, [[0.0, 0.0], [2.0, 3.0], [2.0, 3.0]])


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_the_adjoint_of_cumsum_takes_a_lazily_broadcast_number(axis):
    from s2sgrad.runtime import reverse_cumsum

    a = np.arange(6.0).reshape(2, 3)
    full = np.ones(a.size if axis is None else a.shape)
    np.testing.assert_allclose(reverse_cumsum(2.0, a, axis), reverse_cumsum(2.0 * full, a, axis))


def _unpacks_an_array(v, y):
    u1, _u2, u3 = np.array([np.dot(v, v), y, y])
    return u1 * u3


def test_unpacking_one_array_gives_each_name_its_element_in_both_modes():
    # forward mode gave the first name the whole array's tangent and the others none (then
    # it was refused; the normal form now reads the elements one by one)
    v, y = np.array([0.3, -0.5, 0.8]), 0.3
    want_v = numerical_jacobian(lambda a: _unpacks_an_array(a, y), v)
    want_y = numerical_jacobian(lambda b: _unpacks_an_array(v, b), y)
    grad_v, grad_y = sg.grad(_unpacks_an_array, wrt=(0, 1))(v, y)
    np.testing.assert_allclose(grad_v, want_v, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(grad_y, want_y, rtol=1e-6, atol=1e-9)
    _, tangent = sg.jvp(_unpacks_an_array, (v, y), (v, 1.0))
    np.testing.assert_allclose(tangent, want_v @ v + want_y, rtol=1e-6, atol=1e-9)
    jac = sg.jacobian(_unpacks_an_array, mode="forward")(v, y)
    np.testing.assert_allclose(jac, want_v, rtol=1e-6, atol=1e-9)
