"""The invariant checker every plan passes before it is written.

Rules (each violation is listed, then :class:`PlanInvalid` is raised with all of them):

1. every moved partition exists in the snapshot and its current list matches the snapshot;
2. target lists are non-empty and name no broker twice;
3. the replication factor is unchanged unless the operation changes it (``change-rf``);
4. no target names a removed broker, and (decommission) every partition on a removed broker
   is moved off it (but a partition the plan names stranded: on a dead broker, no live ISR);
5. destinations (new replicas) are live brokers, not removed;
6. rack spread preserved: a target spans at least min(racks of its current list, its size,
   racks available) distinct racks (a replaced dead broker's rack, unknown, is not counted);
7. least movement: decommission creates exactly one new replica per replica on a removed
   broker; replace substitutes each replaced broker by its new one in place, nothing else (plus 1-for-1 relocations when the plan was allowed extra moves for disk room);
   change-rf only adds (up) or only drops (down) replicas;
8. balance: (decommission) no broker that received a replica ends more than one replica above
   a live, allowed broker that could have taken that replica (rack rule kept); (decommission,
   add-brokers) no newly chosen preferred leader leads more than one partition more than another replica
   of that partition. This is "spread ≤ 1 where the constraints allow" made checkable; with disk
   limits, a broker "could have taken" a replica only if it then stays under its limit; a plan
   allowed extra moves for disk room is exempt (disk room comes first there, and its notes say so);
9. disk (with limits and sizes): no broker that received a replica ends over its limit.

Byte balance is a goal, not an invariant (kept replicas cannot be moved under least movement):
it is reported in the summary, not checked here. Determinism is tested separately.
"""

from __future__ import annotations

from typing import Collection, Mapping

from kafka_zk.codecs import TopicPartition
from kafka_zk.model import ClusterSnapshot
from planning.model import BrokerLoad, Plan, PlanInvalid
from planning.kernels.balance_rule import NewReplica, lower_taker
from planning.kernels.loads import cluster_loads, rack_map, rack_of
# from this many moves a plan is first checked over arrays (below, numpy's import and the arrays cost more)
from planning.kernels.waves import COLUMNAR_MIN_MOVES

RF_CHANGING = frozenset({"change-rf", "reassign-json", "rollback"})   # a user JSON may change RF (listed), a rollback restores it
BALANCED = frozenset({"decommission", "add-brokers"})


class _Racks(dict):
    """``rack_of(racks, b)`` by ``[b]``: the registered brokers' racks, others made on first use."""

    def __missing__(self, b: int) -> str:
        out = self[b] = rack_of({}, b)
        return out


def _structure(snapshot: ClusterSnapshot, plan: Plan, gone: frozenset[int]) -> list[str]:
    out: list[str] = []
    racks = rack_map(snapshot.brokers)
    brokers = snapshot.brokers
    allowed_racks = {rack_of(racks, b) for b in brokers if b not in gone}
    rack = _Racks(racks)        # rack_of for every broker a move names, each looked up once
    topics = snapshot.topics
    target_map = plan.target
    rf_fixed = plan.operation not in RF_CHANGING
    # a replaced dead broker's rack is unknown (not registered): the new broker the operator named
    # takes its place, so the racks to keep are those of the other replicas
    unknown_rack = plan.dead if plan.operation == "replace" else frozenset()
    for m in plan.moves:
        topic = topics.get(m.tp.topic)
        part = None if topic is None else topic.partitions.get(m.tp.partition)
        if part is None:
            out.append(f"{m.tp}: not in the snapshot")
            continue
        current, target = m.current, m.target
        if part.replicas != current:
            out.append(f"{m.tp}: current {list(current)} differs from the snapshot's {list(part.replicas)}")
        if target_map.get(m.tp) != target:
            out.append(f"{m.tp}: move target differs from the plan's target map")
        if not target:
            out.append(f"{m.tp}: empty target")
            continue
        target_set = set(target)
        if len(target_set) != len(target):
            out.append(f"{m.tp}: duplicate broker in target {list(target)}")
        if rf_fixed and len(target) != len(current):
            out.append(f"{m.tp}: replication factor changed {len(current)} → {len(target)}")
        if not gone.isdisjoint(target_set):
            out.append(f"{m.tp}: target keeps removed broker(s) {sorted(target_set & gone)}")
        bad = [d for d in m.destinations if d not in brokers or d in gone]
        if bad:
            out.append(f"{m.tp}: destination(s) {bad} are not live brokers")
        counted = current if not (unknown_rack and not unknown_rack.isdisjoint(current)) else \
            [b for b in current if b not in unknown_rack]
        need = min(len({rack[b] for b in counted}), len(target), len(allowed_racks))
        have = len({rack[b] for b in target})
        if have < need:
            out.append(f"{m.tp}: target {list(target)} spans {have} rack(s), needs {need}")
    if len(plan.target) != len(plan.moves):
        out.append("target map and moves list differ in length")
    return out


def _movement(snapshot: ClusterSnapshot, plan: Plan, gone: frozenset[int]) -> list[str]:
    out: list[str] = []
    if plan.operation == "decommission":
        target_map = plan.target
        extra = bool(plan.params.get("extra_moves"))
        stranded = set(plan.stranded)     # on a dead broker with no live in-sync replica: cannot move
        for p in snapshot.partitions():
            replicas = p.replicas
            if stranded and p.tp in stranded:
                continue
            on = 0 if gone.isdisjoint(replicas) else sum(1 for b in replicas if b in gone)
            m_target = target_map.get((p.topic, p.partition))  # type: ignore[call-overload]
            if on and m_target is None:
                out.append(f"{p.tp}: has replica(s) on removed brokers but is not moved")
            elif m_target is not None:
                new = len(set(m_target) - set(replicas))
                if extra and on == 0 and new == 1 and len(m_target) == len(replicas):
                    continue            # an allowed extra move that makes disk room (1-for-1)
                if new != on:
                    out.append(f"{p.tp}: {new} new replica(s) for {on} on removed brokers (not minimal)")
    if plan.operation == "replace":     # each replaced broker's place taken by its new one, nothing else
        pairs = dict(tuple(int(x) for x in pair.split(":")) for pair in plan.params.get("replace", "").split(",") if pair)
        for m in plan.moves:
            if m.target != tuple(pairs.get(b, b) for b in m.current):
                out.append(f"{m.tp}: target {list(m.target)} is not {list(m.current)} with {pairs} substituted")
        stranded = set(plan.stranded)
        moved = set(plan.target)
        for p in snapshot.partitions():
            if not gone.isdisjoint(p.replicas) and p.tp not in moved and p.tp not in stranded:
                out.append(f"{p.tp}: has replica(s) on replaced brokers but is not moved")
    if plan.operation == "change-rf":
        for m in plan.moves:
            if m.sources and m.destinations:
                out.append(f"{m.tp}: change-rf both adds {list(m.destinations)} and drops {list(m.sources)}")
    return out


def _balance(snapshot: ClusterSnapshot, plan: Plan, gone: frozenset[int],
             sizes: Mapping[TopicPartition, int] | None,
             baseline: Mapping[int, BrokerLoad] | None, limits: Mapping[int, int]) -> list[str]:
    out: list[str] = []
    cands = sorted(b for b in snapshot.brokers if b not in gone)
    if not cands or not plan.moves:
        return out
    racks = rack_map(snapshot.brokers)
    final = cluster_loads(snapshot.partitions(), cands, sizes, baseline, plan.target)
    counts, leaders = final.replicas, final.leaders
    low = min(counts.get(c, 0) for c in cands)
    receivers = {d for m in plan.moves for d in m.destinations}
    if plan.operation == "decommission" and receivers and max(counts.get(b, 0) for b in receivers) > low + 1:
        for m in plan.moves:
            for i, b in enumerate(m.target):
                if b in m.current or counts.get(b, 0) <= low + 1:
                    continue
                size = int((sizes or {}).get(m.tp, 0))
                better = lower_taker(NewReplica.at(m.target, i, racks), counts[b], cands, counts, racks,
                                     lambda c: c not in limits or final.bytes.get(c, 0) + size <= limits[c])
                if better is not None:
                    out.append(f"{m.tp}: new replica on broker {b} ({counts[b]} replicas) while broker "
                               f"{better} ({counts[better]}) could take it")
    for m in plan.moves:
        lead = m.target[0]
        if lead == m.current[0] or len(m.target) < 2:
            continue
        alt = [r for r in m.target[1:] if r in snapshot.brokers and r not in gone
               and leaders.get(r, 0) < leaders.get(lead, 0) - 1]
        if alt:
            out.append(f"{m.tp}: preferred leader {lead} leads {leaders.get(lead, 0)} partitions, "
                       f"replica {alt[0]} only {leaders.get(alt[0], 0)}")
    return out


def _disk(snapshot: ClusterSnapshot, plan: Plan, gone: frozenset[int], sizes: Mapping[TopicPartition, int],
          baseline: Mapping[int, BrokerLoad] | None, limits: Mapping[int, int]) -> list[str]:
    cands = sorted(b for b in snapshot.brokers if b not in gone)
    final = cluster_loads(snapshot.partitions(), cands, sizes, baseline, plan.target)
    receivers = sorted({d for m in plan.moves for d in m.destinations})
    return [f"broker {b} receives replicas and ends with {final.bytes.get(b, 0)} bytes, over its disk limit "
            f"{limits[b]}" for b in receivers if b in limits and final.bytes.get(b, 0) > limits[b]]


def plan_violations(snapshot: ClusterSnapshot, plan: Plan, removed: Collection[int] = (),
                    sizes: Mapping[TopicPartition, int] | None = None,
                    baseline: Mapping[int, BrokerLoad] | None = None,
                    limits: Mapping[int, int] | None = None) -> list[str]:
    """Every violated invariant of ``plan`` against ``snapshot`` (empty list: valid).

    ``limits`` (bytes per broker, with ``sizes``) adds the disk rule and bounds rule 8.
    """
    gone = frozenset(int(b) for b in removed) | plan.removed
    limits = dict(limits or {}) if sizes else {}
    out = _structure(snapshot, plan, gone) + _movement(snapshot, plan, gone)
    if plan.operation in BALANCED and not plan.params.get("extra_moves"):
        # a plan allowed extra moves for disk room trades count/leader balance for it (noted in the plan)
        out += _balance(snapshot, plan, gone, sizes, baseline, limits)
    if limits:
        out += _disk(snapshot, plan, gone, sizes, baseline, limits)  # type: ignore[arg-type]
    return out


def validate_plan(snapshot: ClusterSnapshot, plan: Plan, removed: Collection[int] = (),
                  sizes: Mapping[TopicPartition, int] | None = None,
                  baseline: Mapping[int, BrokerLoad] | None = None,
                  limits: Mapping[int, int] | None = None) -> None:
    """Raise :class:`PlanInvalid` listing every violation; return quietly for a valid plan.

    A plan of :data:`~planning.kernels.waves.COLUMNAR_MIN_MOVES` moves or more is
    first checked over arrays (:func:`~planning.kernels.validate_columns.surely_valid`); only
    when that cannot show it valid does the per-move check run, and name what it finds."""
    if len(plan.moves) >= COLUMNAR_MIN_MOVES and not (limits and sizes):
        # local: numpy is loaded only for plans this large (CLI start-up of small plans)
        from planning.kernels.validate_columns import surely_valid

        if surely_valid(snapshot, plan, removed, baseline):
            return
    violations = plan_violations(snapshot, plan, removed, sizes, baseline, limits)
    if violations:
        raise PlanInvalid(plan.operation, violations)
