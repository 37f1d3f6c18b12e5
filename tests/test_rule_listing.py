"""`s2sgrad rules` and ``docs/rules.md``: the list users read before they write code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from s2sgrad import cli, rule_listing

DOCS = Path(__file__).resolve().parent.parent / "docs" / "rules.md"


def test_docs_rules_md_is_current():
    """Regenerate with ``s2sgrad rules --markdown > docs/rules.md``. (In a fresh process: rules
    other tests register for their own functions are no part of the list.)"""
    listing = subprocess.run(
        [sys.executable, "-m", "s2sgrad", "rules", "--markdown"],
        capture_output=True,
        text=True,
        check=True,
        cwd=DOCS.parent.parent,
    )
    assert DOCS.read_text() == listing.stdout


def test_the_list_has_rules_definitions_and_constants():
    listed = {entry.name: entry for entry in rule_listing.entries()}
    assert listed["numpy.sin"].reverse and listed["numpy.sin"].forward
    assert listed["numpy.median"].how == "definition"
    assert listed["numpy.argmax"].how == "no derivative"
    assert listed["a @ b (operator.matmul)"].forward
    assert not any(name.startswith(("s2sgrad.runtime", "runtime.")) for name in listed)


def test_cli_filters_by_name(capsys):
    assert cli.main(["rules", "cumprod"]) == 0
    out = capsys.readouterr().out
    assert "numpy.cumprod" in out and "numpy.sin" not in out
    assert cli.main(["rules", "no_such_function"]) == 0
    assert "no supported function matches" in capsys.readouterr().out


def test_every_listed_numpy_rule_is_a_numpy_function():
    for entry in rule_listing.entries():
        if entry.name.startswith("numpy.") and entry.how != "no derivative":
            obj = np
            for part in entry.name.split(".")[1:]:
                obj = getattr(obj, part)
            assert callable(obj), entry.name
