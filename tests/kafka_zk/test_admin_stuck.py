"""kafka_zk/admin/stuck.py on hand-built snapshots: each cause the stuck_reassignment runbook
reports, and the rewrite it proposes (a live broker in a rack the list lacks, least loaded first;
refused when no live broker can replace a dead one)."""

from __future__ import annotations

import pytest

from kafka_zk.admin.stuck import (DEAD_TARGET, GONE, NO_LEADER, NOT_CATCHING_UP, NOT_COMPLETED, NOT_STARTED,
                                  diagnose)
from kafka_zk.codecs import ReassignmentEntry, ReassignmentRequest, TopicPartition
from kafka_zk.errors import InvalidInput
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
from planning.kernels.placement import replacement_targets   # the planners' one placer places the rewrite

TP = TopicPartition("t", 0)
RACKS = {1: "a", 2: "b", 3: "c", 4: "a", 5: "c"}


def snap(part: Partition | None, target=(1, 3), brokers=(1, 2, 3, 4, 5), other=((4, 5),)) -> ClusterSnapshot:
    parts = {0: part} if part is not None else {}
    parts.update({i + 1: Partition("t", i + 1, r, leader=r[0], isr=r) for i, r in enumerate(other)})
    request = ReassignmentRequest((ReassignmentEntry("t", 0, tuple(target)),))
    return ClusterSnapshot({b: Broker(b, RACKS[b], "127.0.0.1", 9092) for b in brokers},
                           {"t": Topic("t", parts)}, reassignment=request, controller_id=1)


def moving(isr=(1, 2), leader=1) -> Partition:
    return Partition("t", 0, (1, 3, 2), adding=(3,), removing=(2,), leader=leader, isr=isr)


@pytest.mark.parametrize("cluster,kind,text", [
    (snap(moving(), brokers=(1, 2, 4, 5)), DEAD_TARGET, "target broker(s) 3 not live"),
    (snap(moving(leader=-1)), NO_LEADER, "no leader"),
    (snap(moving()), NOT_CATCHING_UP, "broker(s) 3 not catching up"),
    (snap(Partition("t", 0, (1, 2), leader=1, isr=(1, 2))), NOT_STARTED, "controller has not acted"),
    (snap(moving(isr=(1, 2, 3))), NOT_COMPLETED, "has not completed it"),
    (snap(None), GONE, "no longer exists"),
])
def test_each_cause_is_named(cluster, kind, text) -> None:
    [stuck] = diagnose(cluster)
    assert stuck.tp == TP and stuck.cause.kind == kind and text in stuck.cause.text and stuck.in_node


def test_a_finished_entry_is_not_stuck() -> None:
    assert diagnose(snap(Partition("t", 0, (1, 3), leader=1, isr=(1, 3)))) == []


def test_the_rewrite_replaces_the_dead_broker_by_a_live_one_in_a_rack_the_list_lacks_least_loaded_first() -> None:
    cluster = snap(moving(), brokers=(1, 2, 4, 5))        # broker 3 (rack c) is gone
    # 4 shares broker 1's rack; 2 (b) and 5 (c) do not and hold as many replicas: the lower id
    assert replacement_targets(cluster, diagnose(cluster)) == {TP: (1, 2)}
    crowded = snap(moving(), brokers=(1, 2, 4, 5), other=((2, 4), (2, 5)))
    assert replacement_targets(crowded, diagnose(crowded)) == {TP: (1, 5)}    # 2 and 5 both new racks; 5 less loaded


def test_no_live_broker_to_replace_the_dead_one_is_refused_with_the_fix() -> None:
    cluster = snap(Partition("t", 0, (1, 2), adding=(3,), leader=1, isr=(1,)), target=(1, 3), brokers=(1,),
                   other=())
    with pytest.raises(InvalidInput, match="start a broker first"):
        replacement_targets(cluster, diagnose(cluster))
