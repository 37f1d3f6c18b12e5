"""Run checks in a worker process, so that a hang (or a crash of the interpreter) is a result.

The parent sends a program, waits at most `timeout` seconds for the outcome and otherwise kills
the worker and reports a hang. Workers start by fork (s2sgrad is already imported) and are
replaced every `RECYCLE` programs, so what compiled programs leave behind does not pile up.
"""

from __future__ import annotations

import multiprocessing
import tempfile
from pathlib import Path

from . import oracle

RECYCLE = 150


def _serve(connection, directory: str) -> None:
    while True:
        job = connection.recv()
        if job is None:
            return
        program, modes = job
        try:
            outcome = oracle.check(program, Path(directory), modes)
        except BaseException as error:
            outcome = oracle.Outcome(
                "failed", [oracle.Failure("oracle", "crash", f"{type(error).__name__}: {error}")]
            )
        connection.send(outcome)


class Worker:
    def __init__(self, directory: str | None = None):
        self.directory = directory or tempfile.mkdtemp(prefix="s2sgrad-fuzz-")
        self.process = None
        self.served = 0

    def _start(self) -> None:
        context = multiprocessing.get_context("fork")
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, self.directory), daemon=True)
        self.process.start()
        self.served = 0

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.join()
            self.process = None

    def check(self, program, modes=None, timeout: float = 60.0) -> oracle.Outcome:
        if self.process is None or self.served >= RECYCLE:
            self.stop()
            self._start()
        self.served += 1
        self.connection.send((program, modes))
        if self.connection.poll(timeout):
            try:
                return self.connection.recv()
            except EOFError:
                self.stop()
                return oracle.Outcome("failed", [oracle.Failure("all", "crash", "worker died")])
        self.stop()
        return oracle.Outcome("failed", [oracle.Failure("all", "hang", f"no answer in {timeout}s")])
