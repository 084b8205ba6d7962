"""Partition reassignment through ``/admin/reassign_partitions`` (docs/zookeeper.md §1.7, §2.7, §5, §8.3).

* :func:`validate_targets` — every check of §5.1/§8.3 before any write: non-empty, no empty
  list, no duplicate partitions, no duplicate brokers, partitions exist (and their topic is not
  being deleted), brokers registered, no ``log_dirs``.
* :func:`submit_reassignment` — validate, then *create* the node (create-only: an existing
  node raises :class:`ReassignmentInProgress`). Throttles are a separate step
  (:mod:`kafka_zk.admin.throttles`) that callers run first.
* :func:`replace_reassignment` — the documented ZooKeeper-only rewrite of a pending move
  (§2.7.4): delete the live node (when there is one), then create it with the new targets; the
  controller reads the new node only once ``/controller`` changes
  (:func:`kafka_zk.admin.controller.reelect_controller`), so callers re-elect after it.
* :func:`reassignment_status` — per partition ``in_progress`` / ``complete`` / ``failed`` with
  the 2.6+ ZK-path rule (done iff not in the live node; complete iff replicas equal the target
  exactly); a 2.4+ topic znode still carrying adding/removing replicas for the partition also
  counts as in progress. :func:`verify_text` prints §5.4's lines.
* :func:`classify_live_reassignment` — ``none`` / ``ours`` / ``foreign``: "ours" when every
  entry of the live node is one of our targets with the identical replica list (the controller
  prunes finished entries, so a subset is still ours).

Failure: :class:`InvalidInput` / :class:`BrokerNotAvailable` with Kafka's messages, nothing written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Literal, Mapping, Sequence

from kafka_zk import codecs, paths
from kafka_zk.codecs import ReassignmentEntry, ReassignmentFileEntry, ReassignmentRequest, TopicPartition
from kafka_zk.errors import BrokerNotAvailable, InvalidInput
from kafka_zk.model import ClusterSnapshot
from kafka_zk.writer import ZkWriter

State = Literal["in_progress", "complete", "failed"]
ZK_WARNING = ("Warning: because you are using the deprecated --zookeeper option, the results may be "
              "incomplete.  Use --bootstrap-server instead for more accurate results.")


def targets_from_file_entries(entries: Sequence[ReassignmentFileEntry]) -> dict[TopicPartition, tuple[int, ...]]:
    """The tool file's entries as targets; duplicates and ``log_dirs`` placements refused."""
    seen: dict[TopicPartition, tuple[int, ...]] = {}
    dups = []
    for e in entries:
        if e.log_dirs is not None and any(d != "any" for d in e.log_dirs):
            raise InvalidInput(f"{e.tp}: log_dirs placement is not possible through ZooKeeper "
                               "(bootstrap-server needs to be provided when replica reassignments are present); "
                               "remove log_dirs or set every entry to \"any\"")
        if e.tp in seen:
            dups.append(str(e.tp))
        seen[e.tp] = e.replicas
    if dups:
        raise InvalidInput(f"Partition reassignment contains duplicate topic partitions: {','.join(sorted(dups))}")
    return seen


def validate_targets(snapshot: ClusterSnapshot, targets: Mapping[TopicPartition, Sequence[int]]) -> None:
    """Kafka's execute-time checks (§5.1) against ``snapshot``; raises before anything is written."""
    if not targets:
        raise InvalidInput("Partition reassignment list cannot be empty")
    empty = sorted(str(tp) for tp, r in targets.items() if len(r) == 0)
    if empty:
        raise InvalidInput(f"Partition replica list cannot be empty: {','.join(empty)}")
    dup = sorted((tp, r) for tp, r in targets.items() if len(set(r)) != len(r))
    if dup:
        raise InvalidInput("Partition replica lists may not contain duplicate entries: " + ". ".join(
            f"{tp} contains {', '.join(map(str, r))}" for tp, r in dup))
    missing = sorted(str(tp) for tp in targets if not snapshot.has_partition(tp))
    if missing:
        raise InvalidInput(f"The proposed assignment contains non-existent partitions: {','.join(missing)}")
    deleting = sorted({tp.topic for tp in targets if tp.topic in snapshot.delete_markers})
    if deleting:
        raise InvalidInput(f"Topic(s) {','.join(deleting)} are marked for deletion: their partitions cannot be "
                           "reassigned; remove them from the plan")
    unknown = sorted({b for r in targets.values() for b in r} - set(snapshot.brokers))
    if unknown:
        raise BrokerNotAvailable(f"The proposed assignment contains non-existent brokerIDs: "
                                 f"{','.join(map(str, unknown))}")


def reassignment_request(targets: Mapping[TopicPartition, Sequence[int]]) -> ReassignmentRequest:
    """The znode payload for ``targets``, entries sorted by (topic, partition)."""
    return ReassignmentRequest(tuple(ReassignmentEntry(tp.topic, tp.partition, tuple(targets[tp]))
                                     for tp in sorted(targets)))


def submit_reassignment(writer: ZkWriter, snapshot: ClusterSnapshot,
                        targets: Mapping[TopicPartition, Sequence[int]]) -> ReassignmentRequest:
    """Validate then create ``/admin/reassign_partitions`` with exactly topic/partition/replicas."""
    validate_targets(snapshot, targets)
    request = reassignment_request(targets)
    writer.create(paths.REASSIGN_PARTITIONS, request.encode(), makepath=True)
    return request


def replace_reassignment(writer: ZkWriter, snapshot: ClusterSnapshot,
                         targets: Mapping[TopicPartition, Sequence[int]]) -> ReassignmentRequest:
    """Delete the pending ``/admin/reassign_partitions`` (when ``snapshot`` has one) and create it with ``targets``.

    Unlike :func:`submit_reassignment` the targets are not held to "every broker registered": a
    rewrite keeps the other pending entries exactly as they are. Refused before any write when
    ``targets`` is empty or names an empty replica list."""
    if not targets or any(not list(r) for r in targets.values()):
        raise InvalidInput("a rewritten reassignment needs at least one partition and a replica list for each")
    request = reassignment_request(targets)
    if snapshot.reassignment is not None:
        writer.delete(paths.REASSIGN_PARTITIONS)
    writer.create(paths.REASSIGN_PARTITIONS, request.encode(), makepath=True)
    return request


@dataclass(frozen=True)
class PartitionReassignState:
    tp: TopicPartition
    state: State
    current: tuple[int, ...]
    target: tuple[int, ...]


@dataclass(frozen=True)
class ReassignmentStatus:
    """Per-partition states of one reassignment, sorted by (topic, partition)."""

    partitions: tuple[PartitionReassignState, ...]

    def count(self, state: State) -> int:
        return sum(1 for p in self.partitions if p.state == state)

    @property
    def done(self) -> bool:
        return all(p.state != "in_progress" for p in self.partitions)

    @property
    def all_complete(self) -> bool:
        return all(p.state == "complete" for p in self.partitions)


def reassignment_status(snapshot: ClusterSnapshot,
                        targets: Mapping[TopicPartition, Sequence[int]]) -> ReassignmentStatus:
    live = snapshot.reassignment.targets() if snapshot.reassignment else {}
    out = []
    for tp in sorted(targets):
        target = tuple(targets[tp])
        current = snapshot.partition(tp).replicas if snapshot.has_partition(tp) else ()
        reassigning = snapshot.has_partition(tp) and snapshot.partition(tp).is_reassigning
        if tp in live or reassigning:
            state: State = "in_progress"
        elif current == target:
            state = "complete"
        else:
            state = "failed"
        out.append(PartitionReassignState(tp, state, current, target))
    return ReassignmentStatus(tuple(out))


def classify_live_reassignment(live: ReassignmentRequest | None,
                               targets: Mapping[TopicPartition, Sequence[int]]) -> Literal["none", "ours", "foreign"]:
    if live is None or not live.entries:
        return "none"
    for e in live.entries:
        if e.tp not in targets or tuple(targets[e.tp]) != e.replicas:
            return "foreign"
    return "ours"


def verify_text(status: ReassignmentStatus, zookeeper_warning: bool = True, completed_word: str = "complete"
                ) -> list[str]:
    """§5.4 2.6+ lines (``completed_word="completed"`` gives the 3.3+ wording)."""
    lines = [ZK_WARNING] if zookeeper_warning else []
    lines.append("Status of partition reassignment:")
    for p in status.partitions:
        if p.state == "in_progress":
            lines.append(f"Reassignment of partition {p.tp} is still in progress.")
        elif p.state == "complete":
            lines.append(f"Reassignment of partition {p.tp} is {completed_word}.")
        else:
            lines.append(f"There is no active reassignment of partition {p.tp}, but replica set is "
                         f"{','.join(map(str, p.current))} rather than {','.join(map(str, p.target))}.")
    return lines


def verify_text_2_4(status: ReassignmentStatus) -> list[str]:
    """The lines Kafka 2.4.1's ``kafka-reassign-partitions --zookeeper --verify`` prints.

    Wording from 2.4.1's ReassignPartitionsCommand.verifyAssignment: the header with its
    trailing space, then ``... completed successfully`` / ``... failed`` for partitions no longer
    in the reassignment node, grouped by topic, then ``... is still in progress`` for those in
    it. Kafka orders the lines by Scala hash collections; here topics and partitions keep the
    status order (sorted), a documented difference. The "Throttle was removed." line is the
    caller's (this project removes only what it recorded adding).
    """
    lines = ["Status of partition reassignment: "]
    for p in status.partitions:
        if p.state == "complete":
            lines.append(f"Reassignment of partition {p.tp} completed successfully")
        elif p.state == "failed":
            lines.append(f"Reassignment of partition {p.tp} failed")
    lines += [f"Reassignment of partition {p.tp} is still in progress"
              for p in status.partitions if p.state == "in_progress"]
    return lines


def moving_partitions(snapshot: ClusterSnapshot, targets: Mapping[TopicPartition, Sequence[int]]
                      ) -> list[TopicPartition]:
    """Partitions whose target differs from their current replica list (order-sensitive)."""
    return [tp for tp in sorted(targets)
            if snapshot.has_partition(tp) and snapshot.partition(tp).replicas != tuple(targets[tp])]


def current_assignment_json(snapshot: ClusterSnapshot, tps: Iterable[TopicPartition]) -> str:
    """The rollback JSON Kafka prints before executing (entries sorted, log_dirs "any")."""
    return codecs.encode_reassignment_file(
        {tp: snapshot.partition(tp).replicas for tp in tps if snapshot.has_partition(tp)},
        with_log_dirs=True).decode()
