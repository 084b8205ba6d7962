"""Emulated disks: a follower stops fetching when its broker's disk is full, and resumes with room."""

from __future__ import annotations

import pytest

from kafka_sim.replication import ReplicationModel
from kafka_sim.spec import ClusterSpec
from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidInput

A, B = TopicPartition("a", 0), TopicPartition("b", 0)


def model_with_a_copy() -> ReplicationModel:
    """Broker 2 already holds b-0 (20 bytes) and starts copying a-0 (100 bytes) from broker 1 at 10 B/s."""
    m = ReplicationModel(network_rate=10.0)
    for b in (1, 2):
        m.broker_up(b)
    m.set_size(A, 100)
    m.set_size(B, 20)
    m.set_view(B, replicas=(2,), leader=2, isr=(2,))
    m.set_view(A, replicas=(1,), leader=1, isr=(1,))
    m.set_view(A, replicas=(1, 2), leader=1, isr=(1,))
    return m


def test_a_full_disk_stops_the_copy_where_the_disk_filled() -> None:
    m = model_with_a_copy()
    m.set_disk_capacity(2, 60)
    assert m.next_event_time() == pytest.approx(4.0)      # 40 bytes of room at 10 B/s
    assert m.advance(100.0) == []                          # never catches up
    assert m.replica_bytes(A, 2) == pytest.approx(40.0)
    assert m.disks_used()[2] == pytest.approx(60.0) and m.full_disks() == {2}
    assert m.next_event_time() is None and m.rates() == {}


def test_room_made_later_lets_the_follower_finish() -> None:
    m = model_with_a_copy()
    m.set_disk_capacity(2, 60)
    m.advance(10.0)
    m.set_disk_capacity(2, 200)                            # e.g. a disk grown, or a replica deleted
    events = m.advance(100.0)
    assert [(e.tp, e.broker) for e in events] == [(A, 2)]
    assert events[0].time == pytest.approx(16.0)           # the 60 remaining bytes at 10 B/s


def test_without_a_capacity_nothing_changes() -> None:
    m = model_with_a_copy()
    events = m.advance(100.0)
    assert [(e.tp, e.broker, round(e.time, 6)) for e in events] == [(A, 2, 10.0)]


@pytest.mark.parametrize("caps,message", [
    ({9: 10}, "broker 9 is not in brokers"),
    ({1: 0}, "must be > 0 bytes"),
    ({1: True}, "must be > 0 bytes"),
])
def test_bad_disk_capacities_are_refused(caps, message) -> None:
    with pytest.raises(InvalidInput, match=message):
        ClusterSpec(brokers={1: None, 2: None}, disk_capacity=caps)
