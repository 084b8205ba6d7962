"""Health gates of a rolling restart, from ZooKeeper: may these brokers stop now, are they back?

Pure functions over a :class:`~kafka_zk.model.ClusterSnapshot` (read with configs, so that each
topic's ``min.insync.replicas`` is known), plus one reader (:func:`registration_czxid`):

* :func:`stop_problems` — before stopping a set of brokers: every partition of the cluster that is
  offline or under-replicated (a partition already short of a replica must not lose another; a
  reassignment in flight shows here too), and every partition whose in-sync replicas would fall
  below its ``min.insync.replicas`` once these brokers leave the ISR (an RF-1 partition on them:
  it would go offline). Each problem names the partition and why.
* :func:`not_in_sync` — after the start: the partitions the brokers host that they are not back in
  the ISR of.
* :func:`leaders_away` — the partitions whose preferred (first) replica is one of the brokers but
  whose leader is another broker: what the preferred election must give back.
* :func:`demotion` / :func:`restoration` — the replica orders that move preferred leadership off a
  broker before its stop (the broker last, same replica set: the controller completes such a
  reassignment at once, docs/zookeeper.md §2.7.3), and the orders that give it back after.
* :func:`offline` — partitions without a live leader (what a roll must never cause).
* :func:`registration_czxid` — the czxid of a broker's ephemeral registration (``None``: not
  registered); a new czxid is a new session, i.e. the restarted process, not the old one lingering.

Failure: none of its own; the snapshot was validated when it was read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Iterable, Mapping, Sequence

from kazoo.client import KazooClient

from kafka_zk import paths
from kafka_zk.codecs import TopicPartition
from kafka_zk.health.model import min_isr_of
from kafka_zk.model import ClusterSnapshot, Partition


@dataclass(frozen=True)
class GateProblem:
    """One partition that holds a broker's stop, and why (in Kafka's words)."""

    tp: TopicPartition
    reason: str

    def __str__(self) -> str:
        return f"{self.tp}: {self.reason}"


def _offline(p: Partition, live: AbstractSet[int]) -> bool:
    return p.has_state and (p.leader == -1 or p.leader not in live)


def offline(snapshot: ClusterSnapshot) -> tuple[TopicPartition, ...]:
    """Partitions with a state but no live leader, sorted."""
    live = set(snapshot.brokers)
    return tuple(p.tp for p in snapshot.partitions() if _offline(p, live))


def stop_problems(snapshot: ClusterSnapshot, brokers: Iterable[int], min_isr_default: int = 1
                  ) -> tuple[GateProblem, ...]:
    """Why ``brokers`` must not stop now (empty: they may), sorted by partition."""
    stopping = frozenset(brokers)
    live = set(snapshot.brokers)
    out: list[GateProblem] = []
    for p in snapshot.partitions():
        if not p.has_state or p.topic in snapshot.delete_markers:
            continue
        if _offline(p, live):
            out.append(GateProblem(p.tp, f"offline: no live leader (leader {p.leader}, ISR {list(p.isr)})"))
            continue
        if p.is_reassigning:
            out.append(GateProblem(p.tp, f"being reassigned (adding {list(p.adding)}, removing {list(p.removing)}): "
                                         "wait for the reassignment to finish"))
            continue
        if set(p.replicas) - set(p.isr):
            out.append(GateProblem(p.tp, f"under-replicated: ISR {list(p.isr)} of replicas {list(p.replicas)} "
                                         f"(not in sync: {sorted(set(p.replicas) - set(p.isr))})"))
            continue
        leaving = stopping & set(p.isr)
        if not leaving:
            continue
        min_isr = min_isr_of(snapshot, p.topic, min_isr_default)
        left = len(p.isr) - len(leaving)
        if left < max(1, min_isr):
            what = "offline" if left == 0 else f"below min.insync.replicas={min_isr}"
            out.append(GateProblem(p.tp, f"at min ISR: ISR {list(p.isr)}, min.insync.replicas={min_isr}; stopping "
                                         f"broker(s) {sorted(leaving)} leaves {left} in sync ({what})"))
    return tuple(out)


def _hosted(snapshot: ClusterSnapshot, brokers: AbstractSet[int]) -> Iterable[Partition]:
    return (p for p in snapshot.partitions() if brokers & set(p.replicas) and p.has_state
            and p.topic not in snapshot.delete_markers)


def not_in_sync(snapshot: ClusterSnapshot, brokers: Iterable[int]) -> tuple[TopicPartition, ...]:
    """Partitions hosted by ``brokers`` that one of them is not in the ISR of, sorted."""
    bs = frozenset(brokers)
    return tuple(p.tp for p in _hosted(snapshot, bs) if (bs & set(p.replicas)) - set(p.isr))


def leaders_away(snapshot: ClusterSnapshot, brokers: Iterable[int]) -> tuple[TopicPartition, ...]:
    """Partitions preferred-led by one of ``brokers`` that another broker leads, sorted."""
    bs = frozenset(brokers)
    return tuple(p.tp for p in _hosted(snapshot, bs) if p.preferred_leader in bs and p.leader != p.preferred_leader)


def demotion(snapshot: ClusterSnapshot, brokers: Iterable[int]) -> dict[TopicPartition, tuple[tuple[int, ...],
                                                                                            tuple[int, ...]]]:
    """``{partition: (original order, order with the brokers last)}`` for each partition preferred-led by
    one of ``brokers`` that has another in-sync replica to lead and is not being reassigned."""
    bs = frozenset(brokers)
    out = {}
    for p in _hosted(snapshot, bs):
        if p.preferred_leader not in bs or p.is_reassigning:
            continue
        order = tuple([b for b in p.replicas if b not in bs] + [b for b in p.replicas if b in bs])
        if order[0] not in bs and order[0] in p.isr:
            out[p.tp] = (p.replicas, order)
    return out


def restoration(snapshot: ClusterSnapshot, demoted: Mapping[TopicPartition, tuple[Sequence[int], Sequence[int]]]
                ) -> dict[TopicPartition, tuple[int, ...]]:
    """``{partition: original order}`` for the demoted partitions still in their demoted order (one
    changed since by someone else, or deleted, is left as it is)."""
    out = {}
    for tp, (original, demoted_order) in demoted.items():
        if snapshot.has_partition(tp):
            p = snapshot.partition(tp)
            if p.replicas == tuple(demoted_order) and not p.is_reassigning:
                out[tp] = tuple(original)
    return out


def registration_czxid(client: KazooClient, broker: int) -> int | None:
    """The czxid of ``/brokers/ids/<broker>`` (``None`` when the broker is not registered)."""
    stat = client.exists(paths.broker(broker))
    return None if stat is None else stat.czxid
