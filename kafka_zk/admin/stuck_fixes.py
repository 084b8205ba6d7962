"""Which way out of a stuck move copies least, per partition, and the throttles nobody of ours set.

Pure, on a :class:`ClusterSnapshot` and (optionally) the bytes each replica holds (what
``kafka-log-dirs --describe`` reports: ``(partition, broker) → bytes``):

* :func:`choose_fixes` — for each partition whose move names a broker that is gone
  (:data:`kafka_zk.admin.stuck.DEAD_TARGET`), the two ways out and what each still has to copy:
  **revert** to the partition's original replicas (those it had before the move: the replicas
  minus the adding ones; a 2.4 controller given the original list as the target cancels the move
  at once, no copy, docs/zookeeper.md §2.7.3), possible only when every original replica is
  registered and in the ISR (it holds the data); **rewrite** the target with a registered broker
  in place of each dead one (what the planners' one placer,
  :func:`spark_jobs.kernels.placement.replacement_targets`, chose: the runbook passes in the targets
  the plan job's ``replace-dead-targets`` operation wrote; this layer may not import the planners).
  Revert is chosen whenever it is possible (it copies nothing); rewrite otherwise.
* :func:`foreign_throttles` — every throttle rate on a broker and throttled-replica list on a
  topic that no runbook run recorded as its own (left by Kafka's own
  ``kafka-reassign-partitions --throttle``, which removes them only with ``--verify`` once the
  move ends, or by hand).

Failure: :func:`choose_fixes` raises :class:`InvalidInput` (from ``replacement_targets``) when a
partition can neither be reverted nor given a registered broker in place of a dead one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from kafka_zk.admin.stuck import DEAD_TARGET, StuckPartition
from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidInput
from kafka_zk.health.model import throttle_keys_of_broker, throttle_keys_of_topic
from kafka_zk.health.owners import ThrottleOwners
from kafka_zk.model import ClusterSnapshot

REVERT, REWRITE = "revert", "rewrite"
ReplicaSizes = Mapping[tuple[TopicPartition, int], int]


@dataclass(frozen=True)
class FixChoice:
    """One stuck partition's two ways out, the bytes each still copies (None: sizes unknown) and
    the one chosen."""

    tp: TopicPartition
    chosen: str
    target: tuple[int, ...]                     # what the fix writes for this partition
    revert_to: tuple[int, ...] | None           # None: reverting is not possible (``why``)
    rewrite_to: tuple[int, ...] | None          # None: no registered broker can replace a dead one
    revert_bytes: int | None
    rewrite_bytes: int | None
    why: str


@dataclass(frozen=True)
class ForeignThrottle:
    """A throttle no runbook run of ours owns: ``entity`` is ``broker <id>`` or ``topic <name>``."""

    entity: str
    keys: dict[str, str]


def original_replicas(snapshot: ClusterSnapshot, tp: TopicPartition) -> tuple[int, ...]:
    """The replicas the partition had before the move: its replicas minus the adding ones."""
    p = snapshot.partition(tp)
    return tuple(b for b in p.replicas if b not in p.adding)


def copy_bytes(snapshot: ClusterSnapshot, tp: TopicPartition, target: Iterable[int],
               sizes: ReplicaSizes | None) -> int | None:
    """What the replicas of ``target`` not in the ISR still have to copy: the partition's size
    (its largest replica) minus what each holds; None without sizes."""
    if sizes is None:
        return None
    p = snapshot.partition(tp)
    held = {b: sizes.get((tp, b), 0) for b in set(p.replicas) | set(target)}
    size = max(held.values(), default=0)
    return sum(max(0, size - held.get(b, 0)) for b in target if b not in p.isr)


def _revert_blocker(snapshot: ClusterSnapshot, tp: TopicPartition, origin: tuple[int, ...]) -> str:
    """Why ``tp`` cannot go back to ``origin`` ("" when it can)."""
    p = snapshot.partition(tp)
    if not origin:
        return "no original replica is left to go back to"
    dead = [b for b in origin if b not in snapshot.brokers]
    if dead:
        return f"original replica(s) on broker(s) {dead} not registered"
    out = [b for b in origin if b not in p.isr]
    if out:
        return f"original replica(s) on broker(s) {out} not in the ISR (not holding all the data)"
    return ""


Rewrite = Callable[[ClusterSnapshot, list[StuckPartition]], Mapping[TopicPartition, tuple[int, ...]]]


def dead_target_partitions(snapshot: ClusterSnapshot, stuck: Iterable[StuckPartition]) -> list[StuckPartition]:
    """The stuck partitions a fix rewrites: those still present whose target names a broker that is gone."""
    return [s for s in stuck if s.cause.kind == DEAD_TARGET and snapshot.has_partition(s.tp)]


def choose_fixes(snapshot: ClusterSnapshot, stuck: Iterable[StuckPartition],
                 sizes: ReplicaSizes | None = None, *, replacement_targets: Rewrite) -> list[FixChoice]:
    """Per dead-target partition, revert when possible (it copies nothing), else rewrite to what
    ``replacement_targets`` gives (the planners' placer's choice, passed in by the runbook; it raises
    :class:`InvalidInput` for a partition no registered broker can take)."""
    out = []
    for s in dead_target_partitions(snapshot, stuck):
        origin = original_replicas(snapshot, s.tp)
        blocker = _revert_blocker(snapshot, s.tp, origin)
        revert_to = None if blocker else origin
        try:
            rewrite_to: tuple[int, ...] | None = tuple(replacement_targets(snapshot, [s])[s.tp])
        except InvalidInput:
            if revert_to is None:
                raise
            rewrite_to = None
        revert_bytes = copy_bytes(snapshot, s.tp, revert_to, sizes) if revert_to is not None else None
        rewrite_bytes = copy_bytes(snapshot, s.tp, rewrite_to, sizes) if rewrite_to is not None else None
        if revert_to is not None:
            why = (f"revert to the original replicas {list(origin)}: all registered and in the ISR, nothing to copy"
                   + (f" (a rewrite to {list(rewrite_to)} would copy {bytes_text(rewrite_bytes)})" if rewrite_to else ""))
            out.append(FixChoice(s.tp, REVERT, revert_to, revert_to, rewrite_to, revert_bytes, rewrite_bytes, why))
        else:
            why = f"rewrite to {list(rewrite_to)}: cannot revert to {list(origin)} ({blocker})"
            out.append(FixChoice(s.tp, REWRITE, rewrite_to, None, rewrite_to, None, rewrite_bytes, why))
    return out


def bytes_text(n: int | None) -> str:
    """``12.0 MiB``, or what an unknown size means."""
    if n is None:
        return "an unknown number of bytes (no log sizes)"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def foreign_throttles(snapshot: ClusterSnapshot, owners: ThrottleOwners) -> list[ForeignThrottle]:
    """Broker rates and topic throttled-replica lists that no live runbook run recorded."""
    owned_brokers = {str(b) for r in owners.runs for b in r.brokers}
    owned_topics = {str(t) for r in owners.runs for t in r.topics}
    out = []
    for entity in sorted(snapshot.broker_configs):
        keys = throttle_keys_of_broker(snapshot.broker_configs[entity])
        if keys and entity not in owned_brokers:
            out.append(ForeignThrottle(f"broker {entity}", dict(sorted(keys.items()))))
    for name in sorted(snapshot.topics):
        keys = throttle_keys_of_topic(snapshot.topics[name].config)
        if keys and name not in owned_topics:
            out.append(ForeignThrottle(f"topic {name}", dict(sorted(keys.items()))))
    return out
