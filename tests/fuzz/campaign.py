"""A fuzzing campaign: programs by seed, checked in workers, failures grouped by class,
the first program of each class reduced and written out as a reproducer."""

from __future__ import annotations

import collections
import dataclasses
import pickle
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import oracle
from .reduce import reduce
from .runner import Worker
from .statements import generate


def class_of(failure: oracle.Failure) -> tuple:
    """What makes two failures the same bug class (the mode only where it is the clue)."""
    if failure.kind == "rejected":
        return ("rejected", _refusal(failure.detail))
    if failure.kind == "crash" and failure.detail.startswith(oracle.REFUSED_INSIDE):
        return ("crash", "refused inside generated code", _refusal(failure.detail))
    if failure.kind == "crash":
        where = "generated code" if failure.where.startswith("generated:") else failure.where
        return ("crash", failure.detail.split(":")[0], where)
    if failure.kind in ("hang", "invalid"):
        return (failure.kind, failure.detail.split("(")[0][:60])
    second = failure.mode in oracle.SECOND_ORDER
    return (failure.kind, "second order" if second else "first order")


def _refusal(detail: str) -> str:
    """A refusal's message without its places and the names in it: its class."""
    message = detail.removeprefix(oracle.REFUSED_INSIDE).split(": ", 1)[-1]
    message = re.sub(r"<[^>]*>:\d+:\d+: |\S+:\d+:\d+: ?|\(used at [^)]*\)", "", message)
    message = re.sub(r"fuzz_program_\d+_\d+", "…", message)  # (the program's module)
    return re.sub(r"'[^']*'", "'…'", message).split(": write")[0][:90]


@dataclasses.dataclass
class Found:
    count: int = 0
    modes: set = dataclasses.field(default_factory=set)
    seeds: list = dataclasses.field(default_factory=list)
    reproducer: str = ""


PROGRESS_EVERY = 100  # programs between rewrites of summary.md


class Campaign:
    def __init__(
        self, out: Path | None, jobs: int, reduce_failures: bool, size: int, timeout: float
    ):
        self.out, self.jobs, self.reduce, self.size = out, jobs, reduce_failures, size
        self.timeout = timeout
        self.classes: dict[tuple, Found] = collections.defaultdict(Found)
        self.status = collections.Counter()
        self.lock = threading.Lock()
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)

    def run(self, seeds, deadline: float) -> None:
        seeds = iter(seeds)

        def work() -> None:
            worker = Worker()
            try:
                while time.monotonic() < deadline:
                    with self.lock:
                        seed = next(seeds, None)
                    if seed is None:
                        return
                    self.one(worker, seed)
            finally:
                worker.stop()

        with ThreadPoolExecutor(self.jobs) as pool:
            for future in [pool.submit(work) for _ in range(self.jobs)]:
                future.result()

    def one(self, worker: Worker, seed: int) -> None:
        program = generate(seed, self.size)
        outcome = worker.check(program, timeout=self.timeout)
        new = []
        with self.lock:
            self.status[outcome.status] += 1
            if self.out is not None and sum(self.status.values()) % PROGRESS_EVERY == 0:
                # a campaign stopped early (killed) still leaves its counts behind
                (self.out / "summary.md").write_text(self.summary() + "\n")
            seen = set()
            for failure in outcome.failures:
                key = class_of(failure)
                found = self.classes[key]
                found.modes.add(failure.mode)
                if key in seen:
                    continue
                seen.add(key)
                found.count += 1
                found.seeds.append(seed)
                if found.count == 1:
                    new.append((key, failure))
        for key, failure in new:
            self.write(worker, key, program, failure)

    def write(self, worker: Worker, key: tuple, program, failure) -> None:
        if self.out is None:
            return
        if self.reduce and failure.kind not in ("invalid",):
            modes = (failure.mode,) if failure.mode in oracle.MODES else None

            def still_fails(candidate) -> bool:
                outcome = worker.check(candidate, modes, timeout=self.timeout)
                return any(class_of(f) == key for f in outcome.failures)

            program = reduce(program, still_fails)
        with self.lock:
            number = len([f for f in self.classes.values() if f.reproducer])
            stem = re.sub(r"[^A-Za-z0-9]+", "_", "_".join(key[:3]))[:60].strip("_")
            path = self.out / f"{number:03d}_{stem}.py"
            self.classes[key].reproducer = str(path)
        header = [f"# fuzz failure class: {key}", f"# seed {program.seed}; first failure:"]
        header += ["#   " + line for line in str(failure).splitlines()[:12]]
        header += [f"# replay: python -m tests.fuzz --replay {path.with_suffix('.pickle')}", ""]
        path.write_text("\n".join(header) + "\n" + program.render())
        path.with_suffix(".pickle").write_bytes(pickle.dumps(program))

    def summary(self) -> str:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.status.items()))
        lines = [
            f"programs: {sum(self.status.values())} ({counts})",
            "",
            "| programs | class | modes | seeds | reproducer |",
            "|---|---|---|---|---|",
        ]
        for key, found in sorted(self.classes.items(), key=lambda kv: -kv[1].count):
            modes = (
                ", ".join(sorted(found.modes)) if len(found.modes) < len(oracle.MODES) else "all"
            )
            lines.append(
                f"| {found.count} | {' / '.join(key)} | {modes} | {_seeds(key, found.seeds)} | "
                f"{Path(found.reproducer).name if found.reproducer else ''} |"
            )
        return "\n".join(lines)


SEEDS_LISTED = 50  # of a class that is a bug (a refusal class lists its first seed only)


def _seeds(key: tuple, seeds: list) -> str:
    """Every seed of a wrong, crash or hang class (the reproducer is the first one's only, and
    a second program of a class may be a second bug), the first of a refusal class."""
    shown = seeds[:1] if key[0] == "rejected" else seeds[:SEEDS_LISTED]
    more = f" and {len(seeds) - len(shown)} more" if len(seeds) > len(shown) else ""
    return ", ".join(map(str, shown)) + more
