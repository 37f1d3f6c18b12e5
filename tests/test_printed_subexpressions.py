"""Subexpressions printed back to text inside the compiler keep the parentheses that
Python's precedence needs: passes build trees without them."""

from __future__ import annotations

import libcst as cst
from s2sgrad.transforms.diagonal import _folded


def test_folded_arithmetic_respects_precedence():
    # (1.0 + 2.0) * 3.0 built as a tree: printed without parentheses it read 1.0 + 2.0 * 3.0
    tree = cst.BinaryOperation(
        cst.BinaryOperation(cst.Float("1.0"), cst.Add(), cst.Float("2.0")),
        cst.Multiply(),
        cst.Float("3.0"),
    )
    assert float(_folded(tree).value) == 9.0


def test_folded_negative_zero_is_a_valid_literal():
    # 0.0 * -1.0 is -0.0: written as one Float node it raised CSTValidationError (seed 44449)
    tree = cst.BinaryOperation(
        cst.Float("0.0"), cst.Multiply(), cst.UnaryOperation(cst.Minus(), cst.Float("1.0"))
    )
    folded = _folded(tree)
    text = cst.Module(body=()).code_for_node(folded)
    assert eval(text) == 0.0 and str(eval(text)) == "-0.0"
