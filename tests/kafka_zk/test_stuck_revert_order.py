"""A stuck move reverted puts the original replicas back in their original order (issue 39): on a
real 2.4.1 cluster [1,2] → [2,<dead>] was reverted as [2,1], because during a 2.4+ move the topic
znode lists the target first (Kafka 2.4's ``ReplicaAssignment.reassignTo``) and replicas − adding
keeps the set, not the order. The order comes from the throttle list Kafka's tool wrote (each
moving partition's replicas before the move, in order), from the znode where only one order is
possible, else it is reconstructed (leader first) and said to be; a pre-2.4 payload (no
adding_replicas) is the original while the controller has not acted, else has no original in
ZooKeeper. Pure, on literal snapshots."""

from __future__ import annotations

from kafka_zk.admin.stuck import diagnose
from kafka_zk.admin.stuck_fixes import REVERT, REWRITE, choose_fixes, original_order
from kafka_zk.codecs import ReassignmentEntry, ReassignmentRequest, TopicPartition
from kafka_zk.health.owners import RunThrottles, ThrottleOwners
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
from planning.kernels.placement import replacement_targets

TP = TopicPartition("t", 0)
RACKS = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}
TOOL = "the topic's leader.replication.throttled.replicas"


def _snap(replicas, adding=(), removing=(), target=(2, 6), leader=1, isr=(1, 2), throttle=None,
          brokers=(1, 2, 3, 4, 5)) -> ClusterSnapshot:
    part = Partition("t", 0, tuple(replicas), adding=tuple(adding), removing=tuple(removing), leader=leader,
                     leader_epoch=2, isr=tuple(isr), controller_epoch=1)
    config = {"leader.replication.throttled.replicas": throttle} if throttle else {}
    return ClusterSnapshot({b: Broker(b, RACKS[b], "127.0.0.1", 9092) for b in brokers},
                           {"t": Topic("t", {0: part}, config)},
                           reassignment=ReassignmentRequest((ReassignmentEntry("t", 0, tuple(target)),)),
                           controller_id=1)


def _fix(snap, owners=None):
    owned = owners.topics if owners is not None else frozenset()
    [fix] = choose_fixes(snap, diagnose(snap), replacement_targets=replacement_targets, owned_topics=owned)
    return fix


# [1,2] → [2,6] with broker 6 dead, as a 2.4 controller writes it: [2,6,1], adding 6, removing 1
MOVED = dict(replicas=(2, 6, 1), adding=(6,), removing=(1,))


def test_kafkas_throttle_list_gives_the_exact_original_order_even_when_the_leader_moved() -> None:
    snap = _snap(**MOVED, leader=2, throttle="0:1,0:2")
    origin = original_order(snap, TP, (2, 6))
    assert origin.replicas == (1, 2) and origin.exact and origin.source.startswith(TOOL)
    fix = _fix(snap)
    assert fix.chosen == REVERT and fix.target == (1, 2) and fix.order_exact
    assert "original order from the topic's leader.replication.throttled.replicas" in fix.why


def test_three_replicas_take_their_order_from_their_own_entries_of_the_list() -> None:
    snap = _snap(replicas=(1, 6, 3, 2), adding=(6,), removing=(2,), target=(1, 6, 3), leader=3, isr=(3, 1, 2),
                 throttle="1:5,0:3,1:4,0:1,0:2")
    assert original_order(snap, TP, (1, 6, 3)).replicas == (3, 1, 2)
    assert _fix(snap).target == (3, 1, 2)


def test_without_a_record_of_the_order_it_is_reconstructed_leader_first_and_said_to_be() -> None:
    snap = _snap(**MOVED, leader=1)
    origin = original_order(snap, TP, (2, 6))
    assert origin.replicas == (1, 2) and not origin.exact and origin.source.startswith("reconstructed")
    fix = _fix(snap)
    assert fix.chosen == REVERT and fix.target == (1, 2) and not fix.order_exact
    assert "ORIGINAL ORDER UNKNOWN" in fix.why and "the current leader 1 first" in fix.why


def test_a_throttle_list_a_run_of_ours_owns_says_nothing_of_the_order() -> None:
    """Our runs write their lists sorted by broker: not a record of the order."""
    snap = _snap(**MOVED, leader=2, throttle="0:1,0:2")
    ours = ThrottleOwners((RunThrottles("rebalance", "r1", "/runs/x", frozenset(), frozenset({"t"}), 1.0),))
    fix = _fix(snap, ours)
    assert fix.target == (2, 1) and not fix.order_exact


def test_a_list_that_is_not_the_original_set_is_not_used() -> None:
    snap = _snap(**MOVED, leader=1, throttle="0:1,0:2,0:5")
    assert not original_order(snap, TP, (2, 6)).exact


def test_a_move_that_keeps_no_original_replica_keeps_their_order_in_the_znode() -> None:
    snap = _snap(replicas=(3, 6, 2, 1), adding=(3, 6), removing=(2, 1), target=(3, 6), leader=2, isr=(2, 1))
    origin = original_order(snap, TP, (3, 6))
    assert origin.replicas == (2, 1) and origin.exact and origin.source.startswith("the topic znode")
    assert _fix(snap).target == (2, 1)


def test_a_pre_2_4_payload_the_controller_has_not_acted_on_is_the_original() -> None:
    snap = _snap(replicas=(1, 2), target=(2, 6))
    origin = original_order(snap, TP, (2, 6))
    assert origin.replicas == (1, 2) and origin.exact and "has not written the move" in origin.source


def test_a_pre_2_4_union_has_no_original_in_zookeeper_unless_kafkas_list_gives_it() -> None:
    union = _snap(replicas=(2, 6, 1), target=(2, 6))          # a 1.x-2.3 controller: the union, no adding list
    origin = original_order(union, TP, (2, 6))
    assert origin.replicas == () and not origin.exact and "pre-2.4" in origin.source
    fix = _fix(union)
    assert fix.chosen == REWRITE and fix.revert_to is None and "not in ZooKeeper" in fix.why
    listed = _snap(replicas=(2, 6, 1), target=(2, 6), throttle="0:1,0:2")
    assert original_order(listed, TP, (2, 6)).replicas == (1, 2)
    assert _fix(listed).target == (1, 2)
