"""stuck_reassignment's choice per partition (issue 27 item 5): the way out that copies least —
back to the original replicas when they are all registered and in the ISR, else a registered
broker in place of the dead target — with both options' bytes; and the throttles no run of ours
owns (left by Kafka's own tool). Pure, on literal snapshots."""

from __future__ import annotations

import pytest

from kafka_zk.admin.stuck import diagnose
from kafka_zk.admin.stuck_fixes import REVERT, REWRITE, bytes_text, choose_fixes
from kafka_zk.health.owners import foreign_throttles
from kafka_zk.codecs import ReassignmentEntry, ReassignmentRequest, TopicPartition
from kafka_zk.errors import InvalidInput
from kafka_zk.health.owners import RunThrottles, ThrottleOwners
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
from planning.kernels.placement import replacement_targets

TP = TopicPartition("t", 0)
MIB = 1024 ** 2
RACKS = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b"}


def _snap(isr=(1, 2), brokers=(1, 2, 4, 5), topic_config=None, broker_configs=None) -> ClusterSnapshot:
    """t-0 moving [1, 2] → [1, 3] (adding 3, removing 2); broker 3 dead unless listed."""
    part = Partition("t", 0, (1, 3, 2), adding=(3,), removing=(2,), leader=1, leader_epoch=2, isr=tuple(isr),
                     controller_epoch=1)
    return ClusterSnapshot({b: Broker(b, RACKS[b], "127.0.0.1", 9092) for b in brokers},
                           {"t": Topic("t", {0: part}, dict(topic_config or {}))},
                           broker_configs=dict(broker_configs or {}),
                           reassignment=ReassignmentRequest((ReassignmentEntry("t", 0, (1, 3)),)), controller_id=1)


def test_originals_all_registered_and_in_sync_are_reverted_to_copying_nothing() -> None:
    snap = _snap()
    sizes = {(TP, 1): 50 * MIB, (TP, 2): 50 * MIB}
    [fix] = choose_fixes(snap, diagnose(snap), sizes, replacement_targets=replacement_targets)
    assert fix.chosen == REVERT and fix.target == (1, 2) and fix.revert_to == (1, 2)
    assert fix.revert_bytes == 0 and fix.rewrite_bytes == 50 * MIB       # a fresh full copy on the new broker
    assert fix.rewrite_to is not None and fix.rewrite_to[0] == 1 and fix.rewrite_to[1] not in (2, 3)
    assert "nothing to copy" in fix.why and "would copy 50.0 MiB" in fix.why


def test_an_original_replica_out_of_the_isr_makes_it_a_rewrite() -> None:
    snap = _snap(isr=(1,))
    [fix] = choose_fixes(snap, diagnose(snap), None, replacement_targets=replacement_targets)
    assert fix.chosen == REWRITE and fix.revert_to is None and fix.target == fix.rewrite_to
    assert "broker(s) [2] not in the ISR" in fix.why
    assert fix.rewrite_bytes is None and bytes_text(None).startswith("an unknown number of bytes")


def test_an_original_replica_dead_makes_it_a_rewrite() -> None:
    snap = _snap(brokers=(1, 4, 5), isr=(1,))
    [fix] = choose_fixes(snap, diagnose(snap), replacement_targets=replacement_targets)
    assert fix.chosen == REWRITE and "broker(s) [2] not registered" in fix.why
    assert set(fix.target) <= {1, 4, 5}


def test_a_partition_that_can_neither_revert_nor_be_rewritten_raises_naming_it() -> None:
    snap = _snap(brokers=(1,), isr=(1,))
    with pytest.raises(InvalidInput, match="t-0: no registered broker can replace broker"):
        choose_fixes(snap, diagnose(snap), replacement_targets=replacement_targets)


def test_throttles_no_run_of_ours_recorded_are_listed_as_foreign() -> None:
    snap = _snap(topic_config={"follower.replication.throttled.replicas": "0:3",
                               "leader.replication.throttled.replicas": "0:1,0:2"},
                 broker_configs={"1": {"leader.replication.throttled.rate": "1000"},
                                 "4": {"follower.replication.throttled.rate": "1000"}, "<default>": {}})
    foreign = foreign_throttles(snap, ThrottleOwners())
    assert [f.entity for f in foreign] == ["broker 1", "broker 4", "topic t"]
    assert foreign[2].keys == {"follower.replication.throttled.replicas": "0:3",
                               "leader.replication.throttled.replicas": "0:1,0:2"}
    ours = ThrottleOwners((RunThrottles("decommission_brokers", "r1", "/runs/x", frozenset({"4"}), frozenset(), 1.0),))
    assert [f.entity for f in foreign_throttles(snap, ours)] == ["broker 1", "topic t"]
