"""The emulator's pure parts: rate sharing, catch-up times, phases, election rules, KIP-455."""

from __future__ import annotations

import pytest

from kafka_sim import elections
from kafka_sim.phases import IllegalTransition, PartitionReassignment, Phase, advance
from kafka_sim.reassign import plan
from kafka_sim.replication import Flow, ReplicationModel, allocate
from kafka_zk.codecs import TopicPartition as TP


def test_allocate_is_max_min_fair():
    flows = [Flow(TP("t", 0), 0, 1, (("out", 0), ("in", 1), ("lthr", 0))),
             Flow(TP("t", 1), 0, 2, (("out", 0), ("in", 2)))]
    caps = {("out", 0): 100.0, ("in", 1): 100.0, ("in", 2): 100.0, ("lthr", 0): 10.0}
    assert allocate(flows, caps) == [10.0, 90.0]
    assert allocate(flows, {("out", 0): 100.0, ("in", 1): 100.0, ("in", 2): 100.0}) == [50.0, 50.0]


def _model(rate=100.0, produce=0.0):
    m = ReplicationModel(rate, produce)
    for b in range(4):
        m.broker_up(b)
    return m


def test_catch_up_time_is_exact_and_independent_of_steps():
    results = []
    for steps in (1, 7, 1000):
        m = _model()
        m.set_size(TP("t", 0), 1000.0)
        m.set_view(TP("t", 0), [0], 0, [0])
        m.set_view(TP("t", 0), [1, 0], 0, [0])
        events = []
        for i in range(1, steps + 1):
            events += m.advance(30.0 * i / steps)
        results.append([e.time for e in events])
    assert [[pytest.approx(10.0, abs=1e-9)]] * 3 == results


def test_throttle_applies_only_to_listed_out_of_sync_replicas():
    m = _model(rate=1000.0)
    tp = TP("t", 0)
    m.set_size(tp, 1000.0)
    m.set_view(tp, [0], 0, [0])
    m.set_throttle_rates(0, 10.0, None)
    m.set_throttle_lists("t", frozenset({(0, 0)}), frozenset())
    m.set_view(tp, [1, 2, 0], 0, [0])
    assert m.rates() == {(tp, 1): 5.0, (tp, 2): 5.0}      # leader quota shared by both
    m.set_throttle_lists("t", "*", frozenset())
    assert m.rates() == {(tp, 1): 5.0, (tp, 2): 5.0}
    m.set_throttle_lists("t", frozenset({(0, 3)}), frozenset())   # another broker's pair
    assert m.rates() == {(tp, 1): 500.0, (tp, 2): 500.0}


def test_produce_rate_slows_catch_up_and_dead_leaders_stop_copying():
    m = _model(rate=100.0, produce=50.0)
    tp = TP("t", 0)
    m.set_size(tp, 1000.0)
    m.set_view(tp, [0], 0, [0])
    m.set_view(tp, [1, 0], 0, [0])
    assert m.next_event_time() == pytest.approx(20.0)      # 1000 / (100 - 50)
    m.advance(10.0)
    m.broker_down(0)
    assert m.flows() == [] and m.next_event_time() is None
    assert m.size(tp, 100.0) == pytest.approx(1500.0)     # no leader, no produce


def test_phase_table():
    r = PartitionReassignment()
    advance(r, Phase.UPDATED, 1.0)
    advance(r, Phase.CATCHING_UP, 2.0)
    advance(r, Phase.COMPLETING, 3.0)
    advance(r, Phase.IDLE, 3.0)
    assert r.started_at == 1.0
    with pytest.raises(IllegalTransition, match="idle -> completing"):
        advance(r, Phase.COMPLETING, 4.0)


def test_election_rules():
    live = {1, 2, 3}
    assert elections.new_partition([4, 2, 1], live) == (2, (2, 1))
    assert elections.new_partition([4], live) is None
    assert elections.offline([4, 2, 1], [4, 1, 2], live) == (2, (1, 2))
    assert elections.offline([4, 5], [4], live) is None
    assert elections.offline([4, 3], [4], live, unclean=True) == (3, (3,))
    assert elections.reassign([5, 3, 2], [2, 3], live) == 3
    assert elections.preferred([2, 1], [1], live) is None and elections.preferred([2, 1], [1, 2], live) == 2
    assert elections.controlled_shutdown([1, 2], [1, 2], live, {1}) == (2, (2,))
    assert elections.remove_from_isr(1, [1, 2], 1) == (-1, (2,))
    assert elections.remove_from_isr(-1, [2], 2) == (-1, (2,))           # last member kept


def test_kip455_arithmetic():
    assert plan(((1, 2, 3), (), ()), (4, 5, 6)) == ((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))
    assert plan(((0, 1, 2), (), ()), (2, 0, 1)) == ((2, 0, 1), (), ())
    # a new target supersedes an in-flight one; origin is the original origin
    assert plan(((4, 2, 3, 1), (4,), (1,)), (5, 2, 3)) == ((5, 2, 3, 1), (5,), (1,))
    # cancellation: target = origin restores the set
    assert plan(((4, 2, 3, 1), (4,), (1,)), (1, 2, 3)) == ((1, 2, 3), (), ())
