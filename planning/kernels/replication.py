"""Change the replication factor of topics: rack-aware, balanced, safe.

Up: new replicas are appended (the preferred leader does not change) on the least-loaded live
brokers in racks the partition does not use yet; with sizes, which broker of a rack takes which
new replica is then chosen for bytes (:func:`planning.kernels.byte_balance.repair_bytes`; counts unchanged). Down: replicas are dropped in this order —
out-of-sync replicas first, then replicas sharing a rack with another replica, then the most
loaded brokers; never the current leader, never the last in-sync replica, and the preferred
replica (first) only when nothing else can go.

Failure: :class:`PlanRefused` for an RF < 1 or larger than the live brokers, unknown topics,
or partitions with a reassignment in flight.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from kafka_zk.codecs import TopicPartition
from kafka_zk.model import ClusterSnapshot
from planning.model import Move, Plan, PlanRefused, make_plan
from planning.kernels.decommission import refuse_reassigning, repair_bytes
from planning.kernels.loads import cluster_loads, rack_map, rack_of, size_of
from planning.kernels.placement import Placer, seeded_ranks
from planning.kernels.add_and_move import topic_partitions


def plan_change_replication_factor(snapshot: ClusterSnapshot, topics: Iterable[str], replication_factor: int,
                                   sizes: Mapping[TopicPartition, int] | None = None,
                                   seed: int = 0) -> Plan:
    rf = int(replication_factor)
    live = sorted(snapshot.brokers)
    if rf < 1 or rf > len(live):
        raise PlanRefused(f"replication factor {rf} must be between 1 and the {len(live)} live brokers")
    parts = topic_partitions(snapshot, topics)
    refuse_reassigning([p for p in parts if p.is_reassigning])
    racks = rack_map(snapshot.brokers)
    ranks = seeded_ranks(set(live) | {b for p in parts for b in p.replicas}, seed)
    loads = cluster_loads(snapshot.partitions(), live, sizes)
    placer = Placer(live, loads, racks, ranks, by_bytes=bool(sizes))
    targets: dict[TopicPartition, list[int]] = {}
    received: dict[int, list[tuple[TopicPartition, int, int]]] = {}
    notes = []
    for p in parts:
        size = size_of(sizes, p.tp)
        reps = targets[p.tp] = list(p.replicas)
        if len(reps) < rf:
            while len(reps) < rf:
                chosen = placer.pick(reps, size)
                received.setdefault(chosen, []).append((p.tp, len(reps), size))
                reps.append(chosen)
        elif len(reps) > rf:
            isr = set(p.isr)
            while len(reps) > rf:
                counts = {}
                for b in reps:
                    counts[rack_of(racks, b)] = counts.get(rack_of(racks, b), 0) + 1
                in_sync_left = [b for b in reps if b in isr]

                def key(b: int):
                    protected = b == p.leader or (b in isr and len(in_sync_left) <= 1)
                    return (protected, b in isr, counts[rack_of(racks, b)] <= 1, reps.index(b) == 0,
                            -loads.replicas.get(b, 0), ranks.get(b, b))
                victim = min(reps, key=key)
                if key(victim)[0]:
                    notes.append(f"{p.tp}: kept {len(reps)} replicas, only the leader/last in-sync "
                                 "replica could go")
                    break
                reps.remove(victim)
                if victim in placer._version:
                    placer.add(victim, size, -1)
    if sizes:
        repair_bytes(placer, targets, received)     # even out the new replicas' bytes per rack
    moves = [Move(p.tp, p.replicas, tuple(targets[p.tp]), size_of(sizes, p.tp), p.leader) for p in parts]
    return make_plan("change-rf", moves, seed, sized=bool(sizes), notes=tuple(notes),
                     params={"topics": ",".join(sorted({p.topic for p in parts})),
                             "replication_factor": str(rf)})
