"""Decommission plan: move exactly the replicas hosted on removed brokers, nothing else.

Least movement: the number of new replicas equals the number of replicas on removed brokers
(the lower bound). Each removed replica is replaced *in place* in its partition's list; where a
removed broker was first, the new preferred leader is the replica with the fewest preferred
leaderships (swapped into position 0). When that cannot even the preferred-leader counts (e.g.
all removed brokers in one rack, whose partitions' other replicas sit on a few brokers), chains
of swaps (:meth:`planning.kernels.placement.LeaderBalancer.repair`) also reorder other
partitions the plan moves anyway — never one it would not move, never adding a replica move —
until the spread is ≤ 1 or no reorder of moved partitions can lower it.

Placement (greedy, on the driver): partitions in order (−size, topic, partition); each removed
replica goes to the least-loaded live broker (replica count, then bytes, then a seeded rank)
that is not in the partition and sits in a rack the partition does not use yet (when racks
allow). A repair pass then relocates received replicas from any broker that ends more than one
replica above an eligible, less-loaded broker, so counts end "water-filled": spread ≤ 1 where
the constraints allow it. With sizes, a last pass chooses which receiver of a rack takes which
new replica, so bytes even out without changing counts or movement
(:func:`planning.kernels.byte_balance.repair_bytes`: a deal by byte deficit, then swaps); where a
rack still ends above 10 %, the plan's notes say why (:func:`~planning.kernels.byte_balance.bytes_notes`).
Deterministic for a (snapshot, removed, sizes, seed).

``baseline`` carries the per-broker load of partitions that are not in ``snapshot`` (the Spark
job passes only the partitions on removed brokers plus aggregated loads of the rest).

Disk capacity (optional, with sizes): no broker may receive a replica that takes it past its
limit (capacity × threshold, :mod:`kafka_zk.capacity`); the repair passes keep to it too. Kept
brokers only gain bytes in a decommission, so the final level is also the peak of every wave.

Dead brokers (removed, not registered, still holding replicas: :mod:`planning.dead_brokers`):
their replicas are placed the same way and copied from the live leaders; a partition whose ISR
names no registered broker cannot be copied and is left out of the moves (``Plan.stranded``).

Failure: :class:`PlanRefused` for an empty or unknown broker list, no broker left, a partition
that needs more brokers than remain, a touched partition with a reassignment in flight, or a
placement that cannot keep every receiving broker under its disk limit (the message names the
brokers, their bytes, and what would fit: :func:`planning.kernels.capacity.shortfall_message`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Collection, Mapping

from kafka_zk.capacity import DiskCapacity
from kafka_zk.codecs import PartitionState, TopicPartition
from kafka_zk.model import ClusterSnapshot, Partition
from planning.dead_brokers import dead_among, has_no_source
from planning.model import BrokerLoad, Move, Plan, PlanRefused, make_plan
from planning.kernels.balance_rule import NewReplica
from planning.kernels.byte_balance import bytes_notes, repair_bytes
from planning.kernels.capacity import shortfall_message
from planning.kernels.disk_relief import relieve
from planning.kernels.loads import cluster_loads, rack_map, rack_of, size_of
from planning.kernels.placement import DiskFull, LeaderBalancer, Placer, seeded_ranks

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
                replica = NewReplica.at(targets[tp], i, placer.racks)
                best = None
                for c in cands:
                    if counts.get(c, 0) >= counts[b] - 1 or not replica.may_move_to(c, placer.racks) \
                            or not placer.fits(c, size):
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
        if not changed and not _relocate_along_a_chain(placer, targets, received, worst):
            return


def _relocate_along_a_chain(placer: Placer, targets: dict[TopicPartition, list[int]],
                            received: dict[int, list[tuple[TopicPartition, int, int]]], start: int) -> bool:
    """Hand one new replica from ``start`` down a chain of brokers to one holding two fewer.

    Where no broker two replicas below ``start`` can take any of its new replicas directly (the
    partitions it received already have replicas there, or the rack rule forbids it), a chain
    can: ``start`` gives a partition to ``x``, ``x`` gives another to ``c`` — counts on the way
    stay, ``start`` loses one, ``c`` gains one, moves stay as many (breadth-first search over
    brokers; each partition used once per chain). Found by the planner's property test: a
    sized plan ended with counts 10 and 8 where the unsized one ended even. True if one moved.
    """
    counts = placer.loads.replicas
    goal = counts.get(start, 0) - 1
    racks = placer.racks
    seen: dict[tuple[TopicPartition, int], NewReplica] = {}

    def facts(item: tuple[TopicPartition, int, int]) -> NewReplica:
        tp, i, _size = item
        if (tp, i) not in seen:       # nothing changes during the search: one look per replica
            seen[tp, i] = NewReplica.at(targets[tp], i, racks)
        return seen[tp, i]

    def can_take(item: tuple[TopicPartition, int, int], c: int) -> bool:
        """Whether ``c`` could hold the new replica ``item`` instead (rack rule, disk)."""
        return facts(item).may_move_to(c, racks) and placer.fits(c, item[2])

    all_racks = frozenset(rack_of(racks, c) for c in placer.candidates)
    reach: dict[int, frozenset[str]] = {}

    def racks_reached(u: int) -> frozenset[str]:
        """Racks some new replica of ``u`` may move to (skips hopeless scans: with as many
        racks as replicas, a new replica can only move within its rack)."""
        if u not in reach:
            out: set[str] = set()
            for item in received.get(u, ()):
                replica = facts(item)
                out |= all_racks if replica.holder_shares_rack else all_racks - replica.racks_used
                if len(out) == len(all_racks):
                    break
            reach[u] = frozenset(out)
        return reach[u]

    parent: dict[int, tuple[int, int]] = {start: (-1, -1)}      # broker -> (from broker, item index)
    frontier = [start]
    on_path: dict[int, set[TopicPartition]] = {start: set()}    # partitions the chain to a broker moves
    while frontier:
        nxt = []
        for u in frontier:
            reached = racks_reached(u)
            for c in placer.candidates:
                if c in parent or rack_of(racks, c) not in reached:
                    continue
                for k, item in enumerate(received.get(u, ())):
                    if item[0] in on_path[u] or not can_take(item, c):
                        continue
                    parent[c] = (u, k)
                    on_path[c] = on_path[u] | {item[0]}
                    if counts.get(c, 0) < goal:
                        _apply_chain(placer, targets, received, parent, c)
                        return True
                    nxt.append(c)
                    break
        frontier = nxt
    return False


def _apply_chain(placer: Placer, targets: dict[TopicPartition, list[int]],
                 received: dict[int, list[tuple[TopicPartition, int, int]]],
                 parent: dict[int, tuple[int, int]], end: int) -> None:
    steps = []
    c = end
    while parent[c][0] != -1:
        u, k = parent[c]
        steps.append((u, received[u][k], c))
        c = u
    for u, item, c in steps:          # items were read before any change: indices stay valid
        tp, i, size = item
        targets[tp][i] = c
        received[u].remove(item)
        received.setdefault(c, []).append(item)
        placer.add(u, size, -1)
        placer.add(c, size)


def plan_decommission(snapshot: ClusterSnapshot, removed: Collection[int],
                      sizes: Mapping[TopicPartition, int] | None = None, seed: int = 0,
                      baseline: Mapping[int, BrokerLoad] | None = None,
                      capacity: DiskCapacity | None = None, allow_extra_moves: bool = False) -> Plan:
    """Move every replica off ``removed`` with the least movement, balanced and rack-aware.

    With ``capacity`` and ``sizes``, no receiving broker passes its disk limit; when least
    movement cannot fit and ``allow_extra_moves``, other replicas make room
    (:mod:`planning.kernels.disk_relief`; the snapshot must then hold every partition).
    """
    if capacity is not None and sizes:
        try:
            return _plan(snapshot, removed, sizes, seed, baseline, capacity)
        except DiskFull:
            free = _plan(snapshot, removed, sizes, seed, baseline, None)
            gone = frozenset(free.removed)
            live = sorted(b for b in snapshot.brokers if b not in gone)
            loads = cluster_loads(snapshot.partitions(), live, sizes, baseline)
            for m in free.moves:
                for b in m.destinations:
                    loads.bytes[b] = loads.bytes.get(b, 0) + m.size
            limits, racks = capacity.limits(live), rack_map(snapshot.brokers)
            message = shortfall_message(loads.bytes, limits, capacity, racks, live, sorted(gone))
            if allow_extra_moves:
                after = {b: loads.bytes.get(b, 0) for b in live}
                leaders = cluster_loads(snapshot.partitions(), live, None, baseline, free.target).leaders
                extra = relieve(snapshot, sizes, after, limits, racks, {m.tp for m in free.moves}, gone, leaders)
                if extra:
                    over = sorted({m.sources[0] for m in extra})
                    note = (f"{len(extra)} extra replica move(s) ({sum(m.size for m in extra)} bytes) off broker(s) "
                            f"{', '.join(map(str, over))} make disk room (allow_extra_moves): least movement alone "
                            f"would overfill them; replica and leader counts may be less even than without them")
                    return make_plan("decommission", list(free.moves) + extra, seed, removed=gone, sized=True,
                                     params={**free.params, "extra_moves": str(len(extra))}, notes=(note,),
                                     dead=free.dead, stranded=free.stranded)
                message += ("; even moving other replicas off those brokers (allow_extra_moves) does not make "
                            "enough room within the rack rule")
            else:
                message += "; or allow extra moves (other replicas move off the full brokers to make room)"
            raise PlanRefused(message) from None
    return _plan(snapshot, removed, sizes, seed, baseline, None)


def _plan(snapshot: ClusterSnapshot, removed: Collection[int], sizes: Mapping[TopicPartition, int] | None,
          seed: int, baseline: Mapping[int, BrokerLoad] | None, capacity: DiskCapacity | None) -> Plan:
    gone = check_removed(snapshot, removed, baseline)
    parts = list(snapshot.partitions())
    affected = [p for p in parts if not gone.isdisjoint(p.replicas)]  # in (topic, partition) order
    dead = dead_among(snapshot, gone)
    stranded: tuple[TopicPartition, ...] = ()
    if dead:    # partitions on a dead broker with no live in-sync replica: nothing to copy from, left as they are
        registered = snapshot.brokers
        stranded = tuple(p.tp for p in affected if not dead.isdisjoint(p.replicas) and has_no_source(p, registered))
        if stranded:
            left = set(stranded)
            affected = [p for p in affected if p.tp not in left]
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
    limits = capacity.limits(live) if capacity is not None else None
    placer = Placer(live, loads, racks, ranks, by_bytes=bool(sizes), limits=limits)

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
    notes: list[str] = []
    if sizes:
        repair_bytes(placer, targets, received)
        if limits:          # the byte swaps may have made room where counts could still even out
            repair_counts(placer, targets, received)
        notes = bytes_notes(placer, received)

    leaders = LeaderBalancer(loads, ranks, live)
    for b in gone:
        loads.leaders.pop(b, None)
    final: dict[TopicPartition, tuple[int, ...]] = {}
    for p, tp in zip(affected, tps):
        new = tuple(targets[tp])
        final[tp] = leaders.order(new) if p.replicas[0] in gone else new
    led_by_gone = [tp for p, tp in zip(affected, tps) if p.replicas[0] in gone]
    leaders.repair(final, led_by_gone, [tp for p, tp in zip(affected, tps) if p.replicas[0] not in gone])
    moves = [Move(tp, p.replicas, final[tp], size, _leader_after_demotion(p, gone))
             for p, tp, size in zip(affected, tps, psizes)]
    return make_plan("decommission", moves, seed, removed=gone, sized=bool(sizes), notes=tuple(notes),
                     params={"brokers": ",".join(str(b) for b in sorted(gone))}, dead=dead, stranded=stranded)


def with_leaders(plan: Plan, states: Mapping[TopicPartition, PartitionState | None]) -> Plan:
    """``plan`` made without partition states, given the leaders ``states`` name: what
    :func:`plan_decommission` makes from a snapshot holding those states.

    A decommission reads a partition's state for one thing only: the broker its new replicas
    copy from (each :class:`Move`'s ``leader``, :func:`_leader_after_demotion`); placement,
    counts and preferred leaders use the replica lists alone. So the plan job can run this
    kernel while the states are still being read and apply them after
    (:func:`spark_jobs.plan_job.run`); ``tests/spark_jobs/test_decommission_states_later.py``
    pins that both ways give the same plan. A move whose partition ``states`` does not name
    keeps its leader; ``None`` (no state znode) means no leader, as in the snapshot.
    """
    gone = plan.removed
    moves = []
    for m in plan.moves:
        if m.tp in states:
            st = states[m.tp]
            leader = st.leader if st is not None else None
            if leader is None or leader < 0 or leader in gone:
                leader = next((b for b in m.current if b not in gone), leader)
            m = Move(m.tp, m.current, m.target, m.size, leader)
        moves.append(m)
    return replace(plan, moves=tuple(moves))


def _leader_after_demotion(p: Partition, gone: Collection[int]) -> int | None:
    """The broker new replicas will copy from: the runbook demotes the removed brokers before
    any data moves, so a partition they lead is then led by its first surviving replica."""
    if p.leader is not None and p.leader >= 0 and p.leader not in gone:
        return p.leader
    return next((b for b in p.replicas if b not in gone), p.leader)
