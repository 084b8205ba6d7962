"""One rehearsal, start to end: check the inputs, seed a private emulated copy, drive, report.

Why here, in the CLI layer: a rehearsal composes the runbooks' executor core (``procedures``, no
Airflow) with the emulator (``kafka_sim``), and neither of those layers may import the other; the
CLI sits above both. ``kafka-runbook rehearse`` (:mod:`cli.rehearse`) runs it by hand, and the runbooks'
``rehearse`` step (:mod:`operators.rehearsal.step`) launches that same command as a child process
and reads back the ``rehearsal.json`` it writes.

:func:`rehearse` reads and checks every input before anything starts (snapshot, sizes, capacity,
the plan folder against its hash), copies the plan into the rehearsal folder, starts a private
ZooKeeper on 127.0.0.1 (or takes a fresh chroot on one it is given — never the real cluster's
connection), seeds the emulator from the snapshot (:mod:`kafka_sim.from_snapshot`), drives the
executor (:mod:`procedures.rehearsal.executor`: the runbooks' own executor core, without Airflow)
and writes ``rehearsal.json`` / ``rehearsal.md``
(:mod:`procedures.rehearsal.report`). Everything it started is stopped, whatever happens, and on a
ZooKeeper it was given its copy's chroot is removed (and copies earlier rehearsals left when they
died are swept before it starts: :mod:`kafka_sim.copies`), so it leaves no znode behind.

Speed: simulated seconds per wall second, by default chosen from the planner's predicted duration
so the copying takes about :data:`TARGET_WALL_S` of wall time (at least ×3600, at most ×200,000);
the trigger polls every ``max(30 s, longest predicted wave / 50)`` of simulated time, and wakes
when the controller deletes the wave's node, so it sees each wave end when it ends. Neither
changes the timeline: simulated time stands still while the tool works. Between waves the
rehearsal waits what the run's executor takes to see a wave done and write the next one, at the
run's ``poll_interval_s`` (:mod:`planning.wave_time`, the model the plan's estimate and
the window guard use too), so its headline total is the run's "first write to last wave done".

The copy is the cluster as the snapshot found it (:mod:`kafka_sim.from_snapshot`): its leaders and
ISRs (new replicas fetch from the leader), its down brokers, its throttles, and a reassignment in
flight, replayed from its start. A move in flight that can never finish (its target names a broker
that is not registered: :func:`kafka_sim.from_snapshot.unfinishable_replays`) is not replayed and
nothing is driven: the report names it as its problem (partition, target, broker, the fix) at once,
where the copy's controller would have waited on it until the rehearsal timed out.

Scale: a cluster of more than :data:`FULL_SEED_MAX_PARTITIONS` partitions is seeded reduced
(:mod:`kafka_sim.from_snapshot`): only the partitions the plan moves are created; the others'
bytes are each broker's disk baseline (the copy's disks are that much smaller, the samples that
much larger), so the per-wave timeline and the disk peaks are those of the full cluster (pinned by
tests/operators/test_rehearsal_reduced_seed.py) and the report says how many were left out.
Why: creating every partition costs the private ZooKeeper and the emulator's controller three
writes each (BENCHMARKS.md, "Rehearsals"), and a partition nothing moves has no flow.

Failure: bad inputs raise :class:`kafka_zk.errors.InvalidInput` / :class:`InvalidPayload` before
anything starts; a private ZooKeeper that cannot start raises
:class:`kafka_sim.zookeeper_server.EmbeddedZooKeeperError`; what the plan does to the copy
(stall, timeout, refusal, full disk) is the report's problems, never an exception.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from kafka_sim.cluster import EmulatedCluster
from kafka_sim.copies import remove_copy, stale_copies
from kafka_sim.from_snapshot import (UnfinishableMove, seed_from_snapshot, spec_from_snapshot,
                                     unfinishable_replays, untouched_baseline)
from kafka_sim.timeline import wave_spans
from kafka_zk.capacity import read_capacity_file
from kafka_zk.codecs import TopicPartition
from kafka_zk.connect import close, connect
from kafka_sim.zk_handler import EmulatorHandler
from kafka_sim.zookeeper_server import EmbeddedZooKeeper
from kafka_zk.errors import InvalidInput, KafkaZkError, ZkUnavailable
from planning.plan_folder.read import load_plan_artifacts
from planning.wave_time import POLL_S, WaveCosts
from procedures.run_folder import RunFolder
from formats.sizes_file import load_sizes
from formats.snapshot_file import load_snapshot
from procedures.waves.book import WaveBook
from procedures.rehearsal.executor import (COPY_CHROOT_PREFIX, DiskSampler, DriveOutcome, Rehearsal,
                                           RehearsalExecutor, SimEpochClock, demote_on_copy, drive, elect_on_copy)
from procedures.rehearsal.report import DiskPeak, RehearsalReport, WaveLine
from procedures.windows.pause import WindowBook
from procedures.windows.spec import WindowsFile

log = logging.getLogger(__name__)

#: the private server serves sessions before these open (EmbeddedZooKeeper.start waits for it: CI's
#: first sessions timed out at 10 s when start() returned at ``ruok``, before the server served), so a
#: longer wait only matters on a starved host; a failure names the server's state and log (describe())
PRIVATE_CONNECT_TIMEOUT_S = 60.0

TARGET_WALL_S = 30.0
#: above this many partitions the copy holds only the plan's partitions (module docstring, "Scale")
FULL_SEED_MAX_PARTITIONS = 5_000
SPEED_MIN, SPEED_MAX = 3600.0, 200_000.0
PLAN_FILES = ("plan.json", "rollback.json", "waves.json", "throttles.json", "election.json", "deletion.json",
              "summary.json", "plan.sha256")


@dataclass(frozen=True)
class RehearsalInput:
    """What one rehearsal runs: the run's snapshot, sizes and plan, and the run's own settings."""

    snapshot: str
    plan_dir: str
    out_dir: str
    sizes: str | None = None
    capacity: str | None = None
    windows: WindowsFile | None = None
    cluster: str = "rehearsal"            # the real cluster's connection id: its windows apply
    runbook: str = "decommission_brokers"
    throttle_bytes_per_s: int | None = None
    start_at: datetime | None = None      # when execution would start (default: now)
    speed: float | None = None
    wave_timeout_s: float = 6 * 3600.0
    stall_timeout_s: float = 3600.0
    between_windows: str = "keep"
    outside_window: bool = False
    network_rate: float = 100 * 1024 ** 2
    demote: tuple[int, ...] = ()          # decommission: the brokers whose leadership moves off first
    poll_interval_s: float = POLL_S       # the run's executor poll: its gaps between waves (wave_time.py)
    full_seed_max_partitions: int = FULL_SEED_MAX_PARTITIONS


def choose_speed(predicted_s: float, requested: float | None) -> float:
    if requested is not None:
        if not requested > 0:
            raise InvalidInput(f"speed {requested!r} must be > 0 simulated seconds per wall second")
        return float(requested)
    return min(SPEED_MAX, max(SPEED_MIN, predicted_s / TARGET_WALL_S))


def _inputs(inp: RehearsalInput):
    plan = load_plan_artifacts(inp.plan_dir)            # hash-checked: an edited plan is refused here
    snapshot = load_snapshot(inp.snapshot)
    sizes = load_sizes(inp.sizes) if inp.sizes else None
    capacity = read_capacity_file(inp.capacity) if inp.capacity else None
    if inp.between_windows not in ("keep", "remove"):
        raise InvalidInput(f"between_windows {inp.between_windows!r}: use 'keep' or 'remove'")
    return plan, snapshot, sizes, capacity


def touched_partitions(plan, snapshot, demote: tuple[int, ...] = ()) -> set[TopicPartition]:
    """What a reduced seed creates: every partition the plan moves or elects, every partition of a
    topic it deletes, and every partition with a replica on a broker the demote step empties."""
    out = set(plan.target) | {tp for batch in plan.election for tp in batch}
    deleted = {t for batch in plan.deletion for t in batch}
    gone = set(demote)
    for name, t in snapshot.topics.items():
        for p, part in t.partitions.items():
            if name in deleted or gone & set(part.replicas):
                out.add(TopicPartition(name, p))
    return out


def _copy_plan(plan_dir: str, folder: RunFolder) -> None:
    folder.plan_dir.mkdir(parents=True, exist_ok=True)
    for name in PLAN_FILES:
        src = Path(plan_dir) / name
        if src.is_file():
            shutil.copyfile(src, folder.plan_dir / name)


def rehearse(inp: RehearsalInput, zookeeper: str | None = None) -> RehearsalReport:
    """Rehearse ``inp`` on a private ZooKeeper (``zookeeper``: host:port of one to take a fresh chroot
    on; default: start one) and return (and save) the report."""

    plan, snapshot, sizes, capacity = _inputs(inp)
    wall0 = time.monotonic()
    folder = RunFolder(Path(inp.out_dir)).ensure()
    for stale in (folder.wave_progress, folder.root / "windows.json", folder.audit):
        stale.unlink(missing_ok=True)
    _copy_plan(inp.plan_dir, folder)
    stuck = unfinishable_replays(snapshot, _recreated(plan))
    if stuck:
        report = _not_rehearsed(inp, plan, stuck, wall0)
        report.save(folder.root)
        return report
    predicted = sum(w.predicted_seconds or 0.0 for w in plan.waves)
    speed = choose_speed(predicted, inp.speed)
    poll = max(30.0, max((w.predicted_seconds or 0.0 for w in plan.waves), default=0.0) / 50)
    server = None if zookeeper else EmbeddedZooKeeper(lean=True).start()
    hosts = zookeeper or server.connect_string
    chroot = f"{COPY_CHROOT_PREFIX}{uuid.uuid4().hex[:12]}"
    connect_string = f"{hosts}{chroot}"
    cluster = client = root = None
    try:
        if zookeeper:     # a shared rehearsal ZooKeeper: sweep what dead rehearsals left; ours goes at the end
            root = connect(hosts, timeout=PRIVATE_CONNECT_TIMEOUT_S)
            for stale in stale_copies(root, COPY_CHROOT_PREFIX):
                log.info("removing a stale rehearsal copy %s: %d znodes", stale, remove_copy(root, stale))
        only = baseline = None
        if snapshot.partition_count > inp.full_seed_max_partitions:
            only = touched_partitions(plan, snapshot, inp.demote)
            baseline = untouched_baseline(snapshot, sizes, only)
        spec = spec_from_snapshot(snapshot, capacity, baseline, speed=speed, network_rate=inp.network_rate,
                                  listeners=False)      # nobody fetches from the copy: no Kafka listeners
        timings = {"inputs_and_zookeeper": time.monotonic() - wall0}
        try:
            cluster = EmulatedCluster(connect_string, spec)
            cluster.start(connect_timeout=PRIVATE_CONNECT_TIMEOUT_S)
            seeded = seed_from_snapshot(cluster, snapshot, sizes, who="kafka-runbook rehearse", only=only)
            cluster.wait_idle(600)
            # the executor's session on the private copy selects as the emulator's do (zk_handler.py)
            client = connect(connect_string, timeout=PRIVATE_CONNECT_TIMEOUT_S, handler=EmulatorHandler())
        except ZkUnavailable as exc:
            raise ZkUnavailable(f"{exc} ({server.describe()})" if server is not None else str(exc)) from None
        timings["seed"] = time.monotonic() - wall0 - timings["inputs_and_zookeeper"]
        report = _drive_and_report(inp, plan, folder, cluster, client, capacity, seeded, speed, poll, wall0, timings,
                                   baseline or {})
    finally:
        if client is not None:
            close(client)
        if cluster is not None:
            cluster.stop()
        if root is not None:
            try:
                if root.exists(chroot):
                    log.info("rehearsal copy %s removed: %d znodes", chroot, remove_copy(root, chroot))
            finally:
                close(root)
        if server is not None:
            server.stop()
    report.save(folder.root)
    return report


def _recreated(plan) -> frozenset[int]:
    """The dead brokers the plan re-creates the replicas of (its ``summary.json``'s ``dead_brokers``)."""
    try:
        doc = json.loads(Path(plan.summary_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return frozenset()
    return frozenset(int(b) for b in (doc.get("dead_brokers") or {}))


def _not_rehearsed(inp: RehearsalInput, plan, stuck: tuple[UnfinishableMove, ...], wall0: float) -> RehearsalReport:
    """The report of a rehearsal that drove nothing: the reassignment in flight can never finish."""
    start_at = inp.start_at or datetime.now(timezone.utc)
    shown = [m.sentence() for m in stuck[:5]]
    if len(stuck) > 5:
        shown.append(f"{len(stuck) - 5:,} more partition(s) of the reassignment in flight target a broker "
                     "that is not registered")
    waves = tuple(WaveLine(a.index, len(a.target), int(a.bytes or 0), None, 0, a.predicted_seconds, None, None)
                  for a in plan.waves)
    return RehearsalReport(
        plan_hash=plan.plan_hash, runbook=inp.runbook, cluster=inp.cluster,
        start_at=start_at.isoformat(timespec="seconds"),
        throttle_bytes_per_s=inp.throttle_bytes_per_s or plan.throttle_bytes_per_s, waves=waves, elapsed_s=0.0,
        copying_s=0.0, pauses=(), overran=(), disks=(), disk_samples=0,
        elections={"not_run": "the reassignment in flight can never finish", "batches_planned": len(plan.election)},
        problems=tuple(shown), seeded="not seeded: the reassignment in flight can never finish",
        not_copied=(), speed=0.0, wall_s=time.monotonic() - wall0, finished=False,
        timings_s={"inputs": round(time.monotonic() - wall0, 2)})


def _drive_and_report(inp: RehearsalInput, plan, folder: RunFolder, cluster, client, capacity, seeded,
                      speed: float, poll: float, wall0: float, timings: dict[str, float],
                      baseline: dict[int, int]) -> RehearsalReport:
    start_at = inp.start_at or datetime.now(timezone.utc)
    with cluster.clock_held():        # from here simulated time runs only in the steps' and trigger's sleeps
        sim0 = cluster.now()
        rehearsal = Rehearsal(cluster, client, SimEpochClock(cluster, start_at.timestamp() - sim0),
                              DiskSampler(cluster, baseline=dict(baseline)),
                              costs=WaveCosts(poll_s=inp.poll_interval_s))
        op = RehearsalExecutor(rehearsal=rehearsal, folder=folder, windows=inp.windows, runbook=inp.runbook,
                               cluster=inp.cluster, poll_interval_s=poll,
                               throttle_bytes_per_sec=inp.throttle_bytes_per_s or plan.throttle_bytes_per_s,
                               wave_timeout_s=inp.wave_timeout_s,
                               stall_timeout_s=inp.stall_timeout_s, stall_warning_s=inp.stall_timeout_s,
                               between_windows=inp.between_windows,
                               outside_window=inp.outside_window)
        started = time.monotonic()
        outcome = _demote(inp, rehearsal, folder)
        if outcome is None:
            outcome = drive(op)
        elections = _elect(rehearsal, folder) if outcome.error is None else \
            {"not_run": "the waves did not all finish", "batches_planned": len(plan.election)}
        timings["drive"] = time.monotonic() - started
    rehearsal.disks.sample()
    book = WaveBook.load(folder.wave_progress)
    spans = wave_spans(cluster.history(), [[(m.tp.topic, m.tp.partition) for m in w.moves] for w in plan_book(book)])
    waves = tuple(WaveLine(a.index, len(a.target), int(a.bytes or 0), *_busiest(folder, a.index),
                           a.predicted_seconds, None if s is None else s.start - sim0,
                           None if s is None or (book and book.wave(a.index).status != "done") else s.end - sim0)
                  for a, s in zip(plan.waves, spans))
    ran = [w for w in waves if w.start_s is not None and w.end_s is not None]
    windows = WindowBook.load(folder)
    disks = tuple(DiskPeak(b, used, at - sim0, None if capacity is None else capacity.capacity(b),
                           None if capacity is None else capacity.threshold_pct)
                  for b, (used, at) in sorted(rehearsal.disks.peaks.items()))
    problems = _problems(outcome, waves, disks, windows.overran, elections)
    return RehearsalReport(
        plan_hash=plan.plan_hash, runbook=inp.runbook, cluster=inp.cluster,
        start_at=start_at.isoformat(timespec="seconds"), throttle_bytes_per_s=inp.throttle_bytes_per_s
        or plan.throttle_bytes_per_s, waves=waves,
        elapsed_s=_first_write_to_last_done(book, ran),
        copying_s=sum(w.seconds for w in ran), pauses=tuple(windows.pauses), overran=tuple(windows.overran),
        disks=disks, disk_samples=rehearsal.disks.samples, elections=elections,
        problems=problems, seeded=seeded.line(), not_copied=seeded.not_copied, speed=speed,
        wall_s=time.monotonic() - wall0, finished=outcome.error is None,
        notes=tuple(rehearsal.stalls[:10]), timings_s={k: round(v, 2) for k, v in timings.items()})


def _first_write_to_last_done(book, ran) -> float:
    """Wave 0 submitted to the last wave seen done (simulated seconds, the modelled gaps included: what a
    run's waves.json shows); from the waves' spans when the book lacks the times."""
    done = [w for w in plan_book(book) if w.submitted_at and w.done_at]
    if done and len(done) == len(plan_book(book)):
        return max(float(w.done_at) for w in done) - min(float(w.submitted_at) for w in done)
    return (max(w.end_s for w in ran) - min(w.start_s for w in ran)) if ran else 0.0


def plan_book(book):
    return book.waves if book is not None else ()


def _busiest(folder: RunFolder, index: int) -> tuple[int | None, int]:
    doc = folder.read_json(folder.plan_dir / "waves.json") or {}
    for w in doc.get("waves", []):
        if w.get("index") == index:
            return w.get("busiest_broker"), int(w.get("busiest_bytes") or 0)
    return None, 0


def _problems(outcome, waves, disks, overran, elections: dict) -> tuple[str, ...]:
    out = []
    if "error" in elections:
        out.append(f"final election: {elections['error']}")
    if outcome.error is not None:
        out.append(f"{outcome.error_type}: {outcome.error}")
    for d in disks:
        if d.pct is not None and d.limit_pct is not None and d.pct > d.limit_pct:
            wave = next((w.id for w in waves if w.start_s is not None and w.start_s <= d.at_s
                         and (w.end_s is None or d.at_s <= w.end_s)), None)
            out.append(f"broker {d.broker}'s disk reached {d.pct:.1f} % of its capacity"
                       + (f" during wave {wave}" if wave is not None else "")
                       + f" (the plan's limit is {d.limit_pct:g} %)"
                       + ("; a full disk stops its followers fetching" if d.pct >= 99.9 else ""))
    for o in overran:
        out.append(f"wave {o['wave']} would still be copying when window {o['window']} closes at {o['closed']} "
                   f"(it would finish at {o['finished']}; a reassignment cannot be paused)")
    return tuple(out)


def _demote(inp: RehearsalInput, rehearsal, folder: RunFolder):
    """Decommission's demote step on the copy (None when it ran or is not needed; else the outcome)."""

    if not inp.demote:
        return None
    try:
        demote_on_copy(rehearsal, folder, frozenset(inp.demote))   # simulated time runs in its polls only
    except (KafkaZkError, TimeoutError) as exc:
        return DriveOutcome(None, f"demote: {exc}", type(exc).__name__)
    return None


def _elect(rehearsal, folder: RunFolder) -> dict:
    """The final preferred election on the copy: what it elected, in how many batches, how long."""

    before = rehearsal.cluster.now()
    try:
        done = elect_on_copy(rehearsal, folder)
    except (KafkaZkError, TimeoutError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"elected": done["elected"], "batches": done["batches"], "not_eligible": done["not_eligible"][:10],
            "seconds": round(rehearsal.cluster.now() - before, 1)}
