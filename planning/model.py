"""Plan payloads shared by every planning kernel: moves, plans, per-broker loads, plan errors.

Pure data (no I/O, no Spark): a :class:`Plan` is what a kernel returns and what the artifact
writer, the wave packer and the Airflow side consume. A :class:`BrokerLoad` carries the load of
partitions that are *not* in the snapshot handed to a kernel (the Spark job passes only the
partitions a decommission touches plus the aggregated load of all the others).

Failure: :class:`PlanInvalid` lists every violated invariant of a plan (raised by
:func:`planning.kernels.validate.validate_plan`); :class:`PlanRefused` is bad user input
(removed broker unknown, too few brokers left for a replication factor, ...), a subclass of
:class:`kafka_zk.errors.InvalidInput` so the CLI prints it as one line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidInput, KafkaZkError


class _computed_once:
    """A read-only attribute computed on first access and then stored on the instance.

    Like :func:`functools.cached_property` (works on frozen dataclasses: it writes the
    instance ``__dict__``), without its per-access lock, which dominates on ~10⁶ moves.
    """

    def __init__(self, fn) -> None:
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.fn(obj)
        return value


class PlanRefused(InvalidInput):
    """The inputs of a plan are wrong (unknown broker, impossible RF, ...); nothing was planned."""


class PlanInvalid(KafkaZkError):
    """A plan broke one or more invariants; ``violations`` lists them (the plan is not written)."""

    def __init__(self, operation: str, violations: list[str]) -> None:
        self.operation = operation
        self.violations = list(violations)
        shown = "; ".join(self.violations[:10])
        more = f" (and {len(self.violations) - 10} more)" if len(self.violations) > 10 else ""
        super().__init__(f"{operation} plan violates {len(self.violations)} invariant(s): {shown}{more}. "
                         "This is a planner bug or a snapshot that changed under the plan: re-run the "
                         "snapshot and the plan, and report the violation if it persists")


@dataclass(frozen=True)
class Move:
    """One partition whose replica list changes: ``size`` is bytes one new replica copies."""

    tp: TopicPartition
    current: tuple[int, ...]
    target: tuple[int, ...]
    size: int = 0
    leader: int | None = None  # broker serving the copy (current leader); None = current[0]

    @property
    def source_leader(self) -> int:
        """The broker new replicas fetch from: the current leader, else the preferred replica."""
        if self.leader is not None and self.leader >= 0 and self.leader in self.current:
            return self.leader
        return self.current[0]

    @_computed_once
    def destinations(self) -> tuple[int, ...]:
        """Brokers that receive a new replica (target − current), in target order (computed once)."""
        current = self.current
        return tuple([b for b in self.target if b not in current])

    @_computed_once
    def sources(self) -> tuple[int, ...]:
        """Brokers that lose a replica (current − target), in current order (computed once)."""
        target = self.target
        return tuple([b for b in self.current if b not in target])

    @property
    def replica_moves(self) -> int:
        """New replicas created: the unit of data movement."""
        return len(self.destinations)

    @property
    def moves_data(self) -> bool:
        return bool(self.destinations)


@dataclass(frozen=True)
class BrokerLoad:
    """Load on one broker: replicas hosted, bytes hosted, partitions it is preferred leader of."""

    replicas: int = 0
    bytes: int = 0
    leaders: int = 0

    def __add__(self, other: "BrokerLoad") -> "BrokerLoad":
        return BrokerLoad(self.replicas + other.replicas, self.bytes + other.bytes,
                          self.leaders + other.leaders)


@dataclass(frozen=True)
class Plan:
    """A planned change: ``moves`` (sorted by tp) and the whole ``target`` of moved partitions.

    ``target`` maps every moved partition to its new ordered replica list (first = preferred
    leader); it is exactly what goes into Kafka's reassignment JSON. ``election`` and
    ``deletion`` hold batches for the election and topic-deletion operations (empty otherwise).
    ``removed`` are brokers that must end with no replica; ``notes`` are human-readable facts
    for the report (e.g. why a balance bound could not be met). ``dead`` are removed brokers
    that are not registered (down: their replicas are re-created from the surviving in-sync
    replicas, and they get no throttle); ``stranded`` are partitions left on a dead broker
    because no live replica is in their ISR (offline: nothing to copy from).
    """

    operation: str
    moves: tuple[Move, ...]
    target: Mapping[TopicPartition, tuple[int, ...]]
    seed: int = 0
    removed: frozenset[int] = frozenset()
    election: tuple[tuple[TopicPartition, ...], ...] = ()
    deletion: tuple[tuple[str, ...], ...] = ()
    notes: tuple[str, ...] = ()
    sized: bool = False
    params: Mapping[str, str] = field(default_factory=dict)
    dead: frozenset[int] = frozenset()
    stranded: tuple[TopicPartition, ...] = ()

    @property
    def replica_moves(self) -> int:
        return sum(m.replica_moves for m in self.moves)

    @property
    def bytes_moved(self) -> int:
        return sum(m.size * m.replica_moves for m in self.moves)

    def current(self) -> dict[TopicPartition, tuple[int, ...]]:
        """The current assignment of every moved partition (the rollback plan)."""
        return {m.tp: m.current for m in self.moves}


@dataclass(frozen=True)
class Wave:
    """One wave: its moves (sorted by tp) and what it costs."""

    index: int
    moves: tuple[Move, ...]
    bytes: int
    busiest_broker: int | None
    busiest_bytes: int
    predicted_seconds: float | None
    znode_bytes: int
    inbound: Mapping[int, int] = field(default_factory=dict)
    outbound: Mapping[int, int] = field(default_factory=dict)


def make_plan(operation: str, moves: list[Move], seed: int, **kwargs) -> Plan:
    """A :class:`Plan` with moves sorted by (topic, partition) and no-op entries dropped."""
    kept = sorted((m for m in moves if m.target != m.current), key=lambda m: m.tp)
    return Plan(operation, tuple(kept), {m.tp: m.target for m in kept}, seed, **kwargs)
