"""A check run in a forked copy of this process while this one goes on: the plan's validation
beside the wave packing.

After the kernel, :func:`spark_jobs.kernels.validate.validate_plan` (2–3 s of CPU at 10⁶
partitions) only reads the plan and the snapshot, and the wave packing, disk profile and
summary do not need its answer until the artifacts are written. On a machine with a second
core (idle by then: the ZooKeeper reads and the sizes parse are over) :func:`start` forks, the
child runs the check and reports one byte through a pipe: passed or not. :meth:`Pending.wait`
(before anything is written) reads it; on anything but "passed" — an invalid plan, a child
that died, no fork on this platform — it runs the check again in this process, so what is
raised is exactly what the check raises there (``PlanInvalid`` with every violation), and
nothing is written. The child touches no lock, logger or connection (pure computation on a
copy-on-write image) and leaves with ``os._exit``.

Failure: none of its own; the check's own exception, from :meth:`Pending.wait`.
"""

from __future__ import annotations

import os
import sys
from typing import Callable

PASSED = b"1"


class Pending:
    """A check started by :func:`start`: :meth:`wait` returns once it passed, or raises its error."""

    def __init__(self, check: Callable[[], None], pid: int | None, fd: int | None) -> None:
        self.check, self.pid, self.fd = check, pid, fd

    def wait(self) -> None:
        answer = b""
        if self.fd is not None:
            with os.fdopen(self.fd, "rb") as f:
                answer = f.read()
            os.waitpid(self.pid, 0)
        if answer != PASSED:
            self.check()                # here, so its exception (or a pass, after a lost child) is this process's


def start(check: Callable[[], None], fork: bool = True) -> Pending:
    """``check`` running in a forked child (``fork`` and the platform allowing), else nothing
    yet: :meth:`Pending.wait` runs it then."""
    if not (fork and hasattr(os, "fork") and sys.platform.startswith("linux")):
        return Pending(check, None, None)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                        # the child: check, say the outcome, leave without cleanup
        code = 0
        try:
            os.close(r)
            try:
                check()
                os.write(w, PASSED)
            except BaseException:       # noqa: BLE001 - the parent re-runs the check and raises
                code = 1
        finally:
            os._exit(code)
    os.close(w)
    return Pending(check, pid, r)
