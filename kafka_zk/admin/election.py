"""Preferred replica election through ``/admin/preferred_replica_election`` (docs/zookeeper.md §1.8, §2.8, §7.1).

* :func:`preferred_election_candidates` — which partitions an election would move: the leader
  is not the preferred (first) replica, and the preferred replica is live and in the ISR
  (otherwise the controller fails that partition). Each other partition comes with a reason.
* :func:`election_batches` — split partitions so that every encoded znode payload stays under
  ``max_bytes`` (default 512 KiB, half of ZooKeeper's limit), always; optional count cap.
* :func:`submit_preferred_election` — skip partitions that do not exist (as the tool does),
  then *create* the node; an existing node raises :class:`ElectionInProgress`.

The controller deletes the node after one pass, success or not (§2.8), so callers poll for its
disappearance and then compare leaders with preferred replicas.

Failure: duplicates raise :class:`InvalidInput` with Kafka's message; nothing is written.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from kafka_zk import codecs, paths
from kafka_zk.codecs import PreferredElectionRequest, TopicPartition
from kafka_zk.errors import ElectionInProgress, InvalidInput, ZnodeTooLarge
from kafka_zk.limits import ADMIN_BATCH_BYTES
from kafka_zk.model import ClusterSnapshot
from kafka_zk.writer import ZkWriter

_EMPTY = len(PreferredElectionRequest(()).encode())


@dataclass(frozen=True)
class NotEligible:
    tp: TopicPartition
    reason: str


@dataclass(frozen=True)
class ElectionSubmission:
    """What was written (``submitted``) and what was left out as nonexistent (``skipped``)."""

    submitted: tuple[TopicPartition, ...]
    skipped: tuple[TopicPartition, ...]


def preferred_election_candidates(snapshot: ClusterSnapshot, partitions: Iterable[TopicPartition] | None = None
                                  ) -> tuple[tuple[TopicPartition, ...], tuple[NotEligible, ...]]:
    """(eligible, not eligible with reason), both sorted by (topic, partition)."""
    tps = sorted(set(partitions)) if partitions is not None else [p.tp for p in snapshot.partitions()]
    eligible, not_eligible = [], []
    for tp in tps:
        if not snapshot.has_partition(tp):
            not_eligible.append(NotEligible(tp, "partition does not exist"))
            continue
        if tp.topic in snapshot.delete_markers:
            not_eligible.append(NotEligible(tp, "topic is marked for deletion"))
            continue
        p = snapshot.partition(tp)
        preferred = p.preferred_leader
        if not p.has_state:
            reason = "no state znode yet (the controller has not initialised the partition)"
        elif p.leader == preferred:
            reason = f"preferred replica {preferred} is already the leader"
        elif preferred not in snapshot.brokers:
            reason = f"preferred replica {preferred} is not live"
        elif preferred not in p.isr:
            reason = f"preferred replica {preferred} is not in the ISR"
        else:
            eligible.append(tp)
            continue
        not_eligible.append(NotEligible(tp, reason))
    return tuple(eligible), tuple(not_eligible)


def _entry_size(tp: TopicPartition) -> int:
    return len(codecs.dumps({"topic": tp.topic, "partition": tp.partition}))


def election_batches(partitions: Sequence[TopicPartition], max_bytes: int = ADMIN_BATCH_BYTES,
                     max_partitions: int | None = None) -> list[tuple[TopicPartition, ...]]:
    """Consecutive batches whose encoded ``/admin/preferred_replica_election`` payload ≤ ``max_bytes``."""
    if max_partitions is not None and max_partitions <= 0:
        raise InvalidInput(f"max partitions per election batch must be ≥ 1, got {max_partitions}")
    batches: list[tuple[TopicPartition, ...]] = []
    current: list[TopicPartition] = []
    size = _EMPTY
    for tp in partitions:
        extra = _entry_size(tp) + (1 if current else 0)
        if _EMPTY + _entry_size(tp) > max_bytes:
            raise ZnodeTooLarge(f"[{paths.PREFERRED_REPLICA_ELECTION}] one entry ({tp}) alone exceeds "
                                f"{max_bytes} bytes: raise the batch size limit")
        if current and (size + extra > max_bytes
                        or (max_partitions is not None and len(current) >= max_partitions)):
            batches.append(tuple(current))
            current, size, extra = [], _EMPTY, _entry_size(tp)
        current.append(tp)
        size += extra
    if current:
        batches.append(tuple(current))
    return batches


def submit_preferred_election(writer: ZkWriter, snapshot: ClusterSnapshot,
                              partitions: Sequence[TopicPartition]) -> ElectionSubmission:
    """Create the election node for the existing partitions among ``partitions``."""
    dups = sorted(tp for tp, n in Counter(partitions).items() if n > 1)
    if dups:
        raise InvalidInput("Preferred replica election data contains duplicate partitions: "
                           + ",".join(map(str, dups)))
    if snapshot.preferred_election is not None:
        raise ElectionInProgress(
            "Preferred replica leader election currently in progress for "
            + ",".join(map(str, snapshot.preferred_election.partitions)) + ". Aborting operation")
    existing = tuple(tp for tp in partitions if snapshot.has_partition(tp))
    skipped = tuple(tp for tp in partitions if not snapshot.has_partition(tp))
    if existing:
        writer.create(paths.PREFERRED_REPLICA_ELECTION, PreferredElectionRequest(existing).encode(),
                      makepath=True)
    return ElectionSubmission(existing, skipped)
