"""Which way out of a stuck move copies least, per partition, and the throttles nobody of ours set.

Pure, on a :class:`ClusterSnapshot` and (optionally) the bytes each replica holds (what
``kafka-log-dirs --describe`` reports: ``(partition, broker) → bytes``):

* :func:`choose_fixes` — for each partition whose move names a broker that is gone
  (:data:`kafka_zk.admin.stuck.DEAD_TARGET`), the two ways out and what each still has to copy:
  **revert** to the partition's original replicas, in their original order (:func:`original_order`;
  a 2.4 controller given the original list as the target cancels the move at once, no copy, and
  keeps the list's order, docs/zookeeper.md §2.7.3), possible only when every original replica is
  registered and in the ISR (it holds the data); **rewrite** the target with a registered broker
  in place of each dead one (what the planners' one placer,
  :func:`planning.kernels.placement.replacement_targets`, chose: the runbook passes in the targets
  the plan job's ``replace-dead-targets`` operation wrote; this layer may not import the planners).
  Revert is chosen whenever it is possible (it copies nothing); rewrite otherwise.
* :func:`original_order` — the original replicas and where their order comes from. During a 2.4+
  move the topic znode holds the *set* of the original replicas (replicas − adding) but not their
  order: Kafka 2.4's ``ReplicaAssignment.reassignTo`` writes the target first, then the original
  replicas not in it, and its ``originReplicas`` is that list minus the adding ones — so [1,2] →
  [2,6] leaves [2,6,1] and ``originReplicas`` [2,1] (Kafka's own cancellation makes the same
  mistake). The order is taken, first found: (1) the topic's ``leader.replication.throttled.replicas``
  when no run of ours owns it — Kafka's ``kafka-reassign-partitions --execute --throttle`` writes
  each moving partition's replicas *before* the move, in their order — and it lists exactly the
  original set; (2) the topic znode when the move leaves one order possible (no original replica
  kept in the target, or one original replica); (3) otherwise it is reconstructed — the current
  leader first (a move does not change the leader, and it is the preferred replica unless a
  preferred election is due), then the others as the znode lists them — and said to be a
  reconstruction (``exact`` False) in the diagnosis and the approval. A partition without
  adding/removing lists (a pre-2.4 payload, or a move the controller has not acted on): when the
  target names a broker not in the replicas, the controller has not written the move and the
  replicas are the original, exact; else (a 1.x–2.3 controller wrote the union and keeps the
  original in memory only, §2.7.2) only the throttle list can give it, and without it no revert
  is offered.

The throttles a foreign tool left are found by :func:`kafka_zk.health.owners.foreign_throttles`.

Failure: :func:`choose_fixes` raises :class:`InvalidInput` (from ``replacement_targets``) when a
partition can neither be reverted nor given a registered broker in place of a dead one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Callable, Iterable, Mapping

from kafka_zk.admin.stuck import DEAD_TARGET, StuckPartition
from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidInput
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
    order_source: str = ""                      # where the revert's order comes from (:func:`original_order`)
    order_exact: bool = True                    # False: the order is a reconstruction (said in ``why``)


@dataclass(frozen=True)
class Origin:
    """A stuck partition's original replicas in the order a revert writes, where that order comes
    from (said to the approver) and whether it is the original order for certain."""

    replicas: tuple[int, ...]
    source: str
    exact: bool


LEADER_THROTTLE = "leader.replication.throttled.replicas"


def throttle_order(config: Mapping[str, str], partition: int) -> tuple[int, ...]:
    """The brokers ``leader.replication.throttled.replicas`` lists for ``partition``, in its order
    (``()`` for ``*``, an absent or unreadable list)."""
    out: list[int] = []
    for item in str(config.get(LEADER_THROTTLE) or "").split(","):
        p, _, b = item.strip().partition(":")
        if p.strip().isdigit() and b.strip().isdigit() and int(p) == partition and int(b) not in out:
            out.append(int(b))
    return tuple(out)


def original_order(snapshot: ClusterSnapshot, tp: TopicPartition, target: Iterable[int],
                   owned_topics: Iterable[str] = ()) -> Origin:
    """The replicas ``tp`` had before its move to ``target``, in their original order as far as it
    can be known (module docstring); ``owned_topics``: topics whose throttle lists a run of ours set
    (sorted by broker, so they say nothing of the order). ``replicas`` is empty when the original
    replicas themselves are not known."""
    p = snapshot.partition(tp)
    target = tuple(target)
    topic = snapshot.topics[tp.topic]
    listed = () if tp.topic in set(owned_topics) else throttle_order(topic.config, tp.partition)
    from_tool = "the topic's leader.replication.throttled.replicas (Kafka's kafka-reassign-partitions " \
                "--throttle lists each moving partition's replicas before the move, in their order)"
    if not p.adding and not p.removing:
        if set(target) - set(p.replicas):
            return Origin(p.replicas, "the topic znode (the controller has not written the move: its replicas "
                                      "are the original, in order)", True)
        if listed and set(listed) <= set(p.replicas):
            return Origin(listed, from_tool, True)
        return Origin((), "not in ZooKeeper: the topic znode has no adding_replicas (a pre-2.4 payload) and lists "
                          "the union of the original and target replicas (a 1.x-2.3 controller keeps the original "
                          "in memory only, docs/zookeeper.md §2.7.2)", False)
    origin = tuple(b for b in p.replicas if b not in p.adding)
    if listed and sorted(listed) == sorted(origin):
        return Origin(listed, from_tool, True)
    kept = [b for b in origin if b in target]
    if not kept or len(origin) == 1:
        return Origin(origin, "the topic znode: replicas minus adding_replicas (no original replica is kept in the "
                              "target, so the znode keeps their order, docs/zookeeper.md §2.7.3)", True)
    order = ((p.leader,) if p.leader in origin else ()) + tuple(b for b in origin if b != p.leader)
    return Origin(order, f"reconstructed: the topic znode keeps the original replicas {sorted(origin)} but not their "
                         "order (it lists the target first, docs/zookeeper.md §2.7.3) and no throttle list of "
                         "Kafka's tool records it; "
                         + (f"the current leader {p.leader} first (a move does not change the leader)"
                            if p.leader in origin else "as the topic znode lists them"), False)


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


def _revert_blocker(snapshot: ClusterSnapshot, tp: TopicPartition, origin: Origin) -> str:
    """Why ``tp`` cannot go back to ``origin`` ("" when it can)."""
    p = snapshot.partition(tp)
    if not origin.replicas and not origin.exact:
        return f"the original replicas are {origin.source}"
    origin = origin.replicas
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
                 sizes: ReplicaSizes | None = None, *, replacement_targets: Rewrite,
                 owned_topics: AbstractSet[str] = frozenset()) -> list[FixChoice]:
    """Per dead-target partition, revert when possible (it copies nothing) to the original replicas in
    their original order (:func:`original_order`; ``owned_topics``: the topics whose throttles runs of
    ours own, whose lists say nothing of the order), else rewrite to what ``replacement_targets`` gives (the
    planners' placer's choice, passed in by the runbook; it raises :class:`InvalidInput` for a
    partition no registered broker can take)."""
    out = []
    for s in dead_target_partitions(snapshot, stuck):
        found = original_order(snapshot, s.tp, s.target, owned_topics)
        origin = found.replicas
        blocker = _revert_blocker(snapshot, s.tp, found)
        revert_to = None if blocker else origin
        try:
            rewrite_to: tuple[int, ...] | None = tuple(replacement_targets(snapshot, [s])[s.tp])
        except InvalidInput:
            if revert_to is None:
                raise
            rewrite_to = None
        revert_bytes = copy_bytes(snapshot, s.tp, revert_to, sizes) if revert_to is not None else None
        rewrite_bytes = copy_bytes(snapshot, s.tp, rewrite_to, sizes) if rewrite_to is not None else None
        order = (f"original order from {found.source}" if found.exact else
                 f"ORIGINAL ORDER UNKNOWN, {found.source}: the preferred leader may differ from before the move")
        if revert_to is not None:
            why = (f"revert to the original replicas {list(origin)}: all registered and in the ISR, nothing to copy"
                   + (f" (a rewrite to {list(rewrite_to)} would copy {bytes_text(rewrite_bytes)})"
                      if rewrite_to else "")
                   + f"; {order}")
            out.append(FixChoice(s.tp, REVERT, revert_to, revert_to, rewrite_to, revert_bytes, rewrite_bytes, why,
                                 found.source, found.exact))
        else:
            back = list(origin) or "the original replicas"
            why = f"rewrite to {list(rewrite_to)}: cannot revert to {back} ({blocker})"
            out.append(FixChoice(s.tp, REWRITE, rewrite_to, None, rewrite_to, None, rewrite_bytes, why,
                                 found.source, found.exact))
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
