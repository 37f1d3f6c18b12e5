"""Unpacking found wrong by the differential fuzzer, kept as regression tests: each program is
checked in every mode (tests/fuzz/oracle.py) against central differences, and the errors
Python gives for a bad unpacking are kept."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from fuzz import oracle
from fuzz.program import Snippet

import s2sgrad as sg

GLOBALS = "GV = np.array([0.5, -1.0, 0.25])\nG0 = 0.7\nG1 = -0.4\n"

CASES = {
    # an array unpacked into its elements: reverse mode refused it, forward mode gave every
    # name but the first a zero tangent (a wrong number from sg.jvp and sg.jacobian)
    "array unpacked into elements": (
        """
        def f(v):
            u3, u4, u5 = np.cos(v)
            return u4 * u5 + u3
        """,
        [("v", "V")],
    ),
    "concatenation unpacked": (
        """
        def f(x, w):
            u1, u2, u3 = np.concatenate([((w) * (x))[:1], (w)[1:] * 0.5])
            return u3 * u1
        """,
        [("x", "S"), ("w", "V")],
    ),
    "array literal unpacked": (
        """
        def f(x, v):
            u3, ans, u4 = np.array([x * x, x, 0.75 * x])
            return u4 * u3 + np.sum((v)[1:] * (v)[:-1])
        """,
        [("x", "S"), ("v", "V")],
    ),
    "rows of a matrix unpacked": (
        """
        def f(v):
            a, b = np.outer(v[:2], v)
            return np.sum(a * np.sin(b))
        """,
        [("v", "V")],
    ),
    "array unpacked in a loop": (
        """
        def f(v):
            s = 0.0
            for k in range(2):
                a, b, c = np.exp(v * (k + 1))
                s = s + a * c - b
            return s
        """,
        [("v", "V")],
    ),
    "a user function's tuple unpacked": (
        """
        def pair(a):
            return np.sin(a), a * a

        def f(x, v):
            p, q = pair(x)
            return p * q + np.sum(v * p)
        """,
        [("x", "S"), ("v", "V")],
    ),
    # nested targets were refused ("unpack into plain names or item targets")
    "nested tuple targets": (
        """
        def h0(a, b=0.5, *, c=1.0):
            return a * b * c

        def f(x, v, y):
            y2 = np.full(3, 0.5) * y
            (u10, u11), u12 = (h0(x), 0.5), y2.copy()
            return u10 * u11 + np.sum((u12)[1:] * (v)[:-1])
        """,
        [("x", "S"), ("v", "V"), ("y", "V")],
    ),
    "nested targets with an item and an array": (
        """
        def f(v):
            h = [0.0, 1.0]
            (h[0], (a, b)), c = (np.sum(v * v), v[1:]), v[0]
            return h[0] * a + b * c + h[1]
        """,
        [("v", "V")],
    ),
    "enumerate of zip with a nested target": (
        """
        def f(v, w):
            s = 0.0
            for i, (a, b) in enumerate(zip(v, w)):
                s = s + (i + 1) * a * np.sin(b)
            return s
        """,
        [("v", "V"), ("w", "V")],
    ),
    "loop over pairs": (
        """
        def f(v):
            pairs = [(v[0], v[1]), (v[1] * v[2], v[0])]
            s = 0.0
            for a, b in pairs:
                s = s + a * np.sin(b)
            for (a, b), c in zip(pairs, v):
                s = s + a * b * c
            return s
        """,
        [("v", "V")],
    ),
    # second order: the generated vjp's ``L4.pop()`` (L4 a copy of the comprehension's list)
    # was dropped as dead code by the optimizer of the tangent sweep, so the adjoint loop
    # read the list one slot off (reverse Jacobian, hessian, hvp, grad of grad were zero)
    "comprehension appended to, read at a negative index": (
        """
        def rec0(a, n):
            pass

        def f(v):
            D2 = {"a": G1, "b": rec0(2.0, 0)}
            L4 = [np.sum(v * v) for e3 in v]
            L4.append(D2["b"])
            return L4[-4]
        """,
        [("v", "V")],
    ),
    "comprehension of elements appended to": (
        """
        def f(v):
            L = [np.sin(e) * e for e in v]
            L.append(0.5)
            L.append(v[0] * v[1])
            return L[-5] * L[-1] + L[-3]
        """,
        [("v", "V")],
    ),
    # a loop-carried value overwritten each iteration without being read: its adjoint is
    # reset to 0.0 in the adjoint loop, yet was taken for a full array in the next iteration
    # (split_like, the adjoint of np.concatenate, got the number 0.0: TypeError)
    "chained assignment of a concatenation in a loop": (
        """
        def f(x, v, y):
            T1 = (abs(x), np.array([x, x, y]))
            for i3, e4 in zip(v, GV):
                c8 = v = np.concatenate([(GV)[:1], (GV - T1[0])[1:] * 0.5])
            return np.sum(np.cumsum(np.sin(v)) * 0.5 * c8)
        """,
        [("x", "S"), ("v", "V"), ("y", "S")],
    ),
    # the mutation walk bound (p, q) to an item of zip(...) as a whole, which may be an
    # array sharing w's memory: q **= 2 was refused as a change to w (fuzz seed 1800061)
    "items of enumerate(zip(...)) updated as numbers": (
        """
        def f(x, w):
            total = 0.0
            for i, (p, q) in enumerate(zip(w, GV)):
                q **= 2
                p *= x
                total = total + p * q + i
            return total
        """,
        [("x", "S"), ("w", "V")],
    ),
    # a list literal of (vector, number) pairs: each target was bound to a whole pair, so
    # b *= ... on a number was refused as a change to the vectors' memory
    "pairs of a list literal updated as numbers": (
        """
        def f(x, w):
            total = 0.0
            for W, b in [(w * x, np.max(w)), (np.cumsum(w) * 0.5, x / (1.0 + x * x))]:
                b *= np.tanh(x)
                total = total + np.sum(W * b)
            return total
        """,
        [("x", "S"), ("w", "V")],
    ),
    "a concatenation overwritten in a loop": (
        """
        def f(x, v):
            w = v * 1.0
            for e in v:
                w = np.concatenate([(GV * x)[:1], (GV * e)[1:] * 0.5])
            return np.sum(np.sin(w))
        """,
        [("x", "S"), ("v", "V")],
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_unpacking_is_right_in_every_mode(name, tmp_path):
    source, params = CASES[name]
    program = Snippet(GLOBALS + textwrap.dedent(source), params)
    outcome = oracle.check(program, tmp_path, oracle.MODES)
    assert oracle.right_or_refused_by_its_mode(outcome), "\n".join(map(str, outcome.failures))


def _unpack_two(v):
    a, b = np.cos(v)
    return a * b


def test_unpacking_an_array_of_another_length_is_a_value_error():
    x = np.array([0.3, 0.5, 0.9])
    with pytest.raises(ValueError, match="too many values to unpack"):
        sg.grad(_unpack_two)(x)
    with pytest.raises(ValueError, match="too many values to unpack"):
        sg.jvp(_unpack_two, (x,), (np.ones(3),))
    with pytest.raises(ValueError, match="not enough values to unpack"):
        sg.grad(_unpack_two)(np.array([0.3]))


def test_unpacked_elements_have_their_own_tangents():
    x = np.array([0.3, 0.5, 0.9])
    _, tangent = sg.jvp(_unpack_two, (x[:2],), (np.array([0.0, 1.0]),))
    assert np.isclose(tangent, -np.sin(0.5) * np.cos(0.3))  # d/dx1 cos(x0) cos(x1)


def _slogdet_kept_whole(a):
    result = np.linalg.slogdet(a)
    return result[1]


@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_a_tuple_primitive_not_unpacked_is_refused_in_every_mode(mode):
    a = np.array([[2.0, 0.3], [0.1, 1.5]])
    with pytest.raises(sg.TransformError, match=r"unpack the result of numpy\.linalg\.slogdet"):
        if mode == "grad":
            sg.grad(_slogdet_kept_whole)(a)
        else:
            sg.jvp(_slogdet_kept_whole, (a,), (np.eye(2),))


def _slogdet_into_items_and_tuples(a):
    out = [0.0, 0.0]
    sign, out[1] = np.linalg.slogdet(a)
    (_, logdet2), k = np.linalg.slogdet(a * 2.0), 1.0
    return out[1] * sign + logdet2 * k


def test_a_tuple_primitive_unpacked_into_items_and_nested_targets():
    a = np.array([[2.0, 0.3], [0.1, 1.5]])
    closed_form = 2.0 * np.linalg.inv(a).T  # d/dA of 2 log|det A| + const
    assert np.allclose(sg.grad(_slogdet_into_items_and_tuples)(a), closed_form)
    _, tangent = sg.jvp(_slogdet_into_items_and_tuples, (a,), (np.eye(2),))
    assert np.isclose(tangent, np.sum(closed_form * np.eye(2)))
