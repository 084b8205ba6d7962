"""The executor's own code, driven in-process against an emulated cluster on its simulated clock.

:class:`RehearsalExecutor` is :class:`operators.reassignment.execute.ExecuteWavesOperator` with four
seams replaced, nothing else (:class:`RehearsalDemote` and :class:`RehearsalElection` are the
runbooks' ``demote`` and final election steps with the first of them): its ZooKeeper session is the emulator's private one (its writer
audits to the rehearsal folder), its clock is the emulator's simulated time as epoch seconds,
the windows it obeys are handed in (the run's windows file, for the real cluster's connection id
and runbook), and ``defer`` hands the trigger back to :func:`drive` instead of raising Airflow's
``TaskDeferred``. It needs no approval: it can only ever write to the private emulator.

:func:`drive` runs the operator's entry points as Airflow would: ``execute``, then, per deferral,
the trigger's first event fed to ``execute_complete``, or — for a window pause — the simulated
clock jumped to the opening (nothing of the run copies while it waits between waves) and
``resume_after_window``. The wave trigger is :class:`operators.triggers.reassignment.WaveDoneTrigger`
itself (:class:`RehearsalWaveTrigger` only gives it the emulator's client and clock — one that
wakes when the controller deletes the wave's node, :data:`WAVE_END` — and samples the brokers'
disks at each poll); after a wave's ``done`` the drive lets the run's gap pass (its executor seeing
the wave done and writing the next: :class:`planning.wave_time.WaveCosts`) before
``execute_complete``. Simulated time runs only while the trigger sleeps, and then to
exactly its wake-up, after the emulator has heard the executor's writes
(:meth:`kafka_sim.cluster.EmulatedCluster.clock_runs_until`); it stands still while the executor or
the trigger works — the caller holds the clock (``cluster.clock_held()``) around the drive and the
demote and election steps (:mod:`cli.rehearsal_run`). So the timeline does not depend on how loaded this machine is: two rehearsals of
one plan give the same timeline.

Failure: what the executor raises ends the drive and is returned as the rehearsal's problem
(:class:`DriveOutcome`), never raised: a rehearsal that finds a stall has done its job.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from kafka_zk.errors import KafkaZkError, WriteNotApproved
from planning.wave_time import WaveCosts
from procedures.run_folder import RunFolder
from operators.base import as_bool
from operators.reassignment.execute import ExecuteWavesOperator, build_wave_book
from operators.reassignment.leadership import DemoteOperator, ElectPreferredLeadersOperator
from procedures.waves.book import DONE, WaveBook
from operators.triggers.reassignment import WaveDoneTrigger
from procedures.windows.guard import window_gate
from procedures.windows.spec import WindowsFile

ACTOR = "kafka-runbook rehearse (emulated copy)"
COPY_CHROOT_PREFIX = "/kafka-rehearsal-"


#: the emulator's history kind at which a wave trigger's sleep ends early: the controller deleted
#: ``/admin/reassign_partitions``, its last move done (kafka_sim/reassign.py)
WAVE_END = frozenset({"reassign_node_deleted"})


class SimEpochClock:
    """The emulator's simulated seconds as epoch seconds from ``epoch0`` (the Clock protocol of
    :mod:`operators.triggers.clock`); a sleep lasts until that much simulated time has passed, or
    until one of the ``wake_on`` events of the emulator's history happens (the wave trigger's clock:
    :data:`WAVE_END`)."""

    def __init__(self, cluster: Any, epoch0: float, wake_on: frozenset[str] = frozenset()) -> None:
        self.cluster = cluster
        self.epoch0 = float(epoch0)
        self.wake_on = wake_on

    def time(self) -> float:
        return self.epoch0 + self.cluster.now()

    async def sleep(self, seconds: float) -> None:
        """The only time a drive lets simulated time run (see :func:`drive`), to exactly the wake-up."""
        until = self.cluster.now() + max(0.0, float(seconds))
        with self.cluster.clock_runs_until(until, self.wake_on):
            while (left := until - self.cluster.now()) > 0 and not (self.wake_on and self.cluster.woken()):
                await asyncio.sleep(self._slice(left))

    def sleep_sync(self, seconds: float) -> None:
        """:meth:`sleep` for a step's blocking polls (the demote and election steps' waits)."""
        until = self.cluster.now() + max(0.0, float(seconds))
        with self.cluster.clock_runs_until(until):
            while (left := until - self.cluster.now()) > 0:
                time.sleep(self._slice(left))

    def _slice(self, left: float) -> float:
        return min(0.05, max(0.0005, left / self.cluster.spec.speed))


#: how long a disk sample waits for the emulator's engine (wall seconds). One engine event can be
#: long at scale: the controller starting a one-wave plan of 5,526 moves (100,000 partitions) makes
#: three ZooKeeper writes per partition in that one event, over two minutes under a load of 10 on 2
#: cores (BENCHMARKS.md "Rehearsals"); the rehearsal's own time limit bounds the whole.
DISK_SAMPLE_WAIT_S = 1800.0


@dataclass
class DiskSampler:
    """Per-broker peak of bytes on disk, sampled at every poll of the wave trigger; ``baseline``:
    bytes per broker of the partitions a reduced seed left out of the copy (added to each sample)."""

    cluster: Any
    peaks: dict[int, tuple[int, float]] = field(default_factory=dict)   # broker -> (bytes, simulated s)
    samples: int = 0
    baseline: dict[int, int] = field(default_factory=dict)

    def sample(self) -> None:
        now = self.cluster.now()
        self.samples += 1
        for b, used in self.cluster.disk_usage(timeout=DISK_SAMPLE_WAIT_S).items():
            used += self.baseline.get(b, 0)
            if used > self.peaks.get(b, (-1, 0.0))[0]:
                self.peaks[b] = (used, now)


class RehearsalWaveTrigger(WaveDoneTrigger):
    """The wave trigger on the emulator's client and clock (see the module docstring)."""

    def __init__(self, *, rehearsal: "Rehearsal", **kwargs: Any) -> None:
        kwargs["not_before"] = None            # Airflow's scheduler race does not exist here
        super().__init__(**kwargs)
        self.rehearsal = rehearsal
        self.clock = SimEpochClock(rehearsal.cluster, rehearsal.clock.epoch0, wake_on=WAVE_END)

    def _client(self):
        return self.rehearsal.client

    def _close(self) -> None:               # the rehearsal's client outlives the trigger
        return None

    def _log_dirs_source(self):
        return None                          # progress from ISR joins, as a cluster without a source

    def _poll(self):
        self.rehearsal.disks.sample()
        return super()._poll()

    def _notify_stall(self, what: str, progress: Any, causes: str, *_more: Any) -> None:
        """No notification from a rehearsal: the stall goes into its report instead."""
        self.rehearsal.stalls.append(f"wave {self.wave_id}: {what}; stopped: {causes or 'no cause visible in ZooKeeper'}")


@dataclass
class Rehearsal:
    """The emulated copy a drive runs against: its cluster, a client on it, the clock, the samples."""

    cluster: Any
    client: Any
    clock: SimEpochClock
    disks: DiskSampler
    stalls: list[str] = field(default_factory=list)
    window_waits: list[tuple[float, float]] = field(default_factory=list)   # (from, to) epoch seconds
    costs: WaveCosts = field(default_factory=WaveCosts)   # the run's gaps between waves, waited after each


class _Deferred(Exception):
    def __init__(self, trigger: Any, method_name: str) -> None:
        super().__init__(method_name)
        self.trigger = trigger
        self.method_name = method_name


@dataclass(frozen=True)
class PrivateCopy:
    """The write authority of a rehearsal's steps (:mod:`kafka_zk.authority`): they write only to the
    rehearsal's private emulated copy, a chroot the rehearsal made (``/kafka-rehearsal-…``); a
    writer whose client is rooted anywhere else is refused, so no approval is needed or implied."""

    chroot: str

    def authorise(self, op: str, path: str, data: bytes | None, before: bytes | None) -> None:
        if not self.chroot.startswith(COPY_CHROOT_PREFIX):
            raise WriteNotApproved(f"refusing to {op} {path}: a rehearsal writes only to its private copy "
                                   f"({COPY_CHROOT_PREFIX}…), not to chroot {self.chroot or '/'}; nothing written")

    def describe(self) -> str:
        return f"a rehearsal's private emulated copy ({self.chroot})"


class _OnTheCopy:
    """What makes a runbook step act on the rehearsal (mixed in before the step's own class): its
    folder, a client on the copy, and the copy as the only write authority; the writer itself is
    built by :meth:`operators.base.RunbookOperator.session` as for every step, auditing as the rehearsal."""

    rehearsal: Rehearsal
    rehearsal_folder: RunFolder
    audit_actor = ACTOR
    audit_task = "rehearse"

    def folder(self, context: Any) -> RunFolder:
        return self.rehearsal_folder

    @contextmanager
    def zk_client(self, context: Any) -> Iterator[Any]:
        yield self.rehearsal.client

    def write_authority(self, folder: RunFolder) -> PrivateCopy:
        return PrivateCopy(self.rehearsal.client.chroot or "")

    def poll_sleep(self, seconds: float) -> None:
        """A poll interval of simulated time (the rehearsal holds the clock around its steps)."""
        self.rehearsal.clock.sleep_sync(seconds)


class RehearsalDemote(_OnTheCopy, DemoteOperator):
    """Decommission's ``demote`` step on the copy (leadership off the removed brokers first)."""

    def __init__(self, *, rehearsal: Rehearsal, folder: RunFolder, **kwargs: Any) -> None:
        super().__init__(task_id="demote", **kwargs)
        self.rehearsal, self.rehearsal_folder = rehearsal, folder


class RehearsalElection(_OnTheCopy, ElectPreferredLeadersOperator):
    """The final ``elect_preferred_leaders`` step on the copy."""

    def __init__(self, *, rehearsal: Rehearsal, folder: RunFolder, **kwargs: Any) -> None:
        super().__init__(task_id="elect_preferred_leaders", **kwargs)
        self.rehearsal, self.rehearsal_folder = rehearsal, folder


class RehearsalExecutor(_OnTheCopy, ExecuteWavesOperator):
    """The executor with its session, clock, windows and deferral pointed at a rehearsal."""

    def __init__(self, *, rehearsal: Rehearsal, folder: RunFolder, windows: WindowsFile | None,
                 runbook: str, **kwargs: Any) -> None:
        kwargs.setdefault("task_id", "execute_waves")
        super().__init__(inline_wait_s=0.0, min_defer_s=0.0, **kwargs)
        self.rehearsal = rehearsal
        self.rehearsal_folder = folder
        self.windows = windows
        self.runbook = runbook
        self.clock = rehearsal.clock.time

    def _gate(self, context: Any):
        return window_gate(self.windows, str(self.zk_conn_id), self.runbook, as_bool(self.outside_window))

    def defer(self, *, trigger: Any, method_name: str, kwargs: Any = None, timeout: Any = None) -> None:
        raise _Deferred(trigger, method_name)

    def execute(self, context: Any) -> dict:
        """Start from the plan's waves (no approval: only the emulator is written to)."""
        folder = self.folder(context)
        book = build_wave_book(str(folder.plan_dir))
        book.save(folder.wave_progress)
        return self._advance(context, folder, book)


@dataclass(frozen=True)
class DriveOutcome:
    """How the drive ended: ``error`` is the executor's exception text (None: every wave done)."""

    result: dict | None
    error: str | None
    error_type: str | None


def _run_gap(op: RehearsalExecutor, context: dict[str, Any], wave_id: int) -> None:
    """Simulated time from a wave's end (the trigger wakes at it) to when the run's executor has seen it
    done and, unless it was the last, written the next one (planning/wave_time.py)."""
    sim = op.rehearsal
    book = WaveBook.load(op.folder(context).wave_progress)
    wave = book.wave(wave_id)
    span = sim.clock.time() - float(wave.submitted_at or sim.clock.time())
    last = all(w.status == DONE for w in book.waves if w.id != wave_id)
    sim.clock.sleep_sync(sim.costs.detection(span) if last else sim.costs.gap(span))


def run_step(op: Any, context: dict[str, Any]) -> Any:
    """``op.execute(context)`` as Airflow's task runner calls it (its executor safeguard's sentinel:
    the rehearsal *is* the task running these steps, in-process)."""
    from airflow.sdk.bases.operator import ExecutorSafeguard

    return op.execute(context, **{f"{type(op).__name__}__sentinel": ExecutorSafeguard.sentinel_value})


def _first_event(trigger: WaveDoneTrigger) -> dict:
    async def first() -> dict:
        async for event in trigger.run():
            return dict(event.payload)
        return {"status": "error", "message": "the wave trigger ended without an event"}
    return asyncio.run(first())


def drive(op: RehearsalExecutor, context: dict[str, Any]) -> DriveOutcome:
    """Run the executor to its end as Airflow would (see the module docstring; call it with the
    cluster's clock held)."""

    sim = op.rehearsal
    step: Callable[[], dict] = lambda: run_step(op, context)
    while True:
        try:
            return DriveOutcome(step(), None, None)
        except _Deferred as d:
            trigger, method = d.trigger, d.method_name
            if isinstance(trigger, WaveDoneTrigger):
                _, kwargs = trigger.serialize()
                event = _first_event(RehearsalWaveTrigger(rehearsal=sim, **kwargs))
                if event.get("status") == "done":
                    _run_gap(op, context, int(event["wave_id"]))
                step = lambda event=event, method=method: getattr(op, method)(context, event)
            else:                                        # a window pause: DateTimeTrigger(moment)
                opens = trigger.moment.timestamp()
                now = sim.clock.time()
                sim.window_waits.append((now, opens))
                if opens > now:
                    sim.cluster.skip_time(opens - now)
                step = lambda method=method: getattr(op, method)(context, None)
        except KafkaZkError as exc:
            return DriveOutcome(None, str(exc), type(exc).__name__)
