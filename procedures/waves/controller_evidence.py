"""Evidence, gathered across polls, that the controller is not acting on a wave's node.

One poll that finds the wave's listed partitions untouched is no evidence: a controller under load
can take tens of seconds to start a large ``/admin/reassign_partitions``. :class:`ControllerWatch`
remembers since when the *same* controller (broker id and ``/controller_epoch``) has left them
unstarted while its session was alive (``/controller`` held), or since when ``/controller`` has been
absent; a new epoch or a started partition starts the count again. Only once that has lasted
``bound_s`` does :meth:`ControllerWatch.verdict` turn the observation into advice (force a controller
election), stating what was observed, for how long and over how many polls.

Pure: the observation (:func:`procedures.waves.stall_causes.controller_cause`), the
controller id and epoch and the time in, a new watch or a verdict out; it never raises.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from procedures.waves.stall_causes import StallCause

#: Seconds the same controller may leave a node unstarted before a person is told to move it. A
#: 2.4 controller starts a node within a second when idle; its event queue can hold it back for
#: tens of seconds on a large, busy cluster (ISR changes, a broker's restart being processed).
CONTROLLER_EVIDENCE_S = 60.0

FORCE_ELECTION = ("force a controller election: delete /controller (zookeeper-shell.sh <zk>/<chroot> delete "
                  "/controller; the stuck_reassignment runbook does it behind an approval) — the new controller "
                  "reads /admin/reassign_partitions and starts it — then clear execute_waves")


@dataclass(frozen=True)
class ControllerWatch:
    """What the polls so far saw of the controller (see the module docstring); empty when acting."""

    controller: int | None = None     # the broker in /controller (None: absent)
    epoch: int | None = None          # /controller_epoch
    since: float | None = None        # first poll of this controller and epoch not acting
    polls: int = 0

    def observe(self, cause: StallCause | None, controller: int | None, epoch: int | None,
                now: float) -> "ControllerWatch":
        """The watch after one poll: ``cause`` is the controller cause that poll saw, or None."""
        if cause is None:
            return ControllerWatch()
        if self.since is None or (controller, epoch) != (self.controller, self.epoch):
            return ControllerWatch(controller, epoch, now, 1)
        return replace(self, polls=self.polls + 1)

    def lasted(self, now: float) -> float:
        return 0.0 if self.since is None else max(0.0, now - self.since)

    def evidenced(self, now: float, bound_s: float) -> bool:
        """Whether the controller has not acted for at least ``bound_s`` (and more than one poll)."""
        return self.since is not None and self.polls > 1 and self.lasted(now) >= bound_s

    def observed(self, now: float) -> str:
        """What was seen, for how long: the words every message about the controller uses."""
        span = f"for {self.lasted(now):.0f}s over {self.polls} poll(s)"
        if self.controller is None:
            return f"/controller has been absent {span}: no broker is controller"
        return (f"the controller (broker {self.controller}, controller epoch {self.epoch}) has left the wave's "
                f"entries in /admin/reassign_partitions unstarted {span}, same epoch, its session alive "
                "(/controller held)")

    def verdict(self, cause: StallCause, now: float, bound_s: float) -> StallCause | None:
        """``cause`` restated with the evidence and the advice once it has lasted ``bound_s``; None before."""
        if not self.evidenced(now, bound_s):
            return None
        return StallCause(cause.partition, f"{cause.cause}; observed: {self.observed(now)}; {FORCE_ELECTION}",
                          True, cause.kind)
