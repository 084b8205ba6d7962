"""An emulated copy of a cluster seeded from its snapshot, sizes and disks (kafka_sim/from_snapshot.py)."""

from __future__ import annotations

from kafka_sim.cluster import EmulatedCluster
from kafka_sim.from_snapshot import seed_from_snapshot, spec_from_snapshot
from kafka_zk.capacity import DiskCapacity
from kafka_zk.codecs import ReassignmentEntry, ReassignmentRequest, TopicPartition
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
from kafka_zk.snapshot import read_snapshot
from tests.kafka_sim.zk_read import get_json, wait_for

GiB = 1024 ** 3


def _snapshot() -> ClusterSnapshot:
    def part(t: str, p: int, replicas: tuple[int, ...], leader: int) -> Partition:
        return Partition(t, p, replicas, leader=leader, leader_epoch=3, isr=replicas, controller_epoch=1)

    orders = Topic("orders", {0: part("orders", 0, (0, 1), 1), 1: part("orders", 1, (1, 2), 1),
                              2: part("orders", 2, (2, 3), 2)},
                   config={"retention.ms": "86400000", "leader.replication.throttled.replicas": "0:0,0:1"})
    logs = Topic("logs", {0: part("logs", 0, (3, 0), 3)})
    brokers = {b: Broker(b, r, f"kafka{b}", 9092) for b, r in ((0, "a"), (1, "b"), (2, "a"))}   # 3 not registered
    return ClusterSnapshot(brokers, {"orders": orders, "logs": logs},
                           broker_configs={"1": {"leader.replication.throttled.rate": "1000000"}})


def test_the_copy_has_the_snapshots_brokers_racks_topics_configs_and_sizes(zk_connect, zk):
    snap = _snapshot()
    sizes = {TopicPartition("orders", 0): 5 * GiB, TopicPartition("orders", 1): 7, TopicPartition("logs", 0): 3}
    spec = spec_from_snapshot(snap, DiskCapacity({0: 100 * GiB}, default=50 * GiB), speed=100.0)
    assert spec.brokers == {0: "a", 1: "b", 2: "a", 3: None}
    assert spec.disk_capacity == {0: 100 * GiB, 1: 50 * GiB, 2: 50 * GiB, 3: 50 * GiB}
    with EmulatedCluster(zk_connect, spec) as cluster:
        report = seed_from_snapshot(cluster, snap, sizes, who="the test")
        assert (report.brokers, report.unregistered, report.topics, report.partitions, report.sized) == \
            (4, (3,), 2, 4, 3)
        assert report.bytes == 5 * GiB + 10
        wait_for(lambda: sorted(zk.get_children("/brokers/ids")) == ["0", "1", "2"], what="broker 3 stopped")
        copy = read_snapshot(zk)
        assert copy.assignment() == snap.assignment()
        assert dict(copy.topics["orders"].config) == dict(snap.topics["orders"].config)
        assert copy.broker_configs["1"] == {"leader.replication.throttled.rate": "1000000"}
        assert {b.id: b.rack for b in copy.brokers.values()} == {0: "a", 1: "b", 2: "a"}
        got = cluster.sizes()
        assert got[TopicPartition("orders", 0)] == 5 * GiB and got[TopicPartition("orders", 2)] == 0
        assert get_json(zk, "/brokers/topics/orders/partitions/1/state")["leader"] == 1
        # the cluster as found: orders-0 is led by its second replica (not the preferred one); logs-0's
        # leader, broker 3, is down: the controller's own choice leads it, and the report says so
        assert get_json(zk, "/brokers/topics/orders/partitions/0/state")["leader"] == 1
        assert get_json(zk, "/brokers/topics/logs/partitions/0/state")["leader"] == 0
        assert report.leaders_restored == 1
        assert any("the snapshot's leader of 1 partition(s)" in n for n in report.not_copied), report.not_copied


def test_the_copy_leads_and_syncs_as_found_and_replays_a_reassignment_in_flight(zk_connect, zk):
    """Leaders moved by restarts without an election, a replica out of the ISR on a down broker,
    and a reassignment in flight (topic znode with adding/removing replicas, the admin node)."""
    def part(p: int, replicas: tuple[int, ...], leader: int, isr: tuple[int, ...], **more) -> Partition:
        return Partition("t", p, replicas, leader=leader, leader_epoch=5, isr=isr, controller_epoch=2, **more)

    brokers = {b: Broker(b, None, f"kafka{b}", 9092) for b in (0, 1, 2)}          # 3 is down
    parts = {0: part(0, (0, 1, 2), 2, (2, 0, 1)), 1: part(1, (1, 3, 0), 0, (0, 1)),
             2: part(2, (0, 1, 2), 0, (0, 1), adding=(2,), removing=(1,))}
    snap = ClusterSnapshot(brokers, {"t": Topic("t", parts)},
                           reassignment=ReassignmentRequest((ReassignmentEntry("t", 2, (0, 2)),)))
    with EmulatedCluster(zk_connect, spec_from_snapshot(snap, speed=100.0)) as cluster:
        report = seed_from_snapshot(cluster, snap, {TopicPartition("t", p): 1000 for p in range(3)}, who="the test")
        state = lambda p: get_json(zk, f"/brokers/topics/t/partitions/{p}/state")
        assert (state(0)["leader"], state(0)["isr"]) == (2, [2, 0, 1])
        assert (state(1)["leader"], sorted(state(1)["isr"])) == (0, [0, 1])
        wait_for(lambda: get_json(zk, "/brokers/topics/t")["partitions"]["2"] == [0, 2], what="the replayed move")
        assert any("replayed from its start" in n for n in report.not_copied), report.not_copied
        assert report.leaders_restored >= 2


def test_a_down_broker_that_was_the_copys_first_controller_leaves_the_states_to_the_next_one(zk_connect, zk):
    """The copy's first controller is a broker the snapshot saw down: stopped, the next controller
    writes the states as found (the dead-broker decommission's rehearsal: issue 38)."""
    spec = spec_from_snapshot(ClusterSnapshot({b: Broker(b, None, f"kafka{b}", 9092) for b in (0, 1, 2)}, {}),
                              speed=100.0)
    with EmulatedCluster(zk_connect, spec) as cluster:
        down = cluster.controller_id()
        up = [b for b in (0, 1, 2) if b != down]
        rs = (down, *up)
        parts = {p: Partition("t", p, rs, leader=up[1], leader_epoch=4, isr=(up[1], up[0]), controller_epoch=3)
                 for p in (0, 1)}
        snap = ClusterSnapshot({b: Broker(b, None, f"kafka{b}", 9092) for b in up}, {"t": Topic("t", parts)})
        report = seed_from_snapshot(cluster, snap, None, who="the test")
        assert report.unregistered == (down,)
        assert [get_json(zk, f"/brokers/topics/t/partitions/{p}/state")["leader"] for p in (0, 1)] == [up[1]] * 2
        assert cluster.controller_id() in up
