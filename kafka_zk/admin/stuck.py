"""Why a reassignment makes no progress, per partition, and the approved ways out (docs/zookeeper.md §2.7).

Pure, on a :class:`ClusterSnapshot`:

* :func:`pending_cause` — why the move of one partition to its target is not finished: the
  partition is gone; a target broker is not registered (a target on an unregistered broker never
  finishes, §2.7.3); the partition has no leader; a target replica on a live broker is not
  catching up (a fetch failure — a lowered ``max.message.bytes`` is named); the controller has
  not acted on the entry (a node created after a hand deletion is ignored until the controller
  changes, §2.7.1); or every target is in the ISR and the controller has not completed it.
* :func:`diagnose` — every partition of ``/admin/reassign_partitions`` and every partition with
  adding/removing replicas (an API-driven move), with its cause, plus "no controller".
The rewrite the stuck reassignment runbook proposes (each unregistered target broker replaced by a
registered one) is placed by the planners' one placer,
:func:`planning.kernels.placement.replacement_targets`, run by the plan job
(``--op replace-dead-targets``); the runbook passes the planned targets to
:func:`kafka_zk.admin.stuck_fixes.choose_fixes`.

Failure: none here (pure reads of a snapshot).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from kafka_zk.codecs import TopicPartition
from kafka_zk.model import ClusterSnapshot

BROKER_MESSAGE_MAX_BYTES = 1000012   # Kafka 2.4's default message.max.bytes

GONE, DEAD_TARGET, NO_LEADER, NOT_CATCHING_UP, NOT_STARTED, NOT_COMPLETED = (
    "partition_gone", "target_not_registered", "no_leader", "not_catching_up", "controller_not_acting",
    "controller_not_completing")
#: causes a controller election (deleting /controller, as operators do) can clear
NEEDS_ELECTION = frozenset({NOT_STARTED, NOT_COMPLETED, GONE})


@dataclass(frozen=True)
class PendingCause:
    """Why one partition's move is not finished."""

    kind: str
    text: str
    dead: tuple[int, ...] = ()


@dataclass(frozen=True)
class StuckPartition:
    """One partition that is not moving, what it should become and why it does not."""

    tp: TopicPartition
    target: tuple[int, ...]
    replicas: tuple[int, ...]
    cause: PendingCause
    in_node: bool


def broker_list(ids: Iterable[int]) -> str:
    return ",".join(str(b) for b in sorted(set(ids)))


def low_max_message_bytes(snapshot: ClusterSnapshot, topic: str) -> str:
    """Named when the topic's max.message.bytes is below the brokers' message.max.bytes: lowered
    after larger batches were written, it makes followers fail every fetch (RecordTooLargeException)."""
    t = snapshot.topics.get(topic)
    value = t.config.get("max.message.bytes") if t is not None else None
    broker_max = snapshot.broker_configs.get("<default>", {}).get("message.max.bytes", BROKER_MESSAGE_MAX_BYTES)
    if value is None or not str(value).isdigit() or not str(broker_max).isdigit() or int(value) >= int(broker_max):
        return ""
    return (f"; topic {topic} has max.message.bytes={value}, below the brokers' message.max.bytes={broker_max}: "
            "if it was lowered after larger batches were written, followers fail with RecordTooLargeException "
            "(raise it back)")


def pending_cause(snapshot: ClusterSnapshot, tp: TopicPartition, target: tuple[int, ...]) -> PendingCause | None:
    """Why the reassignment of ``tp`` to ``target`` is not finished (``None``: it is finished)."""
    if not snapshot.has_partition(tp):
        return PendingCause(GONE, "the topic or partition no longer exists (deleted while reassigning, §2.7.5): "
                                  "the node stays until the controller changes")
    p = snapshot.partition(tp)
    if p.replicas == tuple(target) and not p.is_reassigning:
        return None
    dead = tuple(b for b in target if b not in snapshot.brokers)
    if dead:
        return PendingCause(DEAD_TARGET, f"target broker(s) {broker_list(dead)} not live (not registered under "
                                         "/brokers/ids)", dead)
    if p.leader is None or p.leader < 0:
        return PendingCause(NO_LEADER, "the partition has no leader, so nothing is copied")
    lagging = [b for b in target if b not in p.isr]
    if lagging and p.is_reassigning:
        return PendingCause(NOT_CATCHING_UP, f"replica(s) on broker(s) {broker_list(lagging)} not catching up (not "
                                             "in the ISR) while their broker is up: a fetch failure, check its "
                                             "server.log" + low_max_message_bytes(snapshot, tp.topic))
    if not p.is_reassigning:
        return PendingCause(NOT_STARTED, "not started: the controller has not acted on this entry (a node created "
                                         "after a hand deletion is ignored until the controller changes, §2.7.1)")
    return PendingCause(NOT_COMPLETED, "every target replica is in the ISR but the controller has not completed it")


def diagnose(snapshot: ClusterSnapshot) -> list[StuckPartition]:
    """Every unfinished move (the node's entries, then API-driven ones) with its cause."""
    out = []
    in_node = snapshot.reassignment.targets() if snapshot.reassignment is not None else {}
    for tp, target in sorted(in_node.items()):
        cause = pending_cause(snapshot, tp, tuple(target))
        if cause is not None:
            replicas = snapshot.partition(tp).replicas if snapshot.has_partition(tp) else ()
            out.append(StuckPartition(tp, tuple(target), tuple(replicas), cause, True))
    for p in snapshot.partitions():
        if p.is_reassigning and p.tp not in in_node:
            cause = pending_cause(snapshot, p.tp, tuple(p.target))
            if cause is not None:
                out.append(StuckPartition(p.tp, tuple(p.target), tuple(p.replicas), cause, False))
    return out


