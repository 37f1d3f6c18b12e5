"""Test-session setup: the on-disk cache of generated code lives in a temporary directory, so
the suite never reads (or writes) a user's real cache and every run starts cold; the directory
is removed when the session ends, so runs leave nothing behind in /tmp. Tests of the cache
itself set their own directory (under pytest's `tmp_path`).

The directory is made here, when this file is imported, rather than in a fixture: test modules
may transform functions while they are collected, before any fixture runs."""

import os
import shutil
import tempfile

import pytest

SESSION_CACHE = tempfile.mkdtemp(prefix="s2sgrad-test-cache-")
os.environ["S2SGRAD_CACHE_DIR"] = SESSION_CACHE


def pytest_unconfigure(config):
    """Remove the session's cache directory (subprocesses of the tests wrote there too)."""
    shutil.rmtree(SESSION_CACHE, ignore_errors=True)


@pytest.fixture
def calls_stay_calls(monkeypatch):
    """Compile with every call of a user function kept a call (``S2SGRAD_INLINE=0``, which
    subprocesses inherit; part of every cache key), for tests of the forward/backward halves
    such calls generate: small callees are otherwise written out where they are called
    (`transforms/anf_inline.py`)."""
    monkeypatch.setenv("S2SGRAD_INLINE", "0")
