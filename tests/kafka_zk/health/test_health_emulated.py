"""kafka_zk.health on a real emulated cluster: each planted problem is found, a clean cluster is clean.

Problems are planted the way they happen: a killed broker (URP, offline partition, a deletion
waiting on a dead replica), throttle configs written with plain kazoo and no reassignment, a
reassignment whose target broker is not registered, an election node with no controller to
process it, brokers restarted so leadership moved away from the preferred replicas. Ages come
from real znode Stats; thresholds are set low rather than waiting for real minutes.
"""

from __future__ import annotations

import json
import time

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk import health
from kafka_zk.codecs import TopicPartition
from kafka_zk.health import HealthThresholds, check_health, read_znode_ages
from kafka_zk.snapshot import read_snapshot

TP = TopicPartition
RACKS = {1: "a", 2: "b", 3: "c"}


@pytest.fixture
def cluster(zk_connect):
    c = EmulatedCluster(zk_connect, ClusterSpec(brokers=RACKS, speed=3600.0, seed=0)).start()
    yield c
    c.stop()


def run(zk, thresholds=HealthThresholds(), now_ms=None):
    snap = read_snapshot(zk)
    return check_health(snap, read_znode_ages(zk, snap, now_ms), thresholds)


def test_clean_cluster_is_reported_clean(cluster, zk):
    cluster.create_topic("orders", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
    cluster.create_topic("audit", {0: [1, 2], 1: [2, 3]}, config={"min.insync.replicas": "1"})
    assert cluster.wait_idle(30)
    report = run(zk, HealthThresholds(stuck_reassignment_s=0, stuck_election_s=0, stuck_deletion_s=0))
    assert report.clean, [f.message for f in report.findings]
    assert report.worst == "ok" and report.partition_count == 5


def test_killed_broker_gives_urp_offline_min_isr_and_a_stuck_deletion(cluster, zk):
    # kill a broker that is not the controller: a new controller does not shrink ISRs at failover
    v = next(b for b in (3, 2, 1) if b != cluster.controller_id())
    a, b = [x for x in (1, 2, 3) if x != v]
    cluster.create_topic("orders", {0: [a, b, v], 1: [b, v, a]}, config={"min.insync.replicas": "3"})
    cluster.create_topic("solo", {0: [v]})
    cluster.create_topic("doomed", {0: [v, a]})
    assert cluster.wait_idle(30)
    cluster.kill_broker(v)
    # the controller takes v out of each ISR one partition at a time: wait for all of them
    assert cluster.wait_until(lambda: all(v not in read_snapshot(zk).partition(TP("orders", p)).isr
                                          for p in (0, 1)), 30)
    zk.create("/admin/delete_topics/doomed", b"")  # waits for broker v (docs/zookeeper.md §2.9)
    report = run(zk, HealthThresholds(stuck_deletion_s=0), now_ms=int(time.time() * 1000) + 1000)
    assert report.partitions_of(health.UNDER_REPLICATED) == (TP("orders", 0), TP("orders", 1))
    assert report.partitions_of(health.UNAVAILABLE) == (TP("solo", 0),)
    assert set(report.partitions_of(health.UNDER_MIN_ISR)) == {TP("orders", 0), TP("orders", 1), TP("solo", 0)}
    [urp] = report.of(health.UNDER_REPLICATED)
    assert f"broker(s) {v} that are not live" in urp.cause
    [stuck] = report.of(health.STUCK_DELETION)
    assert stuck.subject == "topic doomed" and f"broker(s) {v} that are not live" in stuck.cause
    assert report.worst == "critical" and report.reaches("critical")
    # the topic being deleted is not reported as unavailable/under-replicated
    assert all(tp.topic != "doomed" for f in report.findings if f.check in health.CHECKS[:4] for tp in f.partitions)


def test_leaked_throttles_are_found_only_without_reassignment(cluster, zk):
    cluster.create_topic("orders", {0: [1, 2], 1: [2, 3]})
    assert cluster.wait_idle(30)
    zk.ensure_path("/config/brokers")
    zk.create("/config/brokers/2", json.dumps({"version": 1, "config": {
        "leader.replication.throttled.rate": "1000", "follower.replication.throttled.rate": "1000"}}).encode())
    zk.set("/config/topics/orders", json.dumps({"version": 1, "config": {
        "leader.replication.throttled.replicas": "0:1,0:2", "follower.replication.throttled.replicas": ""}}).encode())
    report = run(zk)
    assert {f.subject for f in report.of(health.LEAKED_THROTTLE)} == {"broker 2", "topic orders"}
    assert report.worst == "warning" and not report.reaches("critical")


def test_stuck_reassignment_names_the_unregistered_target(cluster, zk):
    cluster.create_topic("orders", {0: [1, 2], 1: [2, 3]})
    assert cluster.wait_idle(30)
    zk.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
        {"topic": "orders", "partition": 0, "replicas": [1, 9]}]}).encode())
    assert cluster.wait_until(lambda: read_snapshot(zk).partition(TP("orders", 0)).is_reassigning, 30)
    _, stat = zk.get("/admin/reassign_partitions")
    fresh = run(zk, HealthThresholds(stuck_reassignment_s=60), now_ms=stat.mtime + 10_000)
    assert not fresh.of(health.STUCK_REASSIGNMENT)
    report = run(zk, HealthThresholds(stuck_reassignment_s=60), now_ms=stat.mtime + 61_000)
    [f] = report.of(health.STUCK_REASSIGNMENT)
    assert f.partitions == (TP("orders", 0),) and "target broker(s) 9 not live" in f.cause
    assert f.severity == "critical" and f.age_s == pytest.approx(61.0, abs=0.01)
    # the adding replica is not counted as lost (2.6+ URP rule), and the run is not a throttle leak
    assert not report.of(health.UNDER_REPLICATED) and not report.of(health.LEAKED_THROTTLE)


def test_stuck_election_without_controller(cluster, zk):
    cluster.create_topic("orders", {0: [1, 2]})
    assert cluster.wait_idle(30)
    for b in (1, 2, 3):
        cluster.kill_broker(b)
    assert cluster.wait_until(lambda: zk.exists("/controller") is None, 30)
    zk.create("/admin/preferred_replica_election",
              json.dumps({"version": 1, "partitions": [{"topic": "orders", "partition": 0}]}).encode())
    _, stat = zk.get("/admin/preferred_replica_election")
    report = run(zk, HealthThresholds(stuck_election_s=300), now_ms=stat.ctime + 301_000)
    [f] = report.of(health.STUCK_ELECTION)
    assert f.partitions == (TP("orders", 0),) and "no active controller" in f.cause


def test_leader_imbalance_after_restarts(cluster, zk):
    assignment = {p: [(p % 3) + 1, ((p + 1) % 3) + 1, ((p + 2) % 3) + 1] for p in range(6)}
    cluster.create_topic("orders", assignment)
    assert cluster.wait_idle(30)
    for b in (1, 2):
        cluster.kill_broker(b)
        assert cluster.wait_until(lambda: zk.exists("/controller") is not None, 30)
        cluster.restart_broker(b)
        assert cluster.wait_idle(30)
    report = run(zk)
    # expectation from the raw state znodes, read with plain kazoo
    leaders = {p: json.loads(zk.get(f"/brokers/topics/orders/partitions/{p}/state")[0])["leader"] for p in assignment}
    not_led = {b: sum(1 for p, r in assignment.items() if r[0] == b and leaders[p] != b) for b in (1, 2, 3)}
    expected = {f"broker {b}" for b, n in not_led.items() if n / 2 > 0.10}
    assert expected, f"the restarts moved no leadership: {leaders}"
    found = {f.subject: f for f in report.of(health.LEADER_IMBALANCE)}
    assert set(found) == expected
    for b in report.leader_balance:
        assert (b.preferred, b.not_led, b.imbalance_ratio) == (2, not_led[b.broker], not_led[b.broker] / 2)
    assert all("preferred leader election" in f.cause for f in found.values())


def test_stuck_reassignment_names_a_replica_that_does_not_catch_up(cluster, zk):
    cluster.create_topic("orders", {0: [1, 2]}, sizes={0: 10 * 1024 ** 3})
    assert cluster.wait_idle(30)
    cluster.stall_replica("orders", 0, 3)  # the new replica on broker 3 will never fetch
    zk.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
        {"topic": "orders", "partition": 0, "replicas": [1, 3]}]}).encode())
    assert cluster.wait_until(lambda: read_snapshot(zk).partition(TP("orders", 0)).is_reassigning, 30)
    _, stat = zk.get("/admin/reassign_partitions")
    [f] = run(zk, HealthThresholds(stuck_reassignment_s=600), now_ms=stat.mtime + 601_000).of(
        health.STUCK_REASSIGNMENT)
    assert f.partitions == (TP("orders", 0),)
    assert "replica(s) on broker(s) 3 not catching up (not in the ISR)" in f.cause


def test_stuck_reassignment_names_a_follower_that_cannot_append_and_the_lowered_max_message_bytes(cluster, zk):
    """Issue 11: a follower failing every fetch with RecordTooLargeException (the emulator's append
    failure) after the topic's max.message.bytes was lowered below the brokers' message.max.bytes."""
    from tests.zk_helpers import set_config_by_hand

    cluster.create_topic("orders", {0: [1, 2]}, sizes={0: 10 * 1024 ** 3})
    assert cluster.wait_idle(30)
    set_config_by_hand(zk, "topics/orders", {"max.message.bytes": "1024"})
    cluster.fail_append("orders", 0, 3)
    zk.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
        {"topic": "orders", "partition": 0, "replicas": [1, 3]}]}).encode())
    assert cluster.wait_until(lambda: read_snapshot(zk).partition(TP("orders", 0)).is_reassigning, 30)
    _, stat = zk.get("/admin/reassign_partitions")
    [f] = run(zk, HealthThresholds(stuck_reassignment_s=600), now_ms=stat.mtime + 601_000).of(
        health.STUCK_REASSIGNMENT)
    assert "broker(s) 3 not catching up (not in the ISR) while their broker is up: a fetch failure" in f.cause
    assert "topic orders has max.message.bytes=1024, below the brokers' message.max.bytes=1000012" in f.cause
