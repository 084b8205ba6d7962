"""Rebalance under a move budget: even out replica counts, bytes and preferred leaders across the
existing brokers, moving the least that reaches the target spread and never more than the budget.

Kafka's ``--generate`` reshuffles every partition; this moves one replica at a time, each time the
single move that most reduces the imbalance of the first measure still off its target (replica
counts, then bytes when sizes are known; imbalance = the sum of squared deviations from the
brokers' mean; ties go to the move that helps the other measure most), and stops as soon as the
target spreads are met, the budget is spent, or no move improves anything:

* a move takes a replica from broker ``src`` to broker ``dst`` in place (same position in the
  replica list), on a partition not moved before in this plan (so each move costs exactly one new
  replica and that partition's size, and the budget is counted exactly);
* **aimed at the spread**: every move takes from a broker at the measure's maximum or gives to one
  at its minimum (counts: two or more apart; bytes: both ends end below the source's old bytes),
  so the moves go where the spread is decided, not into evening out the middle;
* **never worse**: a move is allowed only when both brokers' new replica count, bytes and (for a
  preferred-leader replica) preferred-leader count stay within the current minimum and maximum
  over the live brokers, so no maximum ever rises and no minimum ever falls: no spread (max − min)
  can grow, for any of the three measures, and every move strictly lowers the imbalance;
* racks: a move never lowers the number of racks a partition spans;
* the budget: at most ``max_replicas`` new replicas and ``max_bytes`` bytes copied (either may be
  unlimited); when the replica budget binds, exactly ``max_replicas`` replicas move;
* then preferred leaders are evened out by re-ordering replica lists (no data copied, no budget
  used): the most-leading broker hands preferred leadership to the least-leading one where a
  partition holds both, until the leader spread reaches its target.

Partitions being reassigned, or with a replica on an unregistered broker, are left alone.
:func:`plan_budget_rebalance` returns a :class:`RebalanceOutcome`: the plan, the spreads before and
after, what was spent and why it stopped; :func:`outcome_notes` says it for the report.

Failure: :class:`PlanRefused` for a negative budget or target, or fewer than two live brokers.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, replace
from typing import Mapping

from kafka_zk.codecs import TopicPartition
from kafka_zk.model import ClusterSnapshot
from spark_jobs.kernels.loads import rack_map, rack_of, size_of
from spark_jobs.kernels.model import Move, Plan, PlanRefused, make_plan
from spark_jobs.kernels.placement import seeded_ranks

#: brokers tried as sources (most loaded) and destinations (least loaded), per measure, per step
CANDIDATE_BROKERS = 4
#: replicas of a source examined per (src, dst) pair, nearest to the ideal size first
SCAN = 64


@dataclass(frozen=True)
class RebalanceBudget:
    """The most a rebalance may move: new replicas and bytes copied (``None``: no cap)."""

    max_replicas: int | None = None
    max_bytes: int | None = None


@dataclass(frozen=True)
class RebalanceTarget:
    """The spreads that count as balanced: replica counts and preferred leaders as max − min, bytes
    as (max − min) / mean."""

    replica_spread: int = 1
    bytes_relative_spread: float = 0.10
    leader_spread: int = 1


@dataclass(frozen=True)
class Spread:
    """Spreads across the live brokers."""

    replicas: int
    bytes_relative: float
    leaders: int

    def meets(self, target: RebalanceTarget, sized: bool) -> bool:
        return (self.replicas <= target.replica_spread and self.leaders <= target.leader_spread
                and (not sized or self.bytes_relative <= target.bytes_relative_spread))


@dataclass(frozen=True)
class RebalanceOutcome:
    plan: Plan
    before: Spread
    after: Spread
    replicas_moved: int
    bytes_moved: int
    leader_changes: int
    reached: bool
    stopped_by: str


class _State:
    """Per-broker loads over the live brokers, and the replicas each broker hosts by size."""

    def __init__(self, snapshot: ClusterSnapshot, sizes: Mapping[TopicPartition, int] | None) -> None:
        self.live = sorted(snapshot.brokers)
        live = set(self.live)
        self.sizes = sizes
        self.replicas = {b: 0 for b in self.live}
        self.bytes = {b: 0 for b in self.live}
        self.leaders = {b: 0 for b in self.live}
        self.targets: dict[TopicPartition, list[int]] = {}
        self.current: dict[TopicPartition, tuple[int, ...]] = {}
        self.leader_of: dict[TopicPartition, int | None] = {}
        self.isr: dict[TopicPartition, frozenset[int]] = {}
        self.hosted: dict[int, list[tuple[int, TopicPartition, int]]] = {b: [] for b in self.live}
        self.frozen: set[TopicPartition] = set()
        for p in snapshot.partitions():
            size = size_of(sizes, p.tp)
            for b in p.replicas:
                if b in live:
                    self.replicas[b] += 1
                    self.bytes[b] += size
            if p.replicas and p.replicas[0] in live:
                self.leaders[p.replicas[0]] += 1
            if p.is_reassigning or not p.replicas or not set(p.replicas) <= live:
                continue
            self.targets[p.tp] = list(p.replicas)
            self.current[p.tp] = tuple(p.replicas)
            self.leader_of[p.tp] = p.leader
            self.isr[p.tp] = frozenset(p.isr)
            for i, b in enumerate(p.replicas):
                self.hosted[b].append((size, p.tp, i))
        for b in self.hosted:
            self.hosted[b].sort()
        n = len(self.live)
        self.mean_r = max(sum(self.replicas.values()) / n, 1e-9)
        self.mean_b = max(sum(self.bytes.values()) / n, 1e-9)
        self.mean_l = max(sum(self.leaders.values()) / n, 1e-9)

    def spread(self) -> Spread:
        r, b, lead = self.replicas.values(), self.bytes.values(), self.leaders.values()
        mean_b = sum(b) / len(self.bytes)
        return Spread(max(r) - min(r), round((max(b) - min(b)) / mean_b, 6) if mean_b else 0.0,
                      max(lead) - min(lead))

    def freeze(self, tp: TopicPartition) -> None:
        """``tp`` moved once: none of its replicas is a candidate again."""
        self.frozen.add(tp)
        size = size_of(self.sizes, tp)
        for i, b in enumerate(self.current[tp]):
            entries = self.hosted[b]
            k = bisect.bisect_left(entries, (size, tp, i))
            if k < len(entries) and entries[k] == (size, tp, i):
                entries.pop(k)


def _gain(st: _State, src: int, dst: int, size: int, sized: bool, phase: str) -> tuple[float, float]:
    """(primary, secondary) change of the imbalance (negative = better) when a replica of ``size``
    goes src → dst: the measure being evened out (``phase``: replica counts, or bytes) first."""
    counts = (2 + 2 * (st.replicas[dst] - st.replicas[src])) / st.mean_r ** 2
    volume = 2 * size * (size - (st.bytes[src] - st.bytes[dst])) / st.mean_b ** 2 if sized else 0.0
    return (counts, volume) if phase == "replicas" else (volume, counts)


def _pairs(st: _State, racks: Mapping[int, str], ranks: Mapping[int, int], phase: str) -> list[tuple[int, int]]:
    """(src, dst) pairs that can narrow the ``phase`` spread: from a broker at the maximum to a
    lighter one, or onto a broker at the minimum from a heavier one. Destinations: the lightest
    brokers overall and the lightest of the source's rack (with rack-aware placement most moves
    must stay within a rack); sources likewise."""
    load = st.replicas if phase == "replicas" else st.bytes
    order = sorted(st.live, key=lambda b: (load[b], ranks[b]))
    lo, hi = load[order[0]], load[order[-1]]
    by_rack: dict[str, list[int]] = {}
    for b in order:
        by_rack.setdefault(rack_of(racks, b), []).append(b)
    pairs: list[tuple[int, int]] = []
    for src in (b for b in reversed(order) if load[b] == hi):
        for dst in dict.fromkeys(order[:CANDIDATE_BROKERS] + by_rack[rack_of(racks, src)][:CANDIDATE_BROKERS]):
            pairs.append((src, dst))
    for dst in (b for b in order if load[b] == lo):
        for src in dict.fromkeys(order[::-1][:CANDIDATE_BROKERS]
                                 + by_rack[rack_of(racks, dst)][::-1][:CANDIDATE_BROKERS]):
            pairs.append((src, dst))
    return [(s_, d) for s_, d in dict.fromkeys(pairs) if s_ != d]


def _best_move(st: _State, racks: Mapping[int, str], ranks: Mapping[int, int], sized: bool,
               bytes_left: int | None, phase: str) -> tuple[int, int, int, TopicPartition, int] | None:
    """The move that most lowers the ``phase`` measure's imbalance (ties: the other measure's),
    narrowing that measure's spread and keeping every measure within its current range; ``None``
    when there is none."""
    lo_r, hi_r = min(st.replicas.values()), max(st.replicas.values())
    lo_b, hi_b = min(st.bytes.values()), max(st.bytes.values())
    lo_l, hi_l = min(st.leaders.values()), max(st.leaders.values())
    best = None
    for src, dst in _pairs(st, racks, ranks, phase):
        entries = st.hosted[src]
        if not entries:
            continue
        # counts: the pair must be at least 2 apart (a move narrows, never swaps); bytes: both
        # brokers' counts stay within the current range
        if phase == "replicas" and st.replicas[src] - st.replicas[dst] < 2:
            continue
        if phase == "bytes" and (st.replicas[src] - 1 < lo_r or st.replicas[dst] + 1 > hi_r):
            continue
        gap = st.bytes[src] - st.bytes[dst]
        if sized:
            # bytes stay within [lo_b, hi_b]; in the bytes phase both ends strictly below src's bytes
            cap = min(hi_b - st.bytes[dst], st.bytes[src] - lo_b)
            if phase == "bytes":
                if gap <= 0:
                    continue
                cap = min(cap, gap - 1)
        else:
            cap = None
        if bytes_left is not None:
            cap = bytes_left if cap is None else min(cap, bytes_left)
        if cap is not None and cap < 0:
            continue
        ideal = min(max(0.0, gap / 2), cap) if sized and cap is not None else 0.0
        lead_ok = st.leaders[src] - 1 >= lo_l and st.leaders[dst] + 1 <= hi_l
        found_lead = found_follow = False
        for k in _nearest_first(entries, ideal):
            size, tp, i = entries[k]
            if cap is not None and size > cap:
                continue
            if phase == "bytes" and size == 0:
                continue
            leader = i == 0
            if (leader and (found_lead or not lead_ok)) or (not leader and found_follow):
                continue
            reps = st.targets[tp]
            if dst in reps:
                continue
            others = [x for j, x in enumerate(reps) if j != i]
            used = {rack_of(racks, o) for o in others}
            if rack_of(racks, dst) in used and rack_of(racks, src) not in used:
                continue
            g = _gain(st, src, dst, size, sized, phase)
            key = (*g, size, ranks[src], ranks[dst], tp, i)
            if g[0] < -1e-12 and (best is None or key < best[0]):
                best = (key, src, dst, size, tp, i)
            if leader:
                found_lead = True
            else:
                found_follow = True
            if found_follow and (found_lead or not lead_ok):
                break
    if best is None:
        return None
    _key, src, dst, size, tp, i = best
    return src, dst, size, tp, i


def _nearest_first(entries: list[tuple[int, TopicPartition, int]], size: float):
    """Up to :data:`SCAN` indexes of ``entries`` (sorted by size), nearest to ``size`` first."""
    hi = bisect.bisect_left(entries, (size,))
    lo = hi - 1
    for _ in range(SCAN):
        if lo < 0 and hi >= len(entries):
            return
        if hi >= len(entries) or (lo >= 0 and size - entries[lo][0] <= entries[hi][0] - size):
            yield lo
            lo -= 1
        else:
            yield hi
            hi += 1


def _balance_leaders(st: _State, target: int, ranks: Mapping[int, int]) -> int:
    """Re-order replica lists (no data moves) until the preferred-leader spread is ``target``;
    returns how many partitions changed their preferred leader."""
    led: dict[int, list[TopicPartition]] = {b: [] for b in st.live}
    for tp in sorted(st.targets):
        led[st.targets[tp][0]].append(tp)
    changes = 0
    for _ in range(sum(len(v) for v in led.values())):
        order = sorted(st.live, key=lambda b: (st.leaders[b], ranks[b]))
        src = order[-1]
        if st.leaders[src] - st.leaders[order[0]] <= target:
            break
        done = False
        for dst in order:
            if st.leaders[src] - st.leaders[dst] < 2:
                break
            for k, tp in enumerate(led[src]):
                reps = st.targets[tp]
                moved = tuple(reps) != st.current[tp]
                if dst in reps and (moved or dst in st.isr[tp]):
                    j = reps.index(dst)
                    reps[0], reps[j] = reps[j], reps[0]
                    led[src].pop(k)
                    led[dst].append(tp)
                    st.leaders[src] -= 1
                    st.leaders[dst] += 1
                    changes += 1
                    done = True
                    break
            if done:
                break
        if not done:
            break
    return changes


def plan_budget_rebalance(snapshot: ClusterSnapshot, sizes: Mapping[TopicPartition, int] | None = None,
                          budget: RebalanceBudget = RebalanceBudget(),
                          target: RebalanceTarget = RebalanceTarget(), seed: int = 0) -> RebalanceOutcome:
    """Even out the live brokers within ``budget``, stopping at ``target`` (module docstring)."""
    for name, value in (("max_replicas", budget.max_replicas), ("max_bytes", budget.max_bytes)):
        if value is not None and value < 0:
            raise PlanRefused(f"{name}={value}: a move budget cannot be negative (0 moves nothing; null: no cap)")
    if target.replica_spread < 0 or target.leader_spread < 0 or target.bytes_relative_spread < 0:
        raise PlanRefused(f"target spreads must be >= 0, got {target}")
    if len(snapshot.brokers) < 2:
        raise PlanRefused(f"rebalance needs at least two registered brokers, found {sorted(snapshot.brokers)}")
    sized = bool(sizes)
    st = _State(snapshot, sizes)
    racks = rack_map(snapshot.brokers)
    ranks = seeded_ranks(st.live, seed)
    before = st.spread()
    used_r = used_b = 0
    stopped = "target reached"
    while True:
        now = st.spread()
        phases = [ph for ph, behind in (("replicas", now.replicas > target.replica_spread),
                                        ("bytes", sized and now.bytes_relative > target.bytes_relative_spread))
                  if behind]
        if not phases:
            break
        if budget.max_replicas is not None and used_r >= budget.max_replicas:
            stopped = "replica budget spent"
            break
        bytes_left = None if budget.max_bytes is None else budget.max_bytes - used_b
        pick = None
        for phase in phases:
            pick = _best_move(st, racks, ranks, sized, bytes_left, phase)
            if pick is not None:
                break
        if pick is None:
            capped = bytes_left is not None and any(_best_move(st, racks, ranks, sized, None, ph) for ph in phases)
            stopped = "byte budget spent" if capped else "no move improves the balance"
            break
        src, dst, size, tp, i = pick
        st.freeze(tp)
        st.targets[tp][i] = dst
        st.replicas[src] -= 1
        st.replicas[dst] += 1
        st.bytes[src] -= size
        st.bytes[dst] += size
        if i == 0:
            st.leaders[src] -= 1
            st.leaders[dst] += 1
        used_r += 1
        used_b += size
    changes = _balance_leaders(st, target.leader_spread, ranks)
    after = st.spread()
    final = {tp: tuple(r) for tp, r in st.targets.items() if tuple(r) != st.current[tp]}
    moves = [Move(tp, st.current[tp], r, size_of(sizes, tp), st.leader_of[tp]) for tp, r in final.items()]
    reached = after.meets(target, sized)
    if stopped == "target reached" and not reached:
        stopped = "no re-ordering evens the preferred leaders further"
    params = {"max_replicas": "" if budget.max_replicas is None else str(budget.max_replicas),
              "max_bytes": "" if budget.max_bytes is None else str(budget.max_bytes),
              "target_replica_spread": str(target.replica_spread),
              "target_bytes_relative_spread": str(target.bytes_relative_spread),
              "target_leader_spread": str(target.leader_spread)}
    plan = make_plan("rebalance", moves, seed, sized=sized, params=params)
    outcome = RebalanceOutcome(plan, before, after, used_r, used_b, changes, reached, stopped)
    return replace(outcome, plan=replace(plan, notes=tuple(outcome_notes(outcome, sized))))


def outcome_notes(o: RebalanceOutcome, sized: bool) -> list[str]:
    """What the budget bought, in the report's words."""
    b = o.plan.params
    cap = ", ".join(x for x in (f"{b['max_replicas']} replica(s)" if b.get("max_replicas") else "",
                                f"{b['max_bytes']} bytes" if b.get("max_bytes") else "") if x) or "no cap"
    bytes_part = (f", bytes spread {o.before.bytes_relative:.1%} → {o.after.bytes_relative:.1%}" if sized else
                  ", bytes unknown (no sizes)")
    return [f"rebalance: replica spread {o.before.replicas} → {o.after.replicas}{bytes_part}, preferred-leader "
            f"spread {o.before.leaders} → {o.after.leaders}",
            f"budget {cap}: used {o.replicas_moved} replica move(s), {o.bytes_moved} bytes, "
            f"{o.leader_changes} preferred-leader change(s) (no data); "
            f"{'target reached' if o.reached else 'target not reached'} ({o.stopped_by})"]
