"""The balancing engine behind rebalance and add-brokers: a skewed cluster reaches replica and
leader spread ≤ 1 with the count minimum of moves, add-brokers moves only onto the new brokers
and evens preferred leaders, shares count only the brokers that hold data after the plan, and
the invariants hold on any small cluster (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_zk.codecs import TopicPartition
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
from planning.model import PlanRefused
from planning.kernels.balance import Ledger, Limits, _best_exchange, count_minimum
from planning.kernels.budget_rebalance import RebalanceBudget, plan_budget_rebalance
from planning.kernels.leaders import even_leaders
from planning.kernels.loads import cluster_loads, rack_map
from planning.kernels.placement import seeded_ranks
from planning.kernels.add_and_move import plan_add_brokers
from planning.kernels.validate import validate_plan
from spark_jobs.synthetic import skewed_cluster, synthetic_cluster, synthetic_sizes
from tests.spark_jobs.conftest import literal_cluster

TP = TopicPartition


def spreads(snap: ClusterSnapshot, sizes, target=None, members=None) -> tuple[int, int, float]:
    live = sorted(members if members is not None else snap.brokers)
    loads = cluster_loads(snap.partitions(), live, sizes, None, target)
    b = [loads.bytes[x] for x in live]
    mean = sum(b) / len(b)
    return (max(loads.replicas[x] for x in live) - min(loads.replicas[x] for x in live),
            max(loads.leaders[x] for x in live) - min(loads.leaders[x] for x in live),
            (max(b) - min(b)) / mean if mean else 0.0)


def grown(snap: ClusterSnapshot, new: dict[int, str]) -> ClusterSnapshot:
    return ClusterSnapshot({**snap.brokers, **{b: Broker(b, r, f"b{b}", 9092) for b, r in new.items()}},
                           snap.topics, controller_id=snap.controller_id, controller_epoch=snap.controller_epoch)


def test_a_skewed_cluster_is_rebalanced_to_spread_one_with_the_count_minimum_of_moves() -> None:
    base = synthetic_cluster(12, 3, 30, 20, 3, seed=3)
    snap = skewed_cluster(base, hot_per_rack=1, shift=0.25, lead=0.7, seed=4)
    sizes = synthetic_sizes(snap, seed=5, alpha=2.5)
    before = spreads(snap, sizes)
    assert before[0] > 50 and before[1] > 30
    out = plan_budget_rebalance(snap, sizes)
    validate_plan(snap, out.plan, (), sizes)
    after = spreads(snap, sizes, out.plan.target)
    assert after[0] <= 1 and after[1] <= 1 and after[2] < before[2]
    assert out.count_moves == count_minimum(snap, snap.brokers)
    assert out.replicas_moved <= out.count_moves + out.extra_moves
    assert any("evening counts" in n for n in out.plan.notes)
    unsized = plan_budget_rebalance(snap)
    assert unsized.replicas_moved == count_minimum(snap, snap.brokers) and unsized.after.leaders <= 1


def test_a_binding_budget_buys_count_balance_first_and_is_spent_exactly() -> None:
    snap = skewed_cluster(synthetic_cluster(12, 3, 30, 20, 3, seed=3), hot_per_rack=1, shift=0.25, seed=4)
    sizes = synthetic_sizes(snap, seed=5)
    out = plan_budget_rebalance(snap, sizes, RebalanceBudget(max_replicas=40))
    assert out.replicas_moved == 40 == out.plan.replica_moves and out.stopped_by == "replica budget spent"
    # each of the 40 moves took one replica off a broker above its share: the count imbalance fell by 40
    loads0 = cluster_loads(snap.partitions(), sorted(snap.brokers), None)
    loads1 = cluster_loads(snap.partitions(), sorted(snap.brokers), None, None, out.plan.target)
    mean = sum(loads0.replicas.values()) / len(snap.brokers)
    excess = lambda loads: sum(max(0.0, c - mean) for c in loads.replicas.values())  # noqa: E731
    assert round(excess(loads0) - excess(loads1)) == 40
    capped = plan_budget_rebalance(snap, sizes, RebalanceBudget(max_bytes=sum(sizes.values()) // 50))
    assert capped.plan.bytes_moved <= sum(sizes.values()) // 50


def test_add_brokers_moves_only_onto_new_brokers_and_evens_leaders_over_every_member() -> None:
    base = synthetic_cluster(12, 3, 30, 20, 3, seed=3)
    new = {12: "r0", 13: "r1", 14: "r2"}
    snap = grown(base, new)
    sizes = synthetic_sizes(snap, seed=5, alpha=2.5)
    plan = plan_add_brokers(snap, sorted(new), sizes)
    validate_plan(snap, plan, (), sizes)
    assert all(set(m.destinations) <= set(new) for m in plan.moves)
    assert plan.replica_moves == count_minimum(snap, snap.brokers)
    after = spreads(snap, sizes, plan.target)
    assert after[0] <= 1 and after[1] <= 1
    reordered = [m for m in plan.moves if not m.moves_data]
    for m in reordered:        # partitions it does not move change preferred leader to an in-sync replica only
        assert m.target[0] in snap.partition(m.tp).isr


def test_shares_count_only_brokers_that_hold_data_after_the_plan() -> None:
    """Issue 25 (4): a drained, still registered broker does not dilute the new broker's shares."""
    base = synthetic_cluster(4, 0, 10, 12, 2, seed=7)
    drained = 3
    topics = {}
    for name, topic in base.topics.items():
        parts = {}
        for i, p in topic.partitions.items():
            reps = tuple(b for b in p.replicas if b != drained)
            reps = reps + tuple(b for b in (0, 1, 2) if b not in reps)[:2 - len(reps)]
            parts[i] = Partition(name, i, reps, leader=reps[0], leader_epoch=0, isr=reps, controller_epoch=1)
        topics[name] = Topic(name, parts)
    snap = ClusterSnapshot({**base.brokers, 4: Broker(4, None, "b4", 9092)}, topics, controller_id=0,
                           controller_epoch=1)
    sizes = {p.tp: 1000 for p in snap.partitions()}
    plan = plan_add_brokers(snap, [4], sizes)
    final = cluster_loads(snap.partitions(), [0, 1, 2, 4], sizes, None, plan.target)
    assert max(final.replicas.values()) - min(final.replicas.values()) <= 1
    assert max(final.leaders.values()) - min(final.leaders.values()) <= 1
    assert final.bytes[4] >= min(final.bytes[b] for b in (0, 1, 2)) - 1000
    assert not any(drained in m.target for m in plan.moves)


def test_even_leaders_reorders_unmoved_partitions_only_to_in_sync_replicas() -> None:
    targets = {TopicPartition("t", i): [1, 2, 3] for i in range(9)}
    counts = {1: 9, 2: 0, 3: 0}
    isr = {tp: ([1, 3] if tp.partition % 2 else [1, 2, 3]) for tp in targets}
    changed = even_leaders(targets, counts, [1, 2, 3], lambda tp: isr[tp], {1: 0, 2: 1, 3: 2})
    assert max(counts.values()) - min(counts.values()) <= 1 and len(changed) == 6
    assert all(targets[tp][0] in isr[tp] for tp in targets)
    assert sorted(counts.values()) == [3, 3, 3]


def test_add_brokers_refuses_a_broker_both_new_and_excluded() -> None:
    snap = grown(synthetic_cluster(4, 0, 2, 4, 2, seed=1), {4: None})
    try:
        plan_add_brokers(snap, [4], None, exclude=[4])
    except PlanRefused as exc:
        assert "both new" in str(exc)
    else:
        raise AssertionError("not refused")


@st.composite
def clusters(draw):
    n = draw(st.integers(3, 9))
    racks = draw(st.integers(0, 3))
    brokers = {b: (f"r{b % racks}" if racks else None) for b in range(n)}
    rf = draw(st.integers(1, min(3, n - 1)))
    favourites = draw(st.lists(st.sampled_from(sorted(brokers)), min_size=1, max_size=n))
    new = draw(st.sets(st.sampled_from(sorted(brokers)), min_size=1, max_size=max(1, n - rf)))
    old = [b for b in sorted(brokers) if b not in new] or sorted(brokers)[:1]
    topics: dict[str, dict[int, Partition]] = {}
    for i in range(draw(st.integers(1, 40))):
        pool = list(dict.fromkeys([f for f in favourites if f in old] + old))
        start = draw(st.integers(0, len(pool) - 1))
        reps = tuple(dict.fromkeys(pool[start:] + pool[:start]))[:rf]
        topics.setdefault(f"t{i % 3}", {})[i] = Partition(f"t{i % 3}", i, reps, leader=reps[0], leader_epoch=0,
                                                          isr=reps, controller_epoch=1)
    snap = ClusterSnapshot({b: Broker(b, r, f"h{b}", 9092) for b, r in brokers.items()},
                           {t: Topic(t, p) for t, p in topics.items()}, controller_id=0, controller_epoch=1)
    sizes = ({p.tp: draw(st.integers(0, 10_000)) for p in snap.partitions()} if draw(st.booleans()) else None)
    return snap, sorted(set(new) - set(old)) or sorted(new), sizes


@settings(max_examples=120, deadline=None)
@given(clusters())
def test_add_brokers_invariants_hold_on_any_small_cluster(cluster) -> None:
    snap, new, sizes = cluster
    plan = plan_add_brokers(snap, new, sizes)
    validate_plan(snap, plan, (), sizes)             # RF kept, racks never fewer, current = snapshot
    assert all(set(m.destinations) <= set(new) for m in plan.moves)
    assert plan.replica_moves == sum(len(m.destinations) for m in plan.moves)
    hosting = {b for p in snap.partitions() for b in p.replicas} | set(new)
    before, after = spreads(snap, sizes, None, hosting), spreads(snap, sizes, plan.target, hosting)
    assert after[0] <= before[0] and after[1] <= before[1] and after[2] <= before[2] + 1e-9


@settings(max_examples=120, deadline=None)
@given(clusters(), st.one_of(st.none(), st.integers(0, 12)))
def test_rebalance_never_widens_a_spread_and_keeps_racks_and_budget(cluster, max_replicas) -> None:
    snap, _new, sizes = cluster
    out = plan_budget_rebalance(snap, sizes, RebalanceBudget(max_replicas))
    validate_plan(snap, out.plan, (), sizes)
    if max_replicas is not None:
        assert out.plan.replica_moves <= max_replicas
    before, after = spreads(snap, sizes), spreads(snap, sizes, out.plan.target)
    assert after[0] <= before[0] and after[1] <= before[1] and after[2] <= before[2] + 1e-9
    racks = rack_map(snap.brokers)
    for m in out.plan.moves:
        assert len({racks[b] for b in m.target}) >= len({racks[b] for b in m.current})


def test_a_broker_short_of_replicas_but_heaviest_in_bytes_trades_first_then_takes_its_share() -> None:
    """Two-step chain: broker 4 holds the fewest replicas and the most bytes, so no single move onto
    it keeps the bytes maximum; it swaps a large replica for a small one, then takes replicas."""
    parts, sizes = {}, {}
    for b in (1, 2, 3):
        for k in range(6):
            parts[(f"s{b}", k)] = [b]
            sizes[TopicPartition(f"s{b}", k)] = 10
    for k in range(2):
        parts[("big", k)] = [4]
        sizes[TopicPartition("big", k)] = 1000
    topics: dict[str, dict[int, Partition]] = {}
    for (t, p), r in parts.items():
        topics.setdefault(t, {})[p] = Partition(t, p, tuple(r), leader=r[0], leader_epoch=0, isr=tuple(r),
                                                controller_epoch=1)
    snap = ClusterSnapshot({b: Broker(b, None, f"h{b}", 9092) for b in (1, 2, 3, 4)},
                           {t: Topic(t, p) for t, p in topics.items()}, controller_id=1, controller_epoch=1)
    out = plan_budget_rebalance(snap, sizes)
    validate_plan(snap, out.plan, (), sizes)
    before, after = spreads(snap, sizes), spreads(snap, sizes, out.plan.target)
    assert before[0] == 4 and after[0] <= 1 and after[2] < before[2]


def test_add_brokers_on_the_dag_scenario_reaches_spread_one_with_the_minimum_nine_moves() -> None:
    """tests/dags/scenario.py plus 7 (rack c) and 8 (rack a): rack b has no new broker, so its
    excess leaves only through a partition that moves two replicas (a destination-first fill)."""
    from tests.dags.scenario import RACKS, TOPICS
    new = {7: "c", 8: "a"}
    topics, sizes = {}, {}
    for t, (parts, sz) in TOPICS.items():
        topics[t] = Topic(t, {p: Partition(t, p, tuple(r), leader=r[0], leader_epoch=0, isr=tuple(r),
                                           controller_epoch=1) for p, r in parts.items()})
        sizes.update({TopicPartition(t, p): s for p, s in sz.items()})
    snap = ClusterSnapshot({b: Broker(b, r, f"h{b}", 9092) for b, r in {**RACKS, **new}.items()}, topics,
                           controller_id=1, controller_epoch=1)
    for known in (sizes, None):
        plan = plan_add_brokers(snap, sorted(new), known)
        validate_plan(snap, plan, (), known)
        after = spreads(snap, known, plan.target)
        assert plan.replica_moves == count_minimum(snap, snap.brokers) == 9 and after[0] <= 1 and after[1] <= 1


def test_a_swap_passes_over_the_nearest_replicas_the_rules_refuse_to_the_next_one_allowed() -> None:
    # new broker 2 received p (100 bytes) from old broker 1 and is far heavier; the replicas of 1
    # nearest the ideal trade (a, b: 10 and 12 bytes) are of partitions 2 already holds, so the swap
    # is p back home for c (30 bytes), the nearest that 2 may take (seed 299's add-brokers case)
    snap = literal_cluster({"a": {0: (2, 1)}, "b": {0: (2, 1)}, "c": {0: (3, 1)}, "e": {0: (2, 3)},
                            "p": {0: (3, 1)}}, {1: None, 2: None, 3: None})
    sizes = {TP("a", 0): 10, TP("b", 0): 12, TP("c", 0): 30, TP("e", 0): 400, TP("p", 0): 100}
    led = Ledger(snap, [1, 2, 3], sizes, rack_map(snap.brokers), seeded_ranks([1, 2, 3], 0))
    led.relocate(TP("p", 0), 1, 2)
    limits = Limits(paid_bytes_moves=False, one_move_per_partition=False, dst_first=True)
    assert led.bytes[2] - led.bytes[1] == 470    # the ideal replica of 1: 100 − 235 bytes, below all
    found = _best_exchange(led, 2, 1, {2}, limits, 0, led.mean_bytes(), swaps_only=True)
    assert found == [(TP("p", 0), 1, 1), (TP("c", 0), 1, 2)]
