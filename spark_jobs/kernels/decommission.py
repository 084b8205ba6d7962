"""Decommission plan: move exactly the replicas hosted on removed brokers, nothing else.

Least movement: the number of new replicas equals the number of replicas on removed brokers
(the lower bound). Each removed replica is replaced *in place* in its partition's list, so the
preferred leader changes only where a removed broker was first; there the new preferred leader
is the replica with the fewest preferred leaderships (swapped into position 0).

Placement (greedy, on the driver): partitions in order (−size, topic, partition); each removed
replica goes to the least-loaded live broker (replica count, then bytes, then a seeded rank)
that is not in the partition and sits in a rack the partition does not use yet (when racks
allow). A repair pass then relocates received replicas from any broker that ends more than one
replica above an eligible, less-loaded broker, so counts end "water-filled": spread ≤ 1 where
the constraints allow it. Deterministic for a (snapshot, removed, sizes, seed).

``baseline`` carries the per-broker load of partitions that are not in ``snapshot`` (the Spark
job passes only the partitions on removed brokers plus aggregated loads of the rest).

Failure: :class:`PlanRefused` for an empty or unknown broker list, no broker left, a partition
that needs more brokers than remain, or a touched partition with a reassignment in flight.
"""

from __future__ import annotations

from typing import Collection, Mapping

from kafka_zk.codecs import TopicPartition
from kafka_zk.model import ClusterSnapshot, Partition
from spark_jobs.kernels.loads import cluster_loads, rack_map, rack_of, size_of
from spark_jobs.kernels.model import BrokerLoad, Move, Plan, PlanRefused, make_plan
from spark_jobs.kernels.placement import LeaderBalancer, Placer, seeded_ranks


def check_removed(snapshot: ClusterSnapshot, removed: Collection[int],
                  baseline: Mapping[int, BrokerLoad] | None) -> frozenset[int]:
    """The removed set, refused when empty or naming a broker the cluster does not know."""
    gone = frozenset(int(b) for b in removed)
    if not gone:
        raise PlanRefused("no broker to decommission: pass --brokers with at least one broker id")
    unknown = sorted(b for b in gone if b not in snapshot.brokers
                     and not (baseline and b in baseline and baseline[b].replicas))
    if unknown:  # the full pass only when a broker is neither registered nor in the baseline
        hosting = {b for p in snapshot.partitions() for b in p.replicas}
        unknown = [b for b in unknown if b not in hosting]
    if unknown:
        raise PlanRefused(f"broker(s) {unknown} are neither registered nor hosting any replica; "
                          f"check --brokers (registered: {sorted(snapshot.brokers)})")
    if not set(snapshot.brokers) - gone:
        raise PlanRefused(f"removing {sorted(gone)} leaves no live broker; keep at least one")
    return gone


def refuse_reassigning(parts: list[Partition]) -> None:
    busy = [str(p.tp) for p in parts if p.is_reassigning]
    if busy:
        raise PlanRefused(f"{len(busy)} partition(s) to move have a reassignment in flight "
                          f"({', '.join(busy[:5])}); wait until it finishes (reassign --verify), "
                          "then take a new snapshot and plan again")


def repair_counts(placer: Placer, targets: dict[TopicPartition, list[int]],
                  received: dict[int, list[tuple[TopicPartition, int, int]]]) -> None:
    """Relocate received replicas off brokers > 1 above an eligible, less-loaded broker.

    ``received[b]`` lists (tp, index in target, size) of new replicas placed on b. Each
    relocation lowers the sum of squared counts, so the loop ends.
    """
    counts = placer.loads.replicas
    cands = placer.candidates
    for _round in range(4 * sum(len(v) for v in received.values()) + 1):
        low = min(counts.get(c, 0) for c in cands)
        worst = max(received, key=lambda b: (counts.get(b, 0), -b), default=None)
        if worst is None or counts.get(worst, 0) <= low + 1:
            return
        changed = False
        for b in sorted(received, key=lambda b: (-counts.get(b, 0), b)):
            if counts.get(b, 0) <= low + 1:
                break
            for k, (tp, i, size) in enumerate(received[b]):
                others = [x for j, x in enumerate(targets[tp]) if j != i]
                b_shares = rack_of(placer.racks, b) in {rack_of(placer.racks, o) for o in others}
                best = None
                for c in cands:
                    if counts.get(c, 0) >= counts[b] - 1 or c in others:
                        continue
                    if not b_shares and not placer.eligible(c, others):
                        continue
                    key = placer._key(c)
                    if best is None or key < best[0]:
                        best = (key, c)
                if best is not None:
                    c = best[1]
                    targets[tp][i] = c
                    placer.add(b, size, -1)
                    placer.add(c, size)
                    received[b].pop(k)
                    received.setdefault(c, []).append((tp, i, size))
                    changed = True
                    break
            if changed:
                break
        if not changed:
            return


def plan_decommission(snapshot: ClusterSnapshot, removed: Collection[int],
                      sizes: Mapping[TopicPartition, int] | None = None, seed: int = 0,
                      baseline: Mapping[int, BrokerLoad] | None = None) -> Plan:
    """Move every replica off ``removed`` with the least movement, balanced and rack-aware."""
    gone = check_removed(snapshot, removed, baseline)
    parts = list(snapshot.partitions())
    affected = [p for p in parts if not gone.isdisjoint(p.replicas)]  # in (topic, partition) order
    refuse_reassigning(affected)
    live = sorted(b for b in snapshot.brokers if b not in gone)
    too_big = [str(p.tp) for p in affected if len(p.replicas) > len(live)]
    if too_big:
        raise PlanRefused(f"{len(too_big)} partition(s) have more replicas than the {len(live)} brokers "
                          f"left ({', '.join(too_big[:5])}); lower their replication factor first "
                          "(plan change-rf) or decommission fewer brokers")
    racks = rack_map(snapshot.brokers)
    all_ids = set(snapshot.brokers).union(*(p.replicas for p in parts)) | set(baseline or {})
    ranks = seeded_ranks(all_ids, seed)
    loads = cluster_loads(parts, live, sizes, baseline)
    placer = Placer(live, loads, racks, ranks, by_bytes=bool(sizes))

    tps = [p.tp for p in affected]
    psizes = [size_of(sizes, tp) for tp in tps]
    order = sorted(range(len(affected)), key=lambda k: (-psizes[k], tps[k]))
    targets: dict[TopicPartition, list[int]] = {}
    received: dict[int, list[tuple[TopicPartition, int, int]]] = {}
    for k in order:
        p, tp, size = affected[k], tps[k], psizes[k]
        new = list(p.replicas)
        for i, b in enumerate(p.replicas):
            if b in gone:
                others = [x for x in new if x not in gone]
                chosen = placer.pick(others, size)
                new[i] = chosen
                received.setdefault(chosen, []).append((tp, i, size))
        targets[tp] = new
    repair_counts(placer, targets, received)

    leaders = LeaderBalancer(loads, ranks, live)
    for b in gone:
        loads.leaders.pop(b, None)
    final: dict[TopicPartition, tuple[int, ...]] = {}
    for p, tp in zip(affected, tps):
        new = tuple(targets[tp])
        final[tp] = leaders.order(new) if p.replicas[0] in gone else new
    leaders.repair(final, [tp for p, tp in zip(affected, tps) if p.replicas[0] in gone])
    moves = [Move(tp, p.replicas, final[tp], size, _leader_after_demotion(p, gone))
             for p, tp, size in zip(affected, tps, psizes)]
    return make_plan("decommission", moves, seed, removed=gone, sized=bool(sizes),
                     params={"brokers": ",".join(str(b) for b in sorted(gone))})


def _leader_after_demotion(p: Partition, gone: Collection[int]) -> int | None:
    """The broker new replicas will copy from: the runbook demotes the removed brokers before
    any data moves, so a partition they lead is then led by its first surviving replica."""
    if p.leader is not None and p.leader >= 0 and p.leader not in gone:
        return p.leader
    return next((b for b in p.replicas if b not in gone), p.leader)
