"""Waves as the executor sees them, their progress file, and progress arithmetic.

A :class:`WaveSpec` is one wave of a plan: the partitions it moves, each with the replica set
the plan assumed (``current``), its target list and the bytes one new replica copies. The
executor writes every wave's spec and status to the run folder's ``waves.json``
(:class:`WaveBook`), so a retried or cleared task, and the trigger that waits on a wave, read
the same facts from disk rather than from memory.

:func:`measure` turns live partitions (from a snapshot) into a :class:`WaveProgress`: partitions
done/total and bytes remaining. A new replica in the ISR has copied everything; one not yet in
the ISR has copied what its broker's log holds when follower log sizes are given (what
``kafka-log-dirs --describe`` reports, :mod:`procedures.plan.log_dirs_source`), else nothing known
(progress is then judged from ISR joins only, and says so). :func:`progress_line` formats the
line logged at every poll: throughput, and an ETA that is never ``0s`` while bytes remain (it
says ``unknown`` when it cannot know).

Failure: a progress file that does not parse raises :class:`InvalidPayload` naming the file.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Mapping

from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidPayload
from kafka_zk.model import ClusterSnapshot, Partition
from kafka_zk.files import read_json, write_json_atomic

class WaveStatus(enum.StrEnum):
    """Where a wave stands in ``waves.json`` (a ``str``: the file holds its value)."""

    PENDING = "pending"
    SUBMITTED = "submitted"
    DONE = "done"


PENDING, SUBMITTED, DONE = WaveStatus.PENDING, WaveStatus.SUBMITTED, WaveStatus.DONE

# A wave's life in ``waves.json``: submitted once (a retry that finds it in
# /admin/reassign_partitions re-records "submitted"), done once; done is final. A wave found
# already finished in ZooKeeper goes from pending to done without being submitted.
#
#   PENDING ──submit──▶ SUBMITTED ──finished──▶ DONE
#      └──────────── found finished ────────────▲
#
# Every change of a wave's status goes through :meth:`WaveBook.advance`, which checks this
# table and takes the time from the caller's clock (never read here).
ALLOWED: dict[WaveStatus, frozenset[WaveStatus]] = {
    WaveStatus.PENDING: frozenset({WaveStatus.SUBMITTED, WaveStatus.DONE}),
    WaveStatus.SUBMITTED: frozenset({WaveStatus.SUBMITTED, WaveStatus.DONE}),
    WaveStatus.DONE: frozenset(),
}


class IllegalWaveTransition(InvalidPayload):
    """A wave status change :data:`ALLOWED` does not list (e.g. a done wave submitted again)."""


@dataclass(frozen=True)
class WaveMove:
    """One partition of a wave."""

    tp: TopicPartition
    current: tuple[int, ...]
    target: tuple[int, ...]
    size: int = 0

    @property
    def new_replicas(self) -> tuple[int, ...]:
        return tuple(b for b in self.target if b not in self.current)


@dataclass(frozen=True)
class WaveSpec:
    """One wave: its moves, and where it stands (:class:`WaveStatus`)."""

    id: int
    moves: tuple[WaveMove, ...]
    status: WaveStatus = WaveStatus.PENDING
    submitted_at: str | None = None
    done_at: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.status, WaveStatus):   # "pending"/"submitted"/"done" from a file or a caller
            object.__setattr__(self, "status", WaveStatus(self.status))

    @property
    def targets(self) -> dict[TopicPartition, tuple[int, ...]]:
        return {m.tp: m.target for m in self.moves}

    @property
    def bytes_total(self) -> int:
        return sum(m.size * len(m.new_replicas) for m in self.moves)

    def advance(self, to: WaveStatus, now: float) -> "WaveSpec":
        """This wave in status ``to`` at epoch time ``now`` (passed in, never read here).

        Raises :class:`IllegalWaveTransition` for a transition :data:`ALLOWED` does not list (e.g. a
        done wave submitted again), naming the current, target and allowed statuses."""
        to = WaveStatus(to)
        allowed = ALLOWED[self.status]
        if to not in allowed:
            raise IllegalWaveTransition(f"wave {self.id}: status {self.status.value} -> {to.value} is not allowed; "
                                        f"allowed from {self.status.value}: {sorted(a.value for a in allowed)}")
        if to is WaveStatus.SUBMITTED:
            return replace(self, status=to, submitted_at=self.submitted_at or now)
        return replace(self, status=to, done_at=now)


@dataclass(frozen=True)
class WaveBook:
    """Every wave of a run and its status: the content of ``waves.json``."""

    plan_hash: str
    waves: tuple[WaveSpec, ...]

    @property
    def total_partitions(self) -> int:
        return sum(len(w.moves) for w in self.waves)

    def with_wave(self, wave: WaveSpec) -> "WaveBook":
        return replace(self, waves=tuple(wave if w.id == wave.id else w for w in self.waves))

    def advance(self, wave_id: int, to: WaveStatus, now: float) -> "WaveBook":
        """The book with wave ``wave_id`` moved to ``to`` at ``now`` (the one place a status changes;
        :class:`IllegalWaveTransition` on an arrow :data:`ALLOWED` lacks)."""
        return self.with_wave(self.wave(wave_id).advance(to, now))

    def wave(self, wave_id: int) -> WaveSpec:
        for w in self.waves:
            if w.id == wave_id:
                return w
        raise InvalidPayload(f"wave {wave_id} is not in the plan (waves 0..{len(self.waves) - 1})")

    def to_json(self) -> dict:
        return {"plan_hash": self.plan_hash, "waves": [
            {"id": w.id, "status": w.status.value, "submitted_at": w.submitted_at, "done_at": w.done_at,
             "moves": [{"topic": m.tp.topic, "partition": m.tp.partition, "current": list(m.current),
                        "target": list(m.target), "size": m.size} for m in w.moves]}
            for w in self.waves]}

    @classmethod
    def from_json(cls, doc: Mapping, where: str = "waves.json") -> "WaveBook":
        try:
            waves = tuple(
                WaveSpec(int(w["id"]), tuple(WaveMove(TopicPartition(m["topic"], int(m["partition"])),
                                                      tuple(int(b) for b in m["current"]),
                                                      tuple(int(b) for b in m["target"]), int(m.get("size", 0)))
                                             for m in w["moves"]),
                         WaveStatus(str(w["status"])), w.get("submitted_at"), w.get("done_at"))
                for w in doc["waves"])
            return cls(str(doc["plan_hash"]), waves)
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidPayload(f"{where}: not a wave progress file ({type(exc).__name__}: {exc}); "
                                 "restore it from the plan or re-run the plan step") from None

    def save(self, path: str | Path) -> None:
        write_json_atomic(path, self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> "WaveBook | None":
        doc = read_json(path)
        return None if doc is None else cls.from_json(doc, str(path))


FROM_LOG_SIZES, FROM_ISR = "follower log sizes", "ISR joins"


@dataclass(frozen=True)
class WaveProgress:
    """Where one wave stands, measured from live partitions (and follower log sizes when known).

    ``source`` says how copied bytes were measured: :data:`FROM_LOG_SIZES` (every new replica
    still copying had a size in the log-dirs output) or :data:`FROM_ISR` (a new replica counts
    as copied only once it joins the ISR)."""

    wave_id: int
    done: int
    total: int
    bytes_remaining: int
    bytes_total: int
    pending: tuple[str, ...] = field(default=())
    source: str = FROM_ISR

    @property
    def complete(self) -> bool:
        return self.done == self.total

    @property
    def measured(self) -> bool:
        """Copied bytes were read from follower log sizes (not inferred from ISR joins)."""
        return self.source == FROM_LOG_SIZES


def partition_done(live: Partition | None, target: tuple[int, ...]) -> bool:
    """Finished as the controller finishes it: replicas == target, nothing adding/removing,
    every target replica in the ISR."""
    return (live is not None and tuple(live.replicas) == tuple(target) and not live.is_reassigning
            and set(target) <= set(live.isr))


ReplicaSizes = Mapping[tuple[TopicPartition, int], int]


def measure(wave: WaveSpec, live: Mapping[TopicPartition, Partition],
            replica_sizes: ReplicaSizes | None = None) -> WaveProgress:
    """Progress of ``wave`` given the live partitions (missing ones count as not done) and,
    optionally, the bytes each replica holds (``(partition, broker) → bytes``, as
    ``kafka-log-dirs --describe`` reports them).

    A new replica not in the ISR still has ``target - held`` bytes to copy, ``target`` being
    the larger of the planned size and the largest replica of the partition in the sizes (the
    log may have grown since the plan). Without a size for it, it counts as copying everything
    and the progress is :data:`FROM_ISR`."""
    done = 0
    remaining = 0
    pending = []
    measured = replica_sizes is not None
    for m in wave.moves:
        p = live.get(m.tp)
        if partition_done(p, m.target):
            done += 1
            continue
        pending.append(str(m.tp))
        isr = set(p.isr) if p is not None else set()
        copying = [b for b in m.new_replicas if b not in isr]
        if not copying:
            continue
        if replica_sizes is None:
            remaining += m.size * len(copying)
            continue
        held = {b: replica_sizes.get((m.tp, b)) for b in (p.replicas if p is not None else m.target)}
        target = max([m.size, *(v for v in held.values() if v is not None)])
        for b in copying:
            if held.get(b) is None:
                measured = False
                remaining += target
            else:
                remaining += max(0, target - held[b])
    return WaveProgress(wave.id, done, len(wave.moves), remaining, wave.bytes_total, tuple(pending[:5]),
                        FROM_LOG_SIZES if measured else FROM_ISR)


def wave_state(wave: WaveSpec, snap: ClusterSnapshot,
               replica_sizes: ReplicaSizes | None = None) -> tuple[WaveProgress, bool]:
    """The wave's progress in ``snap`` and whether ``/admin/reassign_partitions`` still lists any
    of its partitions. The wave is finished when the progress is complete and nothing is listed."""
    progress = measure(wave, live_partitions(snap.partitions()), replica_sizes)
    listed = snap.reassignment is not None and any(e.tp in wave.targets for e in snap.reassignment.entries)
    return progress, listed


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def progress_line(p: WaveProgress, overall_done: int, overall_total: int, elapsed_s: float,
                  bytes_copied: int, stalled: bool = False) -> str:
    """``wave 2: 14/20 partitions, overall 54/80, 1.2 GiB remaining of 3.0 GiB, 40.0 MiB/s, ETA 31s
    (from follower log sizes)``.

    ``bytes_copied`` is what the new replicas copied over ``elapsed_s``. The ETA is ``0s`` only
    for a complete wave; while a partition moves it is remaining / rate, or ``unknown`` with the
    reason: stalled, no bytes copied yet, or bytes judged from ISR joins only (a replica's copy
    shows only when it joins, so no rate can be read between joins)."""
    rate = bytes_copied / elapsed_s if elapsed_s > 0 else 0.0
    if p.complete:
        eta = "0s"
    elif stalled:
        eta = "unknown (stalled)"
    elif p.bytes_remaining == 0:
        eta = "unknown"   # sizes unknown, or copied but not yet in the ISR: never "0s" while a partition moves
    elif rate > 0:
        eta = f"{max(1.0, p.bytes_remaining / rate):.0f}s"
    else:
        eta = "unknown"
    if p.bytes_total:
        left = f"{human_bytes(p.bytes_remaining)} remaining of {human_bytes(p.bytes_total)}"
    elif p.bytes_remaining:          # sizes read from the followers' logs, none in the plan
        left = f"{human_bytes(p.bytes_remaining)} remaining (the plan had no sizes)"
    else:
        left = "sizes unknown"       # never "remaining of 0 B"
    return (f"wave {p.wave_id}: {p.done}/{p.total} partitions, overall {overall_done}/{overall_total}, "
            f"{left}, {human_bytes(rate)}/s, ETA {eta} (from {p.source})")


def moved(last: tuple[int, int, str] | None, progress: WaveProgress) -> bool:
    """Whether ``progress`` is progress since the poll that saw ``last`` = (done, bytes remaining,
    source): a partition finished, or bytes copied as measured by the *same* source. A switch of
    source (follower log sizes → ISR joins, when the log-dirs output loses a replica) changes the
    bytes figure without a byte copied, so it must not restart a stall clock."""
    if last is None:
        return True
    done, remaining, source = last
    return progress.done != done or (progress.source == source and progress.bytes_remaining != remaining)


def overall_done(book: WaveBook, current: WaveProgress) -> int:
    """Partitions done across the plan: finished waves plus the current wave's done ones."""
    return sum(len(w.moves) for w in book.waves if w.status == DONE and w.id != current.wave_id) + current.done


def live_partitions(partitions: Iterable[Partition]) -> dict[TopicPartition, Partition]:
    return {p.tp: p for p in partitions}
