"""The budget rebalance kernel: the budget is respected exactly, no spread ever gets worse, racks
and replication factors are kept, and on a literal cluster it moves the fewest replicas."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_zk.codecs import TopicPartition
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
from planning.model import PlanRefused
from planning.kernels.budget_rebalance import RebalanceBudget, RebalanceTarget, plan_budget_rebalance
from planning.kernels.loads import cluster_loads
from planning.kernels.validate import validate_plan


def snapshot(brokers: dict[int, str | None], assignment: dict[tuple[str, int], list[int]]) -> ClusterSnapshot:
    topics: dict[str, dict[int, Partition]] = {}
    for (t, p), r in sorted(assignment.items()):
        topics.setdefault(t, {})[p] = Partition(t, p, tuple(r), leader=r[0], leader_epoch=0, isr=tuple(r),
                                                controller_epoch=1)
    return ClusterSnapshot({b: Broker(b, rack, f"h{b}", 9092) for b, rack in brokers.items()},
                           {t: Topic(t, parts) for t, parts in topics.items()}, controller_id=min(brokers),
                           controller_epoch=1)


def spreads(snap: ClusterSnapshot, sizes, target=None) -> tuple[int, int, int]:
    loads = cluster_loads(snap.partitions(), sorted(snap.brokers), sizes, None, target)
    live = sorted(snap.brokers)

    def sp(d):
        return max(d.get(b, 0) for b in live) - min(d.get(b, 0) for b in live)
    return sp(loads.replicas), sp(loads.bytes), sp(loads.leaders)


@st.composite
def clusters(draw):
    n = draw(st.integers(2, 8))
    racks = draw(st.integers(0, 3))
    brokers = {b: (f"r{b % racks}" if racks else None) for b in range(1, n + 1)}
    rf = draw(st.integers(1, min(3, n)))
    count = draw(st.integers(1, 40))
    # skewed on purpose: replicas drawn from a few favourite brokers more often
    favourites = draw(st.lists(st.sampled_from(sorted(brokers)), min_size=1, max_size=n))
    assignment = {}
    for i in range(count):
        pool = list(dict.fromkeys(favourites + sorted(brokers)))
        start = draw(st.integers(0, len(pool) - 1))
        replicas = list(dict.fromkeys(pool[start:] + pool[:start]))[:rf]
        assignment[(f"t{i % 3}", i)] = replicas
    sized = draw(st.booleans())
    sizes = {TopicPartition(t, p): draw(st.integers(0, 10_000)) for t, p in assignment} if sized else None
    return brokers, assignment, sizes


@settings(max_examples=150)
@given(clusters(), st.one_of(st.none(), st.integers(0, 12)), st.one_of(st.none(), st.integers(0, 40_000)),
       st.integers(0, 3), st.integers(0, 3))
def test_budget_respected_exactly_and_no_spread_ever_worse(cluster, max_replicas, max_bytes, replica_target,
                                                            leader_target) -> None:
    brokers, assignment, sizes = cluster
    snap = snapshot(brokers, assignment)
    if max_bytes is not None and not sizes:
        max_bytes = None
    budget = RebalanceBudget(max_replicas, max_bytes)
    target = RebalanceTarget(replica_spread=replica_target, bytes_relative_spread=0.2, leader_spread=leader_target)
    out = plan_budget_rebalance(snap, sizes, budget, target, seed=0)
    plan = out.plan
    validate_plan(snap, plan, (), sizes)             # RF kept, racks never fewer, current = snapshot
    assert out.replicas_moved == plan.replica_moves and out.bytes_moved == plan.bytes_moved
    assert all(m.replica_moves <= 1 for m in plan.moves)
    if max_replicas is not None:
        assert plan.replica_moves <= max_replicas
        if out.stopped_by == "replica budget spent":
            assert plan.replica_moves == max_replicas
    if max_bytes is not None:
        assert plan.bytes_moved <= max_bytes
    before, after = spreads(snap, sizes), spreads(snap, sizes, plan.target)
    assert all(a <= b for a, b in zip(after, before)), (before, after)
    assert (out.before.replicas, out.before.leaders) == (before[0], before[2])
    assert (out.after.replicas, out.after.leaders) == (after[0], after[2])
    if out.reached:
        assert after[0] <= replica_target and after[2] <= leader_target


SCENARIO = {  # the DAG tests' cluster (tests/dags/scenario.py): 38 replicas, broker 6 carries 11
    ("orders", 0): [6, 1, 2], ("orders", 1): [2, 6, 4], ("orders", 2): [3, 4, 6], ("orders", 3): [6, 5, 1],
    ("orders", 4): [1, 2, 3], ("orders", 5): [4, 5, 6], ("payments", 0): [6, 4], ("payments", 1): [5, 6],
    ("payments", 2): [1, 2], ("payments", 3): [6, 3], ("events", 0): [1, 5, 6], ("events", 1): [6, 2, 4],
    ("events", 2): [3, 1, 5], ("events", 3): [2, 6, 1]}
RACKS = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}


def test_the_fewest_moves_reach_the_target_and_a_binding_budget_is_spent_exactly() -> None:
    snap = snapshot(RACKS, SCENARIO)
    free = plan_budget_rebalance(snap)
    # counts 7,6,4,5,5,11 → 7,7,6,6,6,6 at best: 4 replicas must move, and 4 do
    assert (free.before.replicas, free.after.replicas, free.replicas_moved, free.reached) == (7, 1, 4, True)
    assert free.after.leaders <= 1 and free.stopped_by == "target reached"
    tight = plan_budget_rebalance(snap, budget=RebalanceBudget(max_replicas=2))
    assert tight.replicas_moved == 2 and tight.stopped_by == "replica budget spent" and not tight.reached
    assert 1 < tight.after.replicas < 7
    assert any("budget 2 replica(s): used 2 replica move(s)" in n for n in tight.plan.notes)
    none = plan_budget_rebalance(snap, budget=RebalanceBudget(max_replicas=0))
    assert none.replicas_moved == 0 and all(not m.moves_data for m in none.plan.moves)


def test_a_balanced_cluster_plans_nothing_and_bad_budgets_are_refused() -> None:
    balanced = snapshot({1: None, 2: None, 3: None}, {("t", 0): [1, 2], ("t", 1): [2, 3], ("t", 2): [3, 1]})
    out = plan_budget_rebalance(balanced)
    assert out.plan.moves == () and out.reached
    with pytest.raises(PlanRefused, match="max_replicas=-1"):
        plan_budget_rebalance(balanced, budget=RebalanceBudget(max_replicas=-1))
    with pytest.raises(PlanRefused, match="at least two brokers to hold data"):
        plan_budget_rebalance(snapshot({1: None}, {("t", 0): [1]}))
