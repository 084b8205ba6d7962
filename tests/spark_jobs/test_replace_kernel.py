"""The replace planner ("replace 4 with 7") on literal and generated clusters: the moves are exactly
the old broker's replicas, each new broker sits in the old one's position (preferred leaders where
they were), nothing else moves; a dead old broker's partitions with no live in-sync replica are left
out and named; bad pairs are refused naming the fix. Also the decommission kernel with a dead broker."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
from planning.dead_brokers import statement_lines
from planning.model import PlanRefused
from planning.kernels.decommission import plan_decommission
from planning.kernels.replace import plan_replace
from planning.kernels.validate import validate_plan


def _snap(racks: dict[int, str | None], parts: dict[str, list[tuple[int, ...]]],
          isr: dict[tuple[str, int], tuple[int, ...]] | None = None) -> ClusterSnapshot:
    isr = isr or {}
    topics = {}
    for t, lists in parts.items():
        ps = {}
        for i, reps in enumerate(lists):
            live_isr = isr.get((t, i), tuple(b for b in reps if b in racks))
            leader = live_isr[0] if live_isr and live_isr[0] in racks else -1
            ps[i] = Partition(t, i, tuple(reps), leader=leader, leader_epoch=0, isr=live_isr, controller_epoch=1)
        topics[t] = Topic(t, ps)
    return ClusterSnapshot({b: Broker(b, r, f"h{b}", 9092) for b, r in racks.items()}, topics,
                           controller_id=min(racks), controller_epoch=1)


RACKS = {0: "a", 1: "b", 2: "c", 3: "a", 4: "b", 5: "c", 6: "c", 7: "a"}
PARTS = {"t": [(5, 0, 1), (1, 5, 3), (2, 3, 4), (4, 3, 5), (0, 1, 2)]}


def test_replace_puts_the_new_broker_in_the_old_position_and_moves_nothing_else() -> None:
    snap = _snap(RACKS, PARTS)
    plan = plan_replace(snap, {5: 6})
    validate_plan(snap, plan, [5])
    assert {tp.partition: m for tp, m in plan.target.items()} == {0: (6, 0, 1), 1: (1, 6, 3), 3: (4, 3, 6)}
    assert plan.replica_moves == 3 and plan.removed == frozenset({5}) and plan.dead == frozenset()


def test_replace_of_a_dead_broker_copies_from_the_live_leaders_and_leaves_partitions_with_no_source() -> None:
    racks = {b: r for b, r in RACKS.items() if b != 5}        # 5 is down: not registered
    isr = {("t", 0): (5,)}                                   # its only in-sync replica was on 5
    snap = _snap(racks, PARTS, isr)
    plan = plan_replace(snap, {5: 6})
    validate_plan(snap, plan, [5])
    assert plan.dead == frozenset({5})
    assert [tp.partition for tp in plan.stranded] == [0]
    assert {tp.partition for tp in plan.target} == {1, 3}
    assert all(m.source_leader != 5 for m in plan.moves)


@pytest.mark.parametrize("pairs, says", [
    ({5: 5}, "must differ"),
    ({5: 9}, "not registered"),
    ({5: 0}, "already holds a replica"),
    ({9: 6}, "neither registered"),
    ({5: 6, 4: 6}, "several"),
    ({5: 7}, "fewer racks"),
])
def test_bad_pairs_are_refused_naming_the_fix(pairs, says) -> None:
    with pytest.raises(PlanRefused, match=says):
        plan_replace(_snap(RACKS, PARTS), pairs)


def test_decommission_of_a_dead_broker_leaves_out_the_partitions_with_no_source() -> None:
    racks = {b: r for b, r in RACKS.items() if b != 5}
    snap = _snap(racks, PARTS, {("t", 0): (5,)})
    plan = plan_decommission(snap, [5])
    validate_plan(snap, plan, [5])
    assert plan.dead == frozenset({5}) and [tp.partition for tp in plan.stranded] == [0]
    assert {tp.partition for tp in plan.target} == {1, 3} and plan.replica_moves == 2


def test_decommission_refuses_an_id_neither_registered_nor_holding_replicas() -> None:
    with pytest.raises(PlanRefused, match="neither registered nor hosting"):
        plan_decommission(_snap(RACKS, PARTS), [9])


@st.composite
def clusters(draw):
    n = draw(st.integers(3, 8))
    racks = {b: None for b in range(n)}      # rackless: the rack rule never refuses
    rf = draw(st.integers(1, min(3, n - 1)))
    lists = []
    for _ in range(draw(st.integers(1, 20))):
        lists.append(tuple(draw(st.permutations(range(n)))[:rf]))
    dead = draw(st.booleans())
    return racks, {"t": lists}, dead


@settings(max_examples=150, deadline=None)
@given(clusters(), st.data())
def test_moves_are_exactly_the_old_brokers_replicas_in_place(cluster, data) -> None:
    racks, parts, dead = cluster
    old = data.draw(st.sampled_from(sorted(racks)))
    new = data.draw(st.sampled_from([b for b in sorted(racks) if b != old]))
    assume(not any(old in r and new in r for r in parts["t"]))
    assume(not dead or any(old in r for r in parts["t"]))    # a dead id holding nothing is refused (above)
    if dead:
        racks = {b: r for b, r in racks.items() if b != old}
    snap = _snap(racks, parts)
    plan = plan_replace(snap, {old: new})
    validate_plan(snap, plan, [old])
    holding = [i for i, r in enumerate(parts["t"]) if old in r]
    stranded = {tp.partition for tp in plan.stranded}
    assert plan.replica_moves == len(holding) - len(stranded)
    for m in plan.moves:
        assert m.target == tuple(new if b == old else b for b in m.current)
    assert {tp.partition for tp in plan.target} | stranded == set(holding)
    assert stranded == {i for i in holding if not any(b in racks for b in parts["t"][i])}


def test_the_reports_say_what_is_done_for_a_dead_broker_and_its_offline_partitions() -> None:
    summary = {"operation": "decommission", "dead_brokers": {"5": 99},
               "stranded": [{"topic": "t", "partition": 0, "replicas": [5], "isr": [5], "leader": -1}]}
    before, after = statement_lines(summary), statement_lines(summary, done=True)
    assert before[0].startswith("broker 5 is down: its 99 replicas are re-created from the surviving in-sync replicas")
    assert after[0].startswith("broker 5 is down: its 99 replicas were re-created from the surviving in-sync replicas")
    assert "1 partition(s) are offline" in before[1] and "t-0 (replicas [5], ISR [5])" in before[1]
    assert "wait for broker(s) 5" in before[1] and "unclean.leader.election.enable=true" in before[1]
    assert statement_lines({"operation": "decommission"}) == []
