"""Add-brokers rebalance and move-topics: least movement onto a broker set, balanced, rack-aware.

* :func:`plan_add_brokers` moves replicas from the most loaded old brokers onto the new ones
  until replica counts are within one (where the constraints allow), one replica at a time,
  each replaced in place (so a moved preferred leader makes the new broker preferred leader,
  which the loop seeks until the new broker leads its share). Which replica: the one whose size
  is nearest to what keeps the new broker on course for its byte share (the cluster's mean bytes)
  over the replicas it still takes, so bytes end balanced too; without sizes, the first by
  (topic, partition).
* :func:`plan_move_topics` keeps every replica already inside ``broker_set`` and replaces the
  others in place with the least-loaded eligible brokers of the set (counts of that topic
  first, then cluster counts): the least-movement version of ``--generate``.

Failure: :class:`PlanRefused` for unknown/non-live brokers, unknown topics, a partition with
more replicas than the broker set, or a touched partition with a reassignment in flight.
"""

from __future__ import annotations

import bisect
from typing import Collection, Iterable, Iterator, Mapping

from kafka_zk.codecs import TopicPartition
from kafka_zk.model import ClusterSnapshot
from spark_jobs.kernels.decommission import refuse_reassigning
from spark_jobs.kernels.loads import cluster_loads, rack_map, rack_of, size_of
from spark_jobs.kernels.model import Move, Plan, PlanRefused, make_plan
from spark_jobs.kernels.placement import LeaderBalancer, Placer, seeded_ranks


def _live(snapshot: ClusterSnapshot, ids: Iterable[int], flag: str) -> list[int]:
    ids = sorted({int(b) for b in ids})
    if not ids:
        raise PlanRefused(f"{flag} is empty: name at least one broker id")
    unknown = [b for b in ids if b not in snapshot.brokers]
    if unknown:
        raise PlanRefused(f"{flag}: broker(s) {unknown} are not registered (live: "
                          f"{sorted(snapshot.brokers)}); start them or fix the list")
    return ids


def plan_add_brokers(snapshot: ClusterSnapshot, new_brokers: Collection[int],
                     sizes: Mapping[TopicPartition, int] | None = None, seed: int = 0) -> Plan:
    """Move a balanced share of replicas and preferred leaderships onto ``new_brokers``."""
    new = _live(snapshot, new_brokers, "--brokers")
    live = sorted(snapshot.brokers)
    parts = list(snapshot.partitions())
    refuse_reassigning([p for p in parts if p.is_reassigning and any(b in new for b in p.replicas)])
    racks = rack_map(snapshot.brokers)
    ranks = seeded_ranks(set(live) | {b for p in parts for b in p.replicas}, seed)
    loads = cluster_loads(parts, live, sizes)
    targets = {p.tp: list(p.replicas) for p in parts if not p.is_reassigning}
    current = {p.tp: p.replicas for p in parts}
    hosted: dict[int, list[tuple[int, TopicPartition, int]]] = {}
    for tp, reps in sorted(targets.items()):
        for i, b in enumerate(reps):
            hosted.setdefault(b, []).append((size_of(sizes, tp), tp, i))
    for b in hosted:
        hosted[b].sort()
    total_leaders = len(targets)
    leader_share = total_leaders // len(live)
    replica_share = -(-sum(len(r) for r in targets.values()) // len(live))
    byte_share = sum(loads.bytes.get(b, 0) for b in live) / len(live)

    def find(dst: int):
        want_leader = loads.leaders.get(dst, 0) < leader_share
        # bytes per replica that keep dst on course for its byte share over the replicas it still
        # takes, and that bring src back to its share over the replicas it still gives away; the
        # replica nearest their mean, weighted 2:1 towards dst (whose bytes are ours to set)
        takes = (byte_share - loads.bytes.get(dst, 0)) / max(1, replica_share - loads.replicas[dst])
        sources = sorted((b for b in live if b != dst), key=lambda b: (-loads.replicas.get(b, 0), ranks[b]))
        for src in sources:
            if loads.replicas.get(src, 0) - loads.replicas[dst] <= 1:
                return None
            gives = (loads.bytes.get(src, 0) - byte_share) / max(1, loads.replicas[src] - replica_share + 1)
            pick = None
            for k in _nearest_first(hosted.get(src, []), max(0.0, (2 * takes + gives) / 3)):
                size, tp, i = hosted[src][k]
                reps = targets[tp]
                if reps[i] != src or dst in reps:
                    continue
                others = [x for j, x in enumerate(reps) if j != i]
                used = {rack_of(racks, o) for o in others}
                if racks[dst] in used and rack_of(racks, src) not in used:
                    continue
                if (i == 0) == want_leader:
                    return src, k, size, tp, i
                if pick is None:
                    pick = (src, k, size, tp, i)
            if pick is not None:
                return pick
        return None

    for _step in range(sum(len(r) for r in targets.values())):
        pick = None
        for dst in sorted(new, key=lambda b: (loads.replicas[b], ranks[b])):
            pick = find(dst)
            if pick is not None:
                break
        if pick is None:
            break
        src, k, size, tp, i = pick
        hosted[src].pop(k)
        targets[tp][i] = dst
        for key, d in ((src, -1), (dst, 1)):
            loads.replicas[key] = loads.replicas.get(key, 0) + d
            loads.bytes[key] = loads.bytes.get(key, 0) + d * size
            if i == 0:
                loads.leaders[key] = loads.leaders.get(key, 0) + d
    final = {tp: tuple(r) for tp, r in targets.items() if tuple(r) != current[tp]}
    LeaderBalancer(loads, ranks, live).repair(final, [tp for tp in sorted(final)
                                                      if final[tp][0] != current[tp][0]])
    moves = [Move(tp, current[tp], r, size_of(sizes, tp), snapshot.partition(tp).leader)
             for tp, r in final.items()]
    return make_plan("add-brokers", moves, seed, sized=bool(sizes),
                     params={"brokers": ",".join(map(str, new))})


def _nearest_first(hosted: list[tuple[int, TopicPartition, int]], size: float) -> Iterator[int]:
    """Indexes of ``hosted`` (sorted by size) in order of distance from ``size``, smaller first on ties."""
    right = bisect.bisect_left(hosted, (size,))
    left = right - 1
    while left >= 0 or right < len(hosted):
        if right >= len(hosted) or (left >= 0 and size - hosted[left][0] <= hosted[right][0] - size):
            yield left
            left -= 1
        else:
            yield right
            right += 1


def topic_partitions(snapshot: ClusterSnapshot, topics: Iterable[str]):
    names = list(dict.fromkeys(topics))
    if not names:
        raise PlanRefused("no topic given: pass --topics a,b")
    missing = [t for t in names if t not in snapshot.topics]
    if missing:
        raise PlanRefused(f"topic(s) {missing} do not exist; check --topics (kafka-runbook topics --list)")
    return [p for t in sorted(names) for p in (snapshot.topics[t].partitions[i]
                                               for i in sorted(snapshot.topics[t].partitions))]


def plan_move_topics(snapshot: ClusterSnapshot, topics: Iterable[str], broker_set: Collection[int],
                     sizes: Mapping[TopicPartition, int] | None = None, seed: int = 0) -> Plan:
    """Every partition of ``topics`` onto ``broker_set``, keeping replicas already there."""
    allowed = _live(snapshot, broker_set, "--broker-list")
    parts = topic_partitions(snapshot, topics)
    refuse_reassigning([p for p in parts if p.is_reassigning])
    wide = [str(p.tp) for p in parts if len(p.replicas) > len(allowed)]
    if wide:
        raise PlanRefused(f"{len(wide)} partition(s) have more replicas than the {len(allowed)} brokers "
                          f"of the set ({', '.join(wide[:5])}); add brokers to --broker-list")
    racks = rack_map(snapshot.brokers)
    ranks = seeded_ranks(set(snapshot.brokers) | {b for p in parts for b in p.replicas}, seed)
    everything = cluster_loads(snapshot.partitions(), allowed, sizes)
    leaders = LeaderBalancer(everything, ranks, allowed)
    moves = []
    for topic in sorted({p.topic for p in parts}):
        tparts = [p for p in parts if p.topic == topic]
        loads = cluster_loads(tparts, allowed, None)
        loads.replicas = {b: loads.replicas.get(b, 0) for b in allowed}
        placer = Placer(allowed, loads, racks, ranks, by_bytes=False)
        for p in tparts:
            size = size_of(sizes, p.tp)
            new = list(p.replicas)
            for i, b in enumerate(p.replicas):
                if b not in allowed:
                    new[i] = placer.pick([x for x in new if x in allowed], size)
            target = tuple(new)
            if p.replicas[0] not in allowed:
                everything.leaders[p.replicas[0]] = everything.leaders.get(p.replicas[0], 1) - 1
                target = leaders.order(target)
            moves.append(Move(p.tp, p.replicas, target, size, p.leader))
    return make_plan("move-topics", moves, seed, sized=bool(sizes),
                     params={"topics": ",".join(sorted({p.topic for p in parts})),
                             "brokers": ",".join(map(str, allowed))})
