"""The rolling restart's health gates on literal clusters (procedures/restart/gates.py), and a property.

The stop gate names every partition that holds a stop (offline, under-replicated, reassigning, at
min ISR on the stopping brokers, RF 1 on them) and nothing else; the start gates see brokers not
back in the ISR and preferred leaderships not back; demotion puts the brokers last only where
another in-sync replica can lead, and restoration gives back exactly the orders still demoted.
Property: whenever the stop gate passes, taking the stopping brokers out of every ISR leaves each
partition with a live leader candidate and at least its min ISR.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_zk.codecs import TopicPartition
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
from procedures.restart.gates import demotion, leaders_away, not_in_sync, offline, restoration, stop_problems

TP = TopicPartition


def snap(parts: dict[str, list[tuple[tuple[int, ...], int, tuple[int, ...]]]], live=(1, 2, 3),
         configs: dict[str, dict[str, str]] | None = None, default_min_isr: str | None = None) -> ClusterSnapshot:
    topics = {name: Topic(name, {i: Partition(name, i, r, leader=l, leader_epoch=0, isr=isr)
                                 for i, (r, l, isr) in enumerate(rows)}, (configs or {}).get(name, {}))
              for name, rows in parts.items()}
    broker_configs = {"<default>": {"min.insync.replicas": default_min_isr}} if default_min_isr else {}
    return ClusterSnapshot({b: Broker(b) for b in live}, topics, broker_configs)


def test_a_healthy_cluster_lets_any_one_broker_stop():
    s = snap({"a": [((1, 2, 3), 1, (1, 2, 3)), ((2, 3, 1), 2, (2, 3, 1))]}, configs={"a": {"min.insync.replicas": "2"}})
    assert all(stop_problems(s, [b]) == () for b in (1, 2, 3))
    assert offline(s) == ()


def test_at_min_isr_on_the_broker_holds_its_stop_and_names_the_partition():
    s = snap({"pay": [((1, 2), 1, (1, 2))], "logs": [((2, 3), 2, (2, 3))]}, configs={"pay": {"min.insync.replicas": "2"}})
    problems = stop_problems(s, [1])
    assert [p.tp for p in problems] == [TP("pay", 0)]
    assert "at min ISR" in problems[0].reason and "min.insync.replicas=2" in problems[0].reason
    assert stop_problems(s, [3]) == ()                     # logs keeps 1 ≥ min ISR 1


def test_the_broker_default_min_isr_applies_where_the_topic_sets_none():
    s = snap({"t": [((1, 2), 1, (1, 2))]}, default_min_isr="2")
    assert [p.tp for p in stop_problems(s, [2])] == [TP("t", 0)]
    assert stop_problems(snap({"t": [((1, 2), 1, (1, 2))]}), [2]) == ()
    assert [p.tp for p in stop_problems(snap({"t": [((1, 2), 1, (1, 2))]}), [2], min_isr_default=2)] == [TP("t", 0)]


def test_rf_one_on_the_broker_would_go_offline():
    problems = stop_problems(snap({"solo": [((1,), 1, (1,))]}), [1])
    assert len(problems) == 1 and "leaves 0 in sync (offline)" in problems[0].reason


def test_under_replicated_or_offline_anywhere_holds_every_stop():
    s = snap({"a": [((1, 2, 3), 1, (1, 2)), ((2, 3, 1), -1, (2,))]})
    reasons = {str(p.tp): p.reason for p in stop_problems(s, [3])}
    assert reasons["a-0"].startswith("under-replicated") and "not in sync: [3]" in reasons["a-0"]
    assert reasons["a-1"].startswith("offline")
    assert offline(s) == (TP("a", 1),)


def test_a_reassignment_in_flight_holds_the_stop():
    s = ClusterSnapshot({b: Broker(b) for b in (1, 2, 3)}, {"m": Topic("m", {0: Partition(
        "m", 0, (1, 2, 3), adding=(3,), removing=(1,), leader=1, leader_epoch=0, isr=(1, 2, 3))})})
    assert "being reassigned" in stop_problems(s, [2])[0].reason


def test_start_gates_see_brokers_out_of_the_isr_and_leaderships_away():
    s = snap({"a": [((1, 2, 3), 2, (2, 3)), ((2, 1, 3), 2, (2, 1, 3)), ((3, 2), 3, (3, 2))]})
    assert not_in_sync(s, [1]) == (TP("a", 0),)
    assert leaders_away(s, [1]) == (TP("a", 0),)
    assert not_in_sync(s, [2]) == () and leaders_away(s, [2]) == ()


def test_demotion_puts_the_broker_last_only_where_another_in_sync_replica_can_lead_and_restoration_undoes_it():
    s = snap({"a": [((1, 2, 3), 1, (1, 2, 3)), ((1, 2), 1, (1,)), ((2, 1), 2, (2, 1)), ((1,), 1, (1,))]})
    moves = demotion(s, [1])
    assert moves == {TP("a", 0): ((1, 2, 3), (2, 3, 1))}
    after = snap({"a": [((2, 3, 1), 2, (1, 2, 3)), ((1, 2), 1, (1,)), ((2, 1), 2, (2, 1)), ((1,), 1, (1,))]})
    assert restoration(after, moves) == {TP("a", 0): (1, 2, 3)}
    changed_since = snap({"a": [((3, 2, 1), 3, (1, 2, 3)), ((1, 2), 1, (1,)), ((2, 1), 2, (2, 1)), ((1,), 1, (1,))]})
    assert restoration(changed_since, moves) == {}         # someone else's order is left alone


@st.composite
def clusters(draw):
    n = draw(st.integers(2, 5))
    brokers = list(range(1, n + 1))
    parts = []
    for _ in range(draw(st.integers(1, 8))):
        replicas = tuple(draw(st.permutations(brokers))[:draw(st.integers(1, n))])
        isr = tuple(b for b in replicas if draw(st.booleans())) or replicas[:1]
        parts.append((replicas, isr[0], isr))
    min_isr = draw(st.integers(1, 3))
    return snap({"t": parts}, live=brokers, configs={"t": {"min.insync.replicas": str(min_isr)}}), \
        draw(st.sets(st.sampled_from(brokers), min_size=1, max_size=2)), min_isr


@settings(max_examples=200, deadline=None)
@given(clusters())
def test_a_stop_the_gate_lets_through_leaves_every_partition_led_and_at_min_isr(case):
    s, stopping, min_isr = case
    if stop_problems(s, stopping):
        return
    for p in s.partitions():
        left = [b for b in p.isr if b not in stopping]
        assert left, p
        assert set(p.isr) == set(p.replicas)                 # nothing under-replicated got through
        assert not (stopping & set(p.isr)) or len(left) >= min_isr

