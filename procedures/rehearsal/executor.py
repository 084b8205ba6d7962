"""The executor's own code, driven in-process against an emulated cluster on its simulated clock.

:class:`RehearsalExecutor` is :class:`procedures.waves.executor.WaveExecutor` — the code every run's
``execute_waves`` step runs — with the rehearsal's seams: its ZooKeeper session is the emulator's
private one (its writer audits to the rehearsal folder, and may write only to the rehearsal's copy:
:class:`PrivateCopy`), its clock is the emulator's simulated time as epoch seconds, the windows it
obeys are handed in (the run's windows file, for the real cluster's connection id and runbook), and
it notifies nobody. It needs no approval: it can only ever write to the private emulator.
:func:`demote_on_copy` and :func:`elect_on_copy` are the runbooks' ``demote`` and final election
(:mod:`procedures.leadership`) on the same seams.

:func:`drive` runs the executor to its end as Airflow would: ``start``, then, per wait, the wave
wait's event fed to ``wave_ended``, or — for a window pause — the simulated clock jumped to the
opening (nothing of the run copies while it waits between waves) and ``window_opened``. The wave
wait is :class:`procedures.waves.watch.WaveWatch` itself, the loop behind Airflow's
``WaveDoneTrigger`` (:class:`RehearsalWaveWatch` only gives it the emulator's client and clock — one
that wakes when the controller deletes the wave's node, :data:`WAVE_END` — and samples the
brokers' disks at each poll); after a wave's ``done`` the drive lets the run's gap pass (its
executor seeing the wave done and writing the next: :class:`planning.wave_time.WaveCosts`)
before ``wave_ended``. Simulated time runs only while the wait sleeps, and then to exactly its
wake-up, after the emulator has heard the executor's writes
(:meth:`kafka_sim.cluster.EmulatedCluster.clock_runs_until`); it stands still while the executor
or the wait works — the caller holds the clock (``cluster.clock_held()``) around the drive and the
demote and election steps (:mod:`cli.rehearsal_run`). So the timeline does not depend on how loaded
this machine is: two rehearsals of one plan give the same timeline. Nothing here imports Airflow or
the emulator (``cluster`` is what :mod:`cli.rehearsal_run` hands in).

Failure: what the executor raises ends the drive and is returned as the rehearsal's problem
(:class:`DriveOutcome`), never raised: a rehearsal that finds a stall has done its job.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

from kafka_zk.audit import AuditLog
from kafka_zk.errors import KafkaZkError, WriteNotApproved
from planning.wave_time import WaveCosts
from kafka_zk.writer import ZkWriter
from procedures.leadership import Waits, demote, elect_preferred
from procedures.run_folder import RunFolder
from procedures.waves.book import DONE, WaveBook
from procedures.waves.executor import AllDone, Seams, Settings, WaitForWave, WaveExecutor
from procedures.waves.watch import WaveWatch
from procedures.windows.guard import window_gate
from procedures.windows.spec import WindowsFile

ACTOR = "kafka-runbook rehearse (emulated copy)"
COPY_CHROOT_PREFIX = "/kafka-rehearsal-"
log = logging.getLogger(__name__)


#: the emulator's history kind at which a wave trigger's sleep ends early: the controller deleted
#: ``/admin/reassign_partitions``, its last move done (kafka_sim/reassign.py)
WAVE_END = frozenset({"reassign_node_deleted"})


#: the longest a sleeping step waits on the engine's word before it looks at the clock itself (wall s)
WAKE_CHECK_S = 0.5


class SimEpochClock:
    """The emulator's simulated seconds as epoch seconds from ``epoch0`` (the Clock protocol of
    :class:`procedures.waves.watch.Clock`); a sleep lasts until that much simulated time has passed, or
    until one of the ``wake_on`` events of the emulator's history happens (the wave trigger's clock:
    :data:`WAVE_END`)."""

    def __init__(self, cluster: Any, epoch0: float, wake_on: frozenset[str] = frozenset()) -> None:
        self.cluster = cluster
        self.epoch0 = float(epoch0)
        self.wake_on = wake_on

    def time(self) -> float:
        return self.epoch0 + self.cluster.now()

    async def sleep(self, seconds: float) -> None:
        """The only time a drive lets simulated time run (see :func:`drive`), to exactly the wake-up. It
        waits for the engine's word that the clock got there (``wait_for_clock``), not in slices."""
        until = self.cluster.now() + max(0.0, float(seconds))
        with self.cluster.clock_runs_until(until, self.wake_on):
            while until - self.cluster.now() > 0 and not (self.wake_on and self.cluster.woken()):
                await asyncio.to_thread(self.cluster.wait_for_clock, until, WAKE_CHECK_S, bool(self.wake_on))

    def sleep_sync(self, seconds: float) -> None:
        """:meth:`sleep` for a step's blocking polls (the demote and election steps' waits)."""
        until = self.cluster.now() + max(0.0, float(seconds))
        with self.cluster.clock_runs_until(until):
            while until - self.cluster.now() > 0:
                self.cluster.wait_for_clock(until, WAKE_CHECK_S)


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


class RehearsalWaveWatch(WaveWatch):
    """The wave wait on the emulator's client and clock (see the module docstring)."""

    def __init__(self, rehearsal: "Rehearsal", wait: WaitForWave, run_id: str) -> None:
        self._configure(run_id, wait.wave_id, wait.deadline, wait.run_dir, wait.poll_interval, wait.stall_warning_s,
                        wait.stall_timeout_s, None, throttle_bytes_per_s=wait.throttle_bytes_per_s)
        self.rehearsal = rehearsal
        self.clock = SimEpochClock(rehearsal.cluster, rehearsal.clock.epoch0, wake_on=WAVE_END)
        self.log = logging.getLogger(f"{__name__}.wave")

    def _client(self) -> Any:
        return self.rehearsal.client

    def _close(self) -> None:               # the rehearsal's client outlives the wait
        return None

    def _log_dirs_source(self) -> None:
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


@contextmanager
def on_the_copy(rehearsal: Rehearsal, folder: RunFolder, run_id: str) -> Iterator[tuple[Any, ZkWriter]]:
    """The rehearsal's session: its client on the copy and a writer auditing to the rehearsal folder as
    :data:`ACTOR`, whose only write authority is the copy (:class:`PrivateCopy`)."""
    client = rehearsal.client
    yield client, ZkWriter(client, audit=AuditLog(folder.audit, run_id=run_id, task="rehearse"), actor=ACTOR,
                           authority=PrivateCopy(client.chroot or ""))


def _no_notification(event: str, *, body: str, fields: Mapping[str, Any], outcome: str | None = None) -> None:
    """A rehearsal tells nobody: what would have been sent is logged (its problems go into the report)."""
    log.info("notification %s (a rehearsal sends none): %s", event, body)


class RehearsalExecutor:
    """The executor with its session, clock, windows and notifier pointed at a rehearsal.

    ``cluster`` is the real cluster's connection id (whose windows apply); ``params`` are the
    ``execute_waves`` step's (:meth:`procedures.waves.executor.Settings.of`)."""

    def __init__(self, *, rehearsal: Rehearsal, folder: RunFolder, windows: WindowsFile | None, runbook: str,
                 cluster: str = "rehearsal", run_id: str = "rehearsal", **params: Any) -> None:
        self.rehearsal = rehearsal
        self.folder = folder
        self.run_id = run_id
        settings = Settings.of(runbook, inline_wait_s=0.0, **params)
        self.core = WaveExecutor(folder, settings, Seams(
            session=lambda: on_the_copy(rehearsal, folder, run_id), clock=rehearsal.clock.time,
            notify=_no_notification, gate=lambda: window_gate(windows, cluster, runbook, settings.outside_window),
            log=logging.getLogger(f"{__name__}.executor")))


def _waits(rehearsal: Rehearsal) -> Waits:
    """A leadership step's waits on the copy: its polls sleep simulated time (the clock is held around them)."""
    return Waits(logging.getLogger(f"{__name__}.leadership"), sleep=rehearsal.clock.sleep_sync)


def demote_on_copy(rehearsal: Rehearsal, folder: RunFolder, removed: frozenset[int],
                   run_id: str = "rehearsal") -> dict:
    """Decommission's ``demote`` step on the copy (leadership off the removed brokers first)."""
    with on_the_copy(rehearsal, folder, run_id) as (client, writer):
        return demote(client, writer, frozenset(removed), _waits(rehearsal))


def elect_on_copy(rehearsal: Rehearsal, folder: RunFolder, run_id: str = "rehearsal") -> dict:
    """The final ``elect_preferred_leaders`` step on the copy."""
    with on_the_copy(rehearsal, folder, run_id) as (client, writer):
        return elect_preferred(client, writer, None, _waits(rehearsal))


@dataclass(frozen=True)
class DriveOutcome:
    """How the drive ended: ``error`` is the executor's exception text (None: every wave done)."""

    result: dict | None
    error: str | None
    error_type: str | None


def _run_gap(op: RehearsalExecutor, wave_id: int) -> None:
    """Simulated time from a wave's end (the wait wakes at it) to when the run's executor has seen it
    done and, unless it was the last, written the next one (planning/wave_time.py)."""
    sim = op.rehearsal
    book = WaveBook.load(op.folder.wave_progress)
    wave = book.wave(wave_id)
    span = sim.clock.time() - float(wave.submitted_at or sim.clock.time())
    last = all(w.status == DONE for w in book.waves if w.id != wave_id)
    sim.clock.sleep_sync(sim.costs.detection(span) if last else sim.costs.gap(span))


def _first_event(watch: WaveWatch) -> dict:
    async def first() -> dict:
        async for event in watch.watch():
            return dict(event)
        return {"status": "error", "message": "the wave wait ended without an event"}
    return asyncio.run(first())


def drive(op: RehearsalExecutor) -> DriveOutcome:
    """Run the executor to its end as Airflow would (see the module docstring; call it with the
    cluster's clock held)."""

    sim = op.rehearsal
    step: Callable[[], Any] = lambda: op.core.start(None)
    while True:
        try:
            got = step()
        except KafkaZkError as exc:
            return DriveOutcome(None, str(exc), type(exc).__name__)
        if isinstance(got, AllDone):
            return DriveOutcome(got.result, None, None)
        if isinstance(got, WaitForWave):
            event = _first_event(RehearsalWaveWatch(sim, got, op.run_id))
            if event.get("status") == "done":
                _run_gap(op, int(event["wave_id"]))
            step = lambda event=event: op.core.wave_ended(event)
        else:                                            # a window pause: until the opening
            opens = got.opens.timestamp()
            now = sim.clock.time()
            sim.window_waits.append((now, opens))
            if opens > now:
                sim.cluster.skip_time(opens - now)
            step = op.core.window_opened
