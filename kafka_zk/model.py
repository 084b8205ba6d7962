"""The typed cluster model: brokers, partitions, topics and a whole-cluster snapshot.

Built from decoded payloads only (never from raw ZooKeeper), so tests and Spark executors
build them from literals. Everything is immutable; a snapshot is a value taken at one moment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Mapping

from kafka_zk.codecs import (BrokerRegistration, PartitionState, PreferredElectionRequest,
                             ReassignmentRequest, TopicAssignment, TopicPartition)

INTERNAL_TOPICS: frozenset[str] = frozenset({"__consumer_offsets", "__transaction_state"})


@dataclass(frozen=True)
class Broker:
    """A registered (live) broker, or one named in an assignment that is not registered."""

    id: int
    rack: str | None = None
    host: str | None = None
    port: int = -1
    endpoints: tuple[str, ...] = ()
    live: bool = True

    @classmethod
    def from_registration(cls, broker_id: int, reg: BrokerRegistration) -> "Broker":
        return cls(broker_id, reg.rack, reg.host, reg.port, reg.endpoints, True)


@dataclass(frozen=True)
class Partition:
    """One partition: assignment from the topic znode plus leader/ISR from its state znode.

    ``leader`` is ``None`` when no state znode exists (the controller has not initialised it),
    ``-1`` when the state says there is no leader.
    """

    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    leader: int | None = None
    leader_epoch: int | None = None
    isr: tuple[int, ...] = ()
    controller_epoch: int | None = None

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def has_state(self) -> bool:
        return self.leader is not None

    @property
    def preferred_leader(self) -> int | None:
        return self.replicas[0] if self.replicas else None

    @property
    def is_reassigning(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def origin(self) -> tuple[int, ...]:
        """Replicas before an in-flight reassignment (RS − ARS)."""
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def target(self) -> tuple[int, ...]:
        """Replicas after an in-flight reassignment (RS − RRS)."""
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def state(self) -> PartitionState | None:
        if self.leader is None:
            return None
        return PartitionState(self.leader, self.leader_epoch or 0, self.isr, self.controller_epoch or 0)


@dataclass(frozen=True)
class Topic:
    """A topic: its partitions by id, its config overrides, its id and deletion mark."""

    name: str
    partitions: Mapping[int, Partition]
    config: Mapping[str, str] = field(default_factory=dict)
    topic_id: str | None = None
    marked_for_deletion: bool = False
    assignment_version: int = 1

    @property
    def replication_factor(self) -> int:
        """Kafka's describe rule: the replica-list size of the first partition."""
        if not self.partitions:
            return 0
        return len(self.partitions[min(self.partitions)].replicas)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS

    def assignment(self) -> TopicAssignment:
        return TopicAssignment(
            {p.partition: p.replicas for p in self.partitions.values()},
            {p.partition: p.adding for p in self.partitions.values() if p.adding},
            {p.partition: p.removing for p in self.partitions.values() if p.removing},
            self.topic_id, self.assignment_version)


@dataclass(frozen=True)
class ClusterSnapshot:
    """Everything a planner or a guard needs about a cluster, read at one moment.

    ``brokers`` holds the live (registered) brokers. ``broker_configs`` is keyed by entity name
    (``"1"``, ``"<default>"``). ``delete_markers`` are the topic names under
    ``/admin/delete_topics``.
    """

    brokers: Mapping[int, Broker]
    topics: Mapping[str, Topic]
    broker_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    reassignment: ReassignmentRequest | None = None
    preferred_election: PreferredElectionRequest | None = None
    delete_markers: frozenset[str] = frozenset()
    controller_id: int | None = None
    controller_epoch: int | None = None
    taken_at_ms: int = 0

    @property
    def live_broker_ids(self) -> tuple[int, ...]:
        return tuple(sorted(self.brokers))

    def partitions(self) -> Iterator[Partition]:
        """Every partition, sorted by (topic, partition)."""
        for name in sorted(self.topics):
            topic = self.topics[name]
            for pid in sorted(topic.partitions):
                yield topic.partitions[pid]

    def partition(self, tp: TopicPartition) -> Partition:
        return self.topics[tp.topic].partitions[tp.partition]

    def has_partition(self, tp: TopicPartition) -> bool:
        topic = self.topics.get(tp.topic)
        return topic is not None and tp.partition in topic.partitions

    @property
    def partition_count(self) -> int:
        return sum(len(t.partitions) for t in self.topics.values())

    def assignment(self) -> dict[TopicPartition, tuple[int, ...]]:
        return {p.tp: p.replicas for p in self.partitions()}

    def reassigning_partitions(self) -> tuple[TopicPartition, ...]:
        """Partitions with adding/removing replicas in their topic znode (2.4+ in-flight state)."""
        return tuple(p.tp for p in self.partitions() if p.is_reassigning)

    def racks(self) -> dict[int, str | None]:
        return {b.id: b.rack for b in self.brokers.values()}
