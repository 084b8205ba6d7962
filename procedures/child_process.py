"""A job of this project run as a child process of a task: its output in the task log, bounded in time.

The plan job (``spark_jobs/plan_job.py``, :mod:`operators.plan.job`) and the rehearsal
(``python -m cli.main rehearse``, :mod:`operators.rehearsal.step`) run this way. A crashed or
killed job never takes the worker (or ``dag.test()``'s process) with it, the same command runs by
hand, and the layers the job composes (the planners' kernels, the emulator) are never imported by
``operators``: the job's files on disk are the only thing read back.

:class:`ChildJob` streams the child's stdout and stderr (merged) into the task log line by line,
kills the child when its deadline passes, and kills it too when the task is killed
(:meth:`ChildJob.terminate`, called from an operator's ``on_kill``).

Failure: :class:`ChildTimedOut` when the job is still running at its deadline (it is killed
first); any other outcome is the exit code, which the caller turns into its own error (it knows
what the job was for and what file it should have written).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_zk.errors import KafkaZkError

#: the repository root: the child runs there, so ``python -m cli.main`` and the plan job's file resolve
REPO_ROOT = Path(__file__).resolve().parents[1]
TAIL_LINES = 40
#: A job is no Airflow task and never reaches Airflow's metadata database. Inside a task Airflow 3's
#: supervisor sets these to ``airflow-db-not-allowed:///``, which SQLAlchemy cannot parse, so a child
#: that imports Airflow (the rehearsal runs operator code) would die at import; an in-memory SQLite
#: URL parses and holds nothing.
NO_METADATA_DB = {"AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "sqlite://", "AIRFLOW__CORE__SQL_ALCHEMY_CONN": "sqlite://"}


class ChildTimedOut(KafkaZkError):
    """A child job ran past its deadline and was killed."""


@dataclass
class ChildJob:
    """One child process: ``argv`` (the interpreter is prepended when ``python`` is true), its
    output logged through ``log`` (a :class:`logging.Logger`) as it comes, ``what`` naming it in
    errors."""

    argv: list[str]
    log: Any
    what: str
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen | None = None
    timed_out: bool = False
    tail: deque = field(default_factory=lambda: deque(maxlen=TAIL_LINES))   # its last lines, for the caller's error

    def run(self, timeout_s: float | None = None) -> int:
        """Run to the end (or to ``timeout_s`` seconds, then kill it and raise :class:`ChildTimedOut`);
        return the exit code."""
        argv = [sys.executable, *self.argv]
        self.log.info("%s: %s", self.what, " ".join(argv))
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
               **NO_METADATA_DB, **self.env}
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        env=env, cwd=str(REPO_ROOT))
        timer = threading.Timer(timeout_s, self._expire) if timeout_s is not None else None
        if timer is not None:
            timer.daemon = True
            timer.start()
        try:
            for line in self.process.stdout:
                self.log.info("%s", line.rstrip())
                self.tail.append(line.rstrip())
            code = self.process.wait()
        finally:
            if timer is not None:
                timer.cancel()
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        if self.timed_out:
            raise ChildTimedOut(f"{self.what} was still running after {timeout_s:g}s and was stopped; its output "
                                "is above in this log (raise the step's time limit if the input is that large)")
        return code

    def _expire(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.timed_out = True
            self.process.kill()

    def error_lines(self) -> list[str]:
        """The ``Error: ...`` lines among the last output lines (what a refusing CLI command printed)."""
        return [line for line in self.tail if line.startswith("Error:")]

    def terminate(self) -> bool:
        """Ask a running child to stop (an operator's ``on_kill``); False when none is running."""
        if self.process is None or self.process.poll() is not None:
            return False
        self.process.terminate()
        return True
