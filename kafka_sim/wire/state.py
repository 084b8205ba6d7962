"""What an emulated broker can serve, read from the engine (run these on its thread through
``Engine.call``): the cluster's metadata as every broker caches it, and each replica's log end
and high watermark in offsets.

A leader's log ends at its size in whole batches (:func:`records.offsets_for_bytes`); an
in-sync follower holds the same; an out-of-sync follower what it has copied so far. The high
watermark is the smallest log end in the ISR (the leader's, since in-sync followers keep up);
a follower knows it only up to its own log end. A replica on a dead broker, or of a partition
without a live leader, serves nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from kafka_sim.wire.records import offsets_for_bytes
from kafka_zk.codecs import TopicPartition

if TYPE_CHECKING:
    from kafka_sim.engine import Engine


@dataclass(frozen=True)
class BrokerEndpoint:
    broker_id: int
    host: str
    port: int
    rack: str | None


@dataclass(frozen=True)
class PartitionMeta:
    leader: int                 # −1: no leader
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...]    # replicas on brokers that are not live


@dataclass(frozen=True)
class ClusterView:
    cluster_id: str
    controller_id: int
    brokers: tuple[BrokerEndpoint, ...]
    partitions: dict[TopicPartition, PartitionMeta]


@dataclass(frozen=True)
class ReplicaLog:
    """Replica of ``tp`` on one broker: what a Fetch or ListOffsets to that broker can see."""

    tp: TopicPartition
    is_leader: bool
    log_end: int
    high_watermark: int
    corrupt: frozenset[int]
    damaged: frozenset[tuple[int, str]] = frozenset()    # (offset, "bytes" | "header")


def cluster_view(eng: "Engine", ports: dict[int, int]) -> ClusterView:
    """Brokers whose registration exists (a killed broker's stays until its session expires,
    and clients then find nothing listening), and every partition's leader, replicas and ISR."""
    live = {b for b, br in eng.brokers.items() if br.client is not None and b in ports}
    brokers = tuple(BrokerEndpoint(b, "127.0.0.1", ports[b], eng.brokers[b].rack) for b in sorted(live))
    parts = {}
    for tp, pd in eng.model.parts.items():
        leader = pd.leader if pd.leader in live else -1
        parts[tp] = PartitionMeta(leader, tuple(pd.replicas), tuple(pd.isr),
                                  tuple(r for r in pd.replicas if r not in live))
    ctrl = eng.controller.id if eng.controller is not None else -1
    return ClusterView(eng.cluster_id, ctrl, brokers, parts)


def _log_end(eng: "Engine", tp: TopicPartition, broker: int) -> int:
    held = eng.model.replica_bytes(tp, broker)
    return offsets_for_bytes(held or 0.0)


def replica_logs(eng: "Engine", broker: int, tps: Iterable[TopicPartition],
                 corrupt: dict[tuple[TopicPartition, int], frozenset[int]],
                 damaged: dict[tuple[TopicPartition, int], frozenset[tuple[int, str]]] | None = None,
                 ) -> dict[TopicPartition, ReplicaLog | None]:
    """``broker``'s replica of each of ``tps`` (None: not hosted here, or nothing to serve)."""
    out: dict[TopicPartition, ReplicaLog | None] = {}
    br = eng.brokers.get(broker)
    alive = br is not None and br.alive
    for tp in tps:
        pd = eng.model.parts.get(tp)
        if not alive or pd is None or broker not in pd.replicas or pd.leader < 0 \
                or pd.leader not in eng.model.live:
            out[tp] = None
            continue
        isr = [r for r in pd.isr if r in pd.replicas] or [pd.leader]
        hw = min(_log_end(eng, tp, r) for r in isr)
        end = _log_end(eng, tp, broker)
        out[tp] = ReplicaLog(tp, broker == pd.leader, end, min(hw, end),
                             corrupt.get((tp, broker), frozenset()),
                             (damaged or {}).get((tp, broker), frozenset()))
    return out
