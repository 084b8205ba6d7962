"""Per-broker load bookkeeping shared by the kernels: racks, replica/byte/leader counts, spreads.

Pure. Racks: a broker without a rack is its own rack (``"\\0<id>"``), so rack rules degrade to
"no two replicas on one broker" when a cluster has no rack information, and never merge
rack-less brokers with each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from kafka_zk.codecs import TopicPartition
from kafka_zk.model import Broker, ClusterSnapshot, Partition
from planning.model import BrokerLoad, Move


def rack_key(broker_id: int, rack: str | None) -> str:
    """The rack a broker counts as for spreading: its rack, or itself when it has none."""
    return rack if rack is not None else f"\0{broker_id}"


def rack_map(brokers: Mapping[int, Broker]) -> dict[int, str]:
    return {b: rack_key(b, brokers[b].rack) for b in brokers}


def rack_of(racks: Mapping[int, str], broker_id: int) -> str:
    """Rack of a live broker, or a unique pseudo-rack for a broker that is not registered."""
    return racks.get(broker_id, f"\0{broker_id}")


def distinct_racks(replicas: Iterable[int], racks: Mapping[int, str]) -> int:
    return len({rack_of(racks, b) for b in replicas})


def size_of(sizes: Mapping[TopicPartition, int] | None, tp: TopicPartition) -> int:
    if not sizes:
        return 0
    return int(sizes.get(tp, 0))


@dataclass
class Loads:
    """Mutable per-broker counters used while planning (never crosses a layer)."""

    replicas: dict[int, int]
    bytes: dict[int, int]
    leaders: dict[int, int]

    @classmethod
    def empty(cls, broker_ids: Iterable[int]) -> "Loads":
        ids = list(broker_ids)
        return cls({b: 0 for b in ids}, {b: 0 for b in ids}, {b: 0 for b in ids})

    def add(self, replicas: Iterable[int], size: int, leader: int | None) -> None:
        for b in replicas:
            self.replicas[b] = self.replicas.get(b, 0) + 1
            self.bytes[b] = self.bytes.get(b, 0) + size
        if leader is not None:
            self.leaders[leader] = self.leaders.get(leader, 0) + 1

    def add_baseline(self, baseline: Mapping[int, BrokerLoad] | None) -> None:
        for b, load in (baseline or {}).items():
            self.replicas[b] = self.replicas.get(b, 0) + load.replicas
            self.bytes[b] = self.bytes.get(b, 0) + load.bytes
            self.leaders[b] = self.leaders.get(b, 0) + load.leaders

    def frozen(self) -> dict[int, BrokerLoad]:
        ids = sorted(set(self.replicas) | set(self.bytes) | set(self.leaders))
        return {b: BrokerLoad(self.replicas.get(b, 0), self.bytes.get(b, 0), self.leaders.get(b, 0))
                for b in ids}


def cluster_loads(partitions: Iterable[Partition], broker_ids: Iterable[int],
                  sizes: Mapping[TopicPartition, int] | None,
                  baseline: Mapping[int, BrokerLoad] | None = None,
                  assignment: Mapping[TopicPartition, tuple[int, ...]] | None = None) -> Loads:
    """Loads of ``partitions`` (replaced by ``assignment`` where given) plus ``baseline``.

    Lookups use plain ``(topic, partition)`` tuples (equal to, and hashing like, TopicPartition).
    """
    loads = Loads.empty(broker_ids)
    loads.add_baseline(baseline)
    rep, byt, lead = loads.replicas, loads.bytes, loads.leaders
    sized = bool(sizes)
    for p in partitions:
        replicas = p.replicas
        size = 0
        if assignment is not None or sized:
            key = (p.topic, p.partition)
            if assignment is not None:
                replicas = assignment.get(key, replicas)  # type: ignore[call-overload]
            if sized:
                size = int(sizes.get(key, 0))  # type: ignore[union-attr,call-overload]
        for b in replicas:
            rep[b] = rep.get(b, 0) + 1
            byt[b] = byt.get(b, 0) + size
        if replicas:
            lead[replicas[0]] = lead.get(replicas[0], 0) + 1
    return loads


def moved_loads(before: Loads, moves: Iterable[Move]) -> Loads:
    """``before`` with every move applied (current replicas out, target in): a copy.

    Equal, broker by broker, to :func:`cluster_loads` with ``assignment`` = the moves' targets.
    """
    rep, byt, lead = dict(before.replicas), dict(before.bytes), dict(before.leaders)
    for m in moves:
        size = m.size
        for b in m.current:
            rep[b] = rep.get(b, 0) - 1
            byt[b] = byt.get(b, 0) - size
        for b in m.target:
            rep[b] = rep.get(b, 0) + 1
            byt[b] = byt.get(b, 0) + size
        if m.current:
            lead[m.current[0]] = lead.get(m.current[0], 0) - 1
        if m.target:
            lead[m.target[0]] = lead.get(m.target[0], 0) + 1
    return Loads(rep, byt, lead)


def spread(values: Iterable[int]) -> int:
    vals = list(values)
    return (max(vals) - min(vals)) if vals else 0


def relative_spread(values: Iterable[int]) -> float:
    """(max − min) / mean; 0 for no values or a zero mean."""
    vals = list(values)
    if not vals:
        return 0.0
    mean = sum(vals) / len(vals)
    return (max(vals) - min(vals)) / mean if mean else 0.0


def snapshot_partitions(snapshot: ClusterSnapshot) -> list[Partition]:
    return list(snapshot.partitions())
