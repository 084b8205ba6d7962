"""Decommission kernel: golden plan, no-op, determinism, refusals, invariants on random clusters."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_zk.codecs import TopicPartition, encode_reassignment_file
from planning.model import PlanInvalid, PlanRefused, make_plan, Move
from planning.kernels.decommission import plan_decommission
from planning.kernels.loads import cluster_loads, rack_map, spread
from planning.kernels.validate import plan_violations, validate_plan
from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes
from tests.spark_jobs.conftest import literal_cluster

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")

SMALL = {"orders": {0: (1, 2, 3), 1: (2, 3, 4), 2: (3, 4, 5), 3: (4, 5, 6), 4: (5, 6, 1), 5: (6, 1, 2)},
         "events": {0: (3, 1), 1: (4, 2), 2: (5, 3), 3: (6, 4)}}
SMALL_RACKS = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c", 7: "a", 8: "b", 9: "c"}


def test_golden_small_cluster() -> None:
    snap = literal_cluster(SMALL, SMALL_RACKS)
    plan = plan_decommission(snap, [3], seed=0)
    validate_plan(snap, plan, [3])
    got = json.loads(encode_reassignment_file(plan.target))
    with open(os.path.join(GOLDEN, "decommission_small_target.json")) as f:
        assert got == json.load(f)
    # every replica of broker 3 moved (orders spans racks a,b,c: it stays in rack c), rest kept; events-2
    # ([5, 3] → [7, 5]) also takes 7 as preferred leader, which brings the leader spread from 2 to 1
    for m in plan.moves:
        assert 3 in m.current and 3 not in m.target and len(m.destinations) == 1
        if m.tp.topic == "orders":
            assert SMALL_RACKS[m.destinations[0]] == "c"
        for i, b in enumerate(m.current):
            if b != 3 and i > 0:
                assert b in m.target


def test_no_op_when_nothing_on_removed_brokers() -> None:
    snap = literal_cluster(SMALL, SMALL_RACKS)
    plan = plan_decommission(snap, [7, 8], seed=0)
    assert plan.moves == () and dict(plan.target) == {}
    validate_plan(snap, plan, [7, 8])


def test_deterministic_and_seed_only_breaks_ties() -> None:
    snap = synthetic_cluster(12, 3, 6, 20, 3, seed=4)
    sizes = synthetic_sizes(snap, seed=5)
    a = encode_reassignment_file(plan_decommission(snap, [1, 5], sizes, seed=7).target)
    b = encode_reassignment_file(plan_decommission(snap, [1, 5], sizes, seed=7).target)
    assert a == b
    c = plan_decommission(snap, [1, 5], sizes, seed=8)
    assert c.replica_moves == plan_decommission(snap, [1, 5], sizes, seed=7).replica_moves


@pytest.mark.parametrize("removed,message", [
    ([], "no broker to decommission"),
    ([42], "neither registered nor hosting"),
    ([1, 2, 3, 4, 5, 6, 7, 8, 9], "leaves no live broker"),
])
def test_refusals(removed, message) -> None:
    snap = literal_cluster(SMALL, SMALL_RACKS)
    with pytest.raises(PlanRefused, match=message):
        plan_decommission(snap, removed)


def test_refuses_partition_too_wide_for_remaining_brokers() -> None:
    snap = literal_cluster({"t": {0: (1, 2, 3)}}, {1: None, 2: None, 3: None})
    with pytest.raises(PlanRefused, match="more replicas than the 2 brokers left"):
        plan_decommission(snap, [3])


def test_dead_removed_broker_is_accepted() -> None:
    snap = literal_cluster({"t": {0: (1, 2, 3), 1: (3, 1, 2)}}, {1: None, 2: None, 4: None})
    plan = plan_decommission(snap, [3])
    targets = {m.tp: m.target for m in plan.moves}
    assert targets[TopicPartition("t", 0)] == (1, 2, 4)            # 3 replaced in place
    t1 = targets[TopicPartition("t", 1)]
    assert set(t1) == {1, 2, 4} and t1[0] in (2, 4)                # leader evened: 1 already leads t-0


def test_validator_lists_violations() -> None:
    snap = literal_cluster(SMALL, SMALL_RACKS)
    bad = make_plan("decommission", [Move(TopicPartition("orders", 0), (1, 2, 3), (1, 1, 2))], 0,
                    removed=frozenset({3}))
    problems = plan_violations(snap, bad, [3])
    text = "\n".join(problems)
    assert "duplicate broker" in text and "not moved" in text and "rack" in text
    with pytest.raises(PlanInvalid, match="invariant"):
        validate_plan(snap, bad, [3])


@st.composite
def clusters(draw):
    brokers = draw(st.integers(3, 60))
    racks = draw(st.integers(1, min(6, brokers)))
    rf = draw(st.integers(1, min(4, brokers - 1) if brokers > 1 else 1))
    racks_used = 0 if draw(st.booleans()) and racks == 1 else racks
    topics = draw(st.integers(1, 5))
    partitions = draw(st.integers(1, 30))
    seed = draw(st.integers(0, 10_000))
    snap = synthetic_cluster(brokers, racks_used, topics, partitions, rf, seed=seed)
    n_removed = draw(st.integers(1, max(1, min(brokers - rf, brokers // 3))))
    removed = draw(st.lists(st.sampled_from(sorted(snap.brokers)), min_size=n_removed,
                            max_size=n_removed, unique=True))
    sizes = synthetic_sizes(snap, seed=seed, alpha=draw(st.sampled_from([1.1, 1.5, 3.0]))) \
        if draw(st.booleans()) else None
    return snap, removed, sizes, seed


@settings(max_examples=60)
@given(clusters())
def test_invariants_on_random_clusters(case) -> None:
    snap, removed, sizes, seed = case
    plan = plan_decommission(snap, removed, sizes, seed=seed)
    assert plan_violations(snap, plan, removed, sizes) == []
    on_removed = sum(1 for p in snap.partitions() for b in p.replicas if b in removed)
    assert plan.replica_moves == on_removed                      # lower bound, exactly
    racks = rack_map(snap.brokers)
    live = [b for b in snap.brokers if b not in removed]
    final = cluster_loads(snap.partitions(), live, sizes, None, plan.target)
    by_rack: dict[str, list[int]] = {}
    for b in live:
        by_rack.setdefault(racks[b], []).append(b)
    rack_sizes = {len(v) for v in by_rack.values()}
    rf = {len(p.replicas) for p in snap.partitions()}
    if len(by_rack) == len(live) or len(by_rack) == 1:             # no rack constraint: spread ≤ 1
        before = cluster_loads(snap.partitions(), live, sizes)
        assert spread(final.replicas[b] for b in live) <= max(1, spread(before.replicas[b] for b in live))
    elif len(rack_sizes) == 1 and rf == {len(by_rack)}:           # one replica per rack: per-rack spread
        for bs in by_rack.values():
            before = cluster_loads(snap.partitions(), bs, sizes)
            assert spread(final.replicas[b] for b in bs) <= max(1, spread(before.replicas[b] for b in bs))
    again = plan_decommission(snap, removed, sizes, seed=seed)
    assert again == plan


@pytest.mark.parametrize("brokers,racks,partitions,rf,seed,removed,alpha,topics", [
    (8, 0, 18, 4, 5602, [0, 5], 1.1, 1),     # a byte swap let broker 3 (11) take a replica of 7's (13)
    (10, 5, 20, 3, 5933, [2], 1.5, 3),       # the same through a swap of another replica's holder
    (6, 0, 11, 4, 4433, [4], 1.5, 1),        # counts 10 and 8: evened only by a chain of two moves
])
def test_sized_plans_keep_counts_as_even_as_the_rules_allow(brokers, racks, partitions, rf, seed, removed, alpha,
                                                            topics) -> None:
    # Found by test_invariants_on_random_clusters with random examples (2026-11-26): ordering by
    # size and the byte pass left a replica on a broker two above one that could take it.
    snap = synthetic_cluster(brokers, racks, topics, partitions, rf, seed=seed)
    sizes = synthetic_sizes(snap, seed=seed, alpha=alpha)
    plan = plan_decommission(snap, removed, sizes, seed=seed)
    assert plan_violations(snap, plan, removed, sizes) == []
    live = [b for b in snap.brokers if b not in removed]
    if racks == 0:
        assert spread(cluster_loads(snap.partitions(), live, sizes, None, plan.target).replicas[b] for b in live) <= 1


def _rack_byte_spreads(snap, removed, sizes, target) -> dict[str, float]:
    from planning.kernels.loads import relative_spread

    racks = rack_map(snap.brokers)
    live = [b for b in snap.brokers if b not in removed]
    final = cluster_loads(snap.partitions(), live, sizes, None, target)
    groups: dict[str, list[int]] = {}
    for b in live:
        groups.setdefault(racks[b] if not racks[b].startswith("\0") else "\0", []).append(b)
    return {r: relative_spread(final.bytes[b] for b in bs) for r, bs in groups.items()}


@settings(max_examples=40)
@given(clusters())
def test_byte_swaps_only_narrow_each_racks_bytes_and_keep_counts(case) -> None:
    # The byte pass swaps new replicas between brokers of one rack: per-broker replica counts and
    # the moves stay exactly as the count-balanced placement made them, and no rack's byte
    # spread grows (each swap lands both brokers between the heaviest and the lightest).
    from planning.kernels import decommission

    snap, removed, sizes, seed = case
    if not sizes:
        return
    plan = plan_decommission(snap, removed, sizes, seed=seed)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(decommission, "repair_bytes", lambda *args: None)
        unswapped = plan_decommission(snap, removed, sizes, seed=seed)
    live = [b for b in snap.brokers if b not in removed]
    counts = cluster_loads(snap.partitions(), live, None, None, plan.target).replicas
    assert counts == cluster_loads(snap.partitions(), live, None, None, unswapped.target).replicas
    assert plan.replica_moves == unswapped.replica_moves
    after, before = (_rack_byte_spreads(snap, removed, sizes, p.target) for p in (plan, unswapped))
    assert all(after[r] <= before[r] + 1e-9 for r in after)


def test_mildly_skewed_sizes_end_within_ten_percent_in_every_rack() -> None:
    # The bench_plan cluster with Pareto α 3 sizes: bytes within 10% in each rack (the removed
    # brokers' replicas are enough to even out what the kept ones leave).
    snap = synthetic_cluster(48, 3, 200, 100, 3, seed=1)
    sizes = synthetic_sizes(snap, seed=2, alpha=3.0)
    plan = plan_decommission(snap, [3, 10, 17, 30], sizes, seed=0)
    spreads = _rack_byte_spreads(snap, [3, 10, 17, 30], sizes, plan.target)
    assert max(spreads.values()) <= 0.10, spreads
    from planning.kernels import decommission
    with pytest.MonkeyPatch.context() as m:                    # the swaps did the evening out
        m.setattr(decommission, "repair_bytes", lambda *args: None)
        unswapped = plan_decommission(snap, [3, 10, 17, 30], sizes, seed=0)
    before = _rack_byte_spreads(snap, [3, 10, 17, 30], sizes, unswapped.target)
    assert all(spreads[r] < before[r] / 2 for r in spreads), (spreads, before)


@pytest.mark.parametrize("shape,removed", [((24, 6, 40, 20), [0, 6, 12]), ((96, 6, 1000, 100), [0, 6, 12])])
def test_leader_spread_evens_out_through_chains_when_the_removed_brokers_share_a_rack(shape, removed) -> None:
    # every removed broker in rack r0: the partitions they led have their other replicas on a few
    # brokers, so choosing among those alone left a preferred-leader spread of 2 (24 brokers) and
    # 18 (96 brokers / 6 racks / 100k partitions); chains of swaps through other moved partitions reach 1
    snap = synthetic_cluster(*shape, 3, seed=3)
    sizes = synthetic_sizes(snap, seed=4)
    plan = plan_decommission(snap, removed, sizes, seed=0)
    live = [b for b in snap.brokers if b not in removed]
    final = cluster_loads(snap.partitions(), live, sizes, None, plan.target)
    assert spread(final.leaders[b] for b in live) <= 1
    assert spread(final.replicas[b] for b in live) <= 1
    assert plan.replica_moves == sum(1 for p in snap.partitions() for b in p.replicas if b in removed)
    assert plan_violations(snap, plan, removed, sizes) == []
    for m in plan.moves:     # only the removed replicas were replaced; the rest is a reorder at most
        kept = [b for b in m.current if b not in removed]
        assert set(kept) <= set(m.target) and len(set(m.target) - set(kept)) == len(m.current) - len(kept)
    reordered = [m for m in plan.moves if m.current[0] not in removed and m.target[0] != m.current[0]]
    assert len(reordered) < len(plan.moves) // 20     # a few chains, not a reshuffle
