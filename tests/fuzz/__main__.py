"""``python -m tests.fuzz``: the long run of the whole-language differential fuzzer.

    python -m tests.fuzz --minutes 30 --out fuzz-failures      # a campaign
    python -m tests.fuzz --replay fuzz-failures/000_....pickle  # re-check one reproducer

Each failing class's first program is reduced and written to ``--out`` as a readable ``.py``
(the failure in its header) beside a ``.pickle`` that ``--replay`` checks again.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import tempfile
import time
from pathlib import Path

# every program is new: storing its transforms in the user's on-disk cache would only evict
# the user's entries (and cost each check the writes and the size bound's scans); set before
# s2sgrad is imported, so the workers inherit it
os.environ.setdefault("S2SGRAD_CACHE_DIR", "off")

from . import oracle
from .campaign import Campaign


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.fuzz", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--programs", type=int, default=None, help="stop after this many")
    parser.add_argument("--seed", type=int, default=0, help="the first program's seed")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--size", type=int, default=6, help="top-level statements, at most")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per program")
    parser.add_argument("--out", type=Path, default=Path("fuzz-failures"))
    parser.add_argument("--no-reduce", action="store_true")
    parser.add_argument("--replay", type=Path)
    options = parser.parse_args(argv)
    if options.replay:
        program = pickle.loads(options.replay.read_bytes())
        print(program.render())
        outcome = oracle.check(program, Path(tempfile.mkdtemp()))
        print(outcome.status)
        for failure in outcome.failures:
            print(failure)
        return 0 if outcome.status != "failed" else 1
    campaign = Campaign(
        options.out, options.jobs, not options.no_reduce, options.size, options.timeout
    )
    stop = options.programs if options.programs is not None else 10**12
    deadline = time.monotonic() + options.minutes * 60
    campaign.run(range(options.seed, options.seed + stop), deadline)
    text = campaign.summary()
    (options.out / "summary.md").write_text(text + "\n")
    print(text)
    return 1 if campaign.status["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
