"""Test-session setup: the on-disk cache of generated code lives in a temporary directory, so
the suite never reads (or writes) a user's real cache and every run starts cold. Tests of the
cache itself set their own directory."""

import os
import tempfile

os.environ["S2SGRAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="s2sgrad-test-cache-")
