"""Rebalance under a move budget: even out replica counts, preferred leaders and bytes across the
brokers that will hold data, moving the least that reaches the target spreads and never more than
the budget.

Kafka's ``--generate`` reshuffles every partition; this runs the balancing engine
(:mod:`planning.kernels.balance`, whose docstring orders the objectives: rack safety > replica
counts > preferred leaders > bytes) with every member broker as a possible destination:

* count moves first, one replica from the broker with the most replicas to the one with the
  fewest that can take it, so the count target is reached with the count minimum of moves and a
  binding replica budget buys the most count balance first; which replica: the one whose size
  keeps both brokers on course for the mean bytes;
* then compound moves for bytes (swaps of a large and a small replica between two brokers, a
  hand-over between brokers one replica apart), free ones first, paid ones only while the bytes
  target is not met (the report counts them: "N beyond the count moves");
* then preferred leaders by re-ordering replica lists (no data, no budget), moved partitions
  first, unmoved ones (an in-sync replica only) where needed;
* the budget: at most ``max_replicas`` new replicas and ``max_bytes`` bytes copied; when the
  replica budget binds during the count moves, exactly ``max_replicas`` replicas move;
* never worse: no step widens any spread (replicas, bytes, preferred leaders) over the members.

Members (the brokers every share is computed over): the registered brokers minus ``exclude``
(brokers being retired hold no data after the plan; a partition with a replica on one is left
alone). Partitions being reassigned are left alone; their load still counts.
:func:`plan_budget_rebalance` returns a :class:`RebalanceOutcome`: the plan, the spreads before and
after, what was spent and why it stopped; :func:`outcome_notes` says it for the report.

Failure: :class:`PlanRefused` for a negative budget or target, an unknown excluded broker, or fewer
than two member brokers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Collection, Mapping

from kafka_zk.codecs import TopicPartition
from kafka_zk.model import ClusterSnapshot
from planning.model import Plan, PlanRefused, make_plan
from planning.kernels.balance import Ledger, Limits, balance, bytes_note
from planning.kernels.loads import rack_map
from planning.kernels.placement import seeded_ranks


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
    """Spreads across the member brokers."""

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
    count_moves: int = 0       # replica moves that evened counts
    extra_moves: int = 0       # replica moves beyond them, bought for bytes balance


def plan_budget_rebalance(snapshot: ClusterSnapshot, sizes: Mapping[TopicPartition, int] | None = None,
                          budget: RebalanceBudget = RebalanceBudget(),
                          target: RebalanceTarget = RebalanceTarget(), seed: int = 0,
                          exclude: Collection[int] = ()) -> RebalanceOutcome:
    """Even out the live brokers within ``budget``, stopping at ``target`` (module docstring)."""
    for name, value in (("max_replicas", budget.max_replicas), ("max_bytes", budget.max_bytes)):
        if value is not None and value < 0:
            raise PlanRefused(f"{name}={value}: a move budget cannot be negative (0 moves nothing; null: no cap)")
    if target.replica_spread < 0 or target.leader_spread < 0 or target.bytes_relative_spread < 0:
        raise PlanRefused(f"target spreads must be >= 0, got {target}")
    excluded = frozenset(int(b) for b in exclude)
    unknown = sorted(excluded - set(snapshot.brokers))
    if unknown:
        raise PlanRefused(f"exclude: broker(s) {unknown} are not registered (registered: "
                          f"{sorted(snapshot.brokers)}); fix the list")
    members = sorted(set(snapshot.brokers) - excluded)
    if len(members) < 2:
        raise PlanRefused(f"rebalance needs at least two brokers to hold data, found {members} "
                          f"(registered {sorted(snapshot.brokers)}, excluded {sorted(excluded)})")
    sized = bool(sizes)
    led = Ledger(snapshot, members, sizes, rack_map(snapshot.brokers), seeded_ranks(members, seed))
    before = _spread(led)
    done = balance(led, members, Limits(budget.max_replicas, budget.max_bytes, target.replica_spread,
                                        target.bytes_relative_spread, target.leader_spread), sized)
    after = _spread(led)
    reached = after.meets(target, sized)
    stopped = done.stopped_by
    if stopped == "target reached" and not reached:
        stopped = ("no re-ordering evens the preferred leaders further" if after.leaders > target.leader_spread
                   else "no swap narrows the bytes spread further")
    params = {"max_replicas": "" if budget.max_replicas is None else str(budget.max_replicas),
              "max_bytes": "" if budget.max_bytes is None else str(budget.max_bytes),
              "target_replica_spread": str(target.replica_spread),
              "target_bytes_relative_spread": str(target.bytes_relative_spread),
              "target_leader_spread": str(target.leader_spread)}
    if excluded:
        params["exclude"] = ",".join(map(str, sorted(excluded)))
    plan = make_plan("rebalance", list(done.moves), seed, sized=sized, params=params)
    outcome = RebalanceOutcome(plan, before, after, done.replicas_moved, done.bytes_moved, done.leader_changes,
                               reached, stopped, done.count_moves, done.extra_moves)
    why = bytes_note(led, target.bytes_relative_spread) if sized else None
    notes = outcome_notes(outcome, sized) + ([why] if why else [])
    return replace(outcome, plan=replace(plan, notes=tuple(notes)))


def _spread(led: Ledger) -> Spread:
    r, b, lead = led.replicas.values(), led.bytes.values(), led.leaders.values()
    return Spread(max(r) - min(r), round(led.bytes_relative(), 6), max(lead) - min(lead))


def outcome_notes(o: RebalanceOutcome, sized: bool) -> list[str]:
    """What the budget bought, in the report's words."""
    b = o.plan.params
    cap = ", ".join(x for x in (f"{b['max_replicas']} replica(s)" if b.get("max_replicas") else "",
                                f"{b['max_bytes']} bytes" if b.get("max_bytes") else "") if x) or "no cap"
    bytes_part = (f", bytes spread {o.before.bytes_relative:.1%} → {o.after.bytes_relative:.1%}" if sized else
                  ", bytes unknown (no sizes)")
    return [f"rebalance: replica spread {o.before.replicas} → {o.after.replicas}{bytes_part}, preferred-leader "
            f"spread {o.before.leaders} → {o.after.leaders}",
            f"budget {cap}: used {o.replicas_moved} replica move(s) ({o.count_moves} evening counts, "
            f"{o.extra_moves} beyond them for bytes), {o.bytes_moved} bytes, "
            f"{o.leader_changes} preferred-leader change(s) (no data); "
            f"{'target reached' if o.reached else 'target not reached'} ({o.stopped_by})"]
