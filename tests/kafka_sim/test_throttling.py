"""Throttled replication takes the time the rates predict (docs/zookeeper.md §3), on the simulated clock."""

from __future__ import annotations

import json

import pytest

from kafka_sim.spec import FETCH_START
from tests.zk_helpers import set_config_by_hand
from tests.kafka_sim.zk_read import create_json, wait_for

MB = 1_000_000


def _events(cluster, kind, topic="t"):
    return [e for e in cluster.history() if e.kind == kind and (e.topic == topic or topic is None)]


def _throttle(zk, rate: int) -> None:
    for b in (0, 1):
        set_config_by_hand(zk, f"brokers/{b}", {"leader.replication.throttled.rate": str(rate),
                                         "follower.replication.throttled.rate": str(rate)})
    set_config_by_hand(zk, "topics/t", {"leader.replication.throttled.replicas": "0:0",
                                 "follower.replication.throttled.replicas": "0:1"})


def test_throttled_move_takes_size_over_rate(make_cluster, zk):
    cluster = make_cluster(speed=200.0, network_rate=100 * MB)
    cluster.create_topic("t", {0: [0], 1: [0]}, sizes={0: 200 * MB, 1: 50 * MB})
    _throttle(zk, 2 * MB)
    wait_for(lambda: len(_events(cluster, "throttle_rates", None)) >= 6 and _events(cluster, "throttle_lists"),
             what="rates and lists applied")
    create_json(zk, "/admin/reassign_partitions", {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1]}, {"topic": "t", "partition": 1, "replicas": [2]}]})
    wait_for(lambda: zk.exists("/admin/reassign_partitions") is None, timeout=30, what="done")
    start = {e.partition: e.time for e in reversed(_events(cluster, "reassign_update"))}
    caught = {e.partition: e.time for e in _events(cluster, "caught_up")}
    done = {e.partition: e.time for e in _events(cluster, "reassign_done")}
    # t-0 is throttled on both sides at 2 MB/s: 100 s; t-1 (not listed) runs at the network rate
    assert caught[0] - start[0] == pytest.approx(100.0, rel=0.05)
    assert caught[1] - start[1] == pytest.approx(0.5, abs=0.6)
    assert done[0] - start[0] == pytest.approx(100.0, rel=0.05)
    # the entry of the faster partition was pruned from the node before the other finished
    # the journal records a write just after ZooKeeper applied it: wait for the deletion's entry

    def node_writes_done() -> list:
        writes = [w for w in cluster.journal() if w.path == "/admin/reassign_partitions"]
        return writes if writes and writes[-1].op == "delete" else []
    node_writes = wait_for(node_writes_done, what="the node's deletion in the journal")
    assert [w.op for w in node_writes] == ["set", "delete"]
    assert json.loads(node_writes[0].data)["partitions"] == [{"topic": "t", "partition": 0, "replicas": [1]}]


def test_removing_throttles_midway_finishes_sooner(make_cluster, zk):
    cluster = make_cluster(speed=100.0, network_rate=100 * MB)
    cluster.create_topic("t", {0: [0]}, sizes={0: 400 * MB})
    _throttle(zk, 1 * MB)
    wait_for(lambda: len(_events(cluster, "throttle_rates", None)) >= 6 and _events(cluster, "throttle_lists"),
             what="rates and lists applied")
    create_json(zk, "/admin/reassign_partitions",
                {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1]}]})
    start = wait_for(lambda: _events(cluster, "reassign_update"), what="started")[0].time
    wait_for(lambda: cluster.now() > start + 60, timeout=10, what="60 s simulated")
    for b in (0, 1):
        set_config_by_hand(zk, f"brokers/{b}", {})
    wait_for(lambda: zk.exists("/admin/reassign_partitions") is None, timeout=30, what="done")
    lifted = max(e.time for e in _events(cluster, "throttle_rates", None)[-2:])
    caught = _events(cluster, "caught_up")[0].time
    copied_throttled = 1 * MB * (lifted - start)
    predicted = lifted + (400 * MB - copied_throttled) / (100 * MB)
    assert caught == pytest.approx(predicted, rel=0.05)
    assert caught - start < 400 * 0.5       # far sooner than the 400 s the throttle implies


def test_log_dirs_json_reports_replica_bytes_during_a_move(make_cluster, zk):
    """The emulator's kafka-log-dirs JSON parses with the planner's reader; a copying follower
    shows the bytes it has and its lag."""
    from kafka_zk.codecs import TopicPartition
    from kafka_zk.log_dirs import parse_log_dirs

    cluster = make_cluster(speed=100.0, network_rate=1 * MB)
    cluster.create_topic("t", {0: [0, 1], 1: [1, 2]}, sizes={0: 500 * MB, 1: 7 * MB})
    assert parse_log_dirs(cluster.log_dirs_json()) == {TopicPartition("t", 0): 500 * MB,
                                                       TopicPartition("t", 1): 7 * MB}
    create_json(zk, "/admin/reassign_partitions",
                {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [0, 3]}]})
    wait_for(lambda: cluster.now() > 100 and _events(cluster, "reassign_update"), what="copying")
    doc = json.loads(cluster.log_dirs_json())
    on3 = [p for b in doc["brokers"] if b["broker"] == 3 for p in b["logDirs"][0]["partitions"]]
    assert len(on3) == 1 and on3[0]["partition"] == "t-0" and 0 < on3[0]["size"] < 500 * MB
    assert on3[0]["offsetLag"] == 500 * MB - on3[0]["size"] and on3[0]["isFuture"] is False
    assert doc["brokers"][0]["logDirs"][0]["error"] is None
    assert cluster.sizes() == {TopicPartition("t", 0): 500 * MB, TopicPartition("t", 1): 7 * MB}


def test_default_broker_rates_are_ignored_before_3_9(make_cluster, zk):
    """§2.10: rates under /config/brokers/<default> do not throttle (2.4.1 verified)."""
    cluster = make_cluster(speed=100.0, network_rate=100 * MB)
    cluster.create_topic("t", {0: [0]}, sizes={0: 100 * MB})
    set_config_by_hand(zk, "brokers/<default>", {"leader.replication.throttled.rate": str(MB),
                                          "follower.replication.throttled.rate": str(MB)})
    set_config_by_hand(zk, "topics/t", {"leader.replication.throttled.replicas": "*",
                                 "follower.replication.throttled.replicas": "*"})
    wait_for(lambda: _events(cluster, "throttle_lists"), what="lists applied")
    create_json(zk, "/admin/reassign_partitions",
                {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1]}]})
    wait_for(lambda: zk.exists("/admin/reassign_partitions") is None, timeout=30, what="done")
    start = _events(cluster, "reassign_update")[0].time
    # unthrottled: 100 MB at 100 MB/s after the new replica's fetch start (2.4.1's fixed cost)
    assert _events(cluster, "caught_up")[0].time - start == pytest.approx(FETCH_START + 1.0, rel=0.05)
