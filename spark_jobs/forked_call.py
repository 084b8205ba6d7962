"""Work run in a forked copy of this process while this one goes on: the CLI's ``snapshot.jsonl``
(1M partitions: ~1.6 s of CPU) written beside the kernel (cli/plan_zookeeper.py), a large plan's
move files beside its summary (spark_jobs/plan_job.py), off the GIL this process holds.

:func:`start` forks; the child runs the call and reports through a pipe: done, with the call's
short text result, or not. :meth:`Pending.wait` reads it; on anything but "done" — a call that
raised, a child that died, no fork on this platform — it runs the call again in this process,
so what is raised is exactly what the call raises there and a result is the call's own. A call
given here must be safe to run twice (a file written to a temporary name and renamed). The
child touches no lock, logger or connection (pure computation and its own file on a
copy-on-write image) and leaves with ``os._exit``.

The plan job writes a large plan's move files beside its summary this way only when the machine
has a core to spare (:func:`spark_jobs.plan_job.write_beside`): on a busy 2-core machine the child
took the core the main process needed (the main process waited 9–23 s more; BENCHMARKS.md), as
validating a 1M plan beside its wave packing did (that one is in-process).

Failure: none of its own; the call's own exception, from :meth:`Pending.wait`.
"""

from __future__ import annotations

import os
import sys
from typing import Callable

DONE = b"1"


class Pending:
    """A call started by :func:`start`: :meth:`wait` returns its result, or raises its error
    (the call runs once: a second ``wait`` returns the first one's result)."""

    def __init__(self, call: Callable[[], str | None], pid: int | None, fd: int | None) -> None:
        self.call, self.pid, self.fd = call, pid, fd
        self.finished, self.result = False, None

    def wait(self) -> str | None:
        if self.finished:
            return self.result
        answer = b""
        if self.fd is not None:
            fd, self.fd = self.fd, None
            with os.fdopen(fd, "rb") as f:
                answer = f.read()
            os.waitpid(self.pid, 0)
        if answer[:1] == DONE:
            self.result = answer[1:].decode("utf-8") if len(answer) > 1 else None
        else:
            self.result = self.call()   # here: its exception (or its result, after a lost child) is this process's
        self.finished = True
        return self.result

    def discard(self) -> None:
        """Wait for the child to end (its outcome unread, the call not run here): nothing of it
        runs on after this returns."""
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)
            os.waitpid(self.pid, 0)
        self.finished = True


def start(call: Callable[[], str | None], fork: bool = True) -> Pending:
    """``call`` running in a forked child (``fork`` and the platform allowing), else nothing
    yet: :meth:`Pending.wait` runs it then."""
    if not (fork and hasattr(os, "fork") and sys.platform.startswith("linux")):
        return Pending(call, None, None)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                        # the child: call, say the outcome, leave without cleanup
        code = 0
        try:
            os.close(r)
            try:
                result = call()
                data = DONE + (b"" if result is None else result.encode("utf-8"))
                while data:
                    data = data[os.write(w, data):]
            except BaseException:       # noqa: BLE001 - the parent runs the call again and raises
                code = 1
        finally:
            os._exit(code)
    os.close(w)
    return Pending(call, pid, r)
