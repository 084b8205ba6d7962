"""Broker registration, controller election, topic creation and a first reassignment."""

from __future__ import annotations

import json

from tests.kafka_sim.zk_read import create_json, get_json, state, topic, wait_for, writes_to


def test_brokers_register_and_controller_is_elected(make_cluster, zk):
    cluster = make_cluster()
    assert sorted(zk.get_children("/brokers/ids")) == ["0", "1", "2", "3"]
    data, stat = zk.get("/brokers/ids/2")
    reg = json.loads(data)
    assert stat.version == 1 and stat.ephemeralOwner != 0
    assert reg["version"] == 4 and reg["rack"] == "a" and reg["host"] == "127.0.0.1"
    assert reg["endpoints"] == [f"PLAINTEXT://127.0.0.1:{reg['port']}"]
    assert reg["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
    assert isinstance(reg["timestamp"], str)
    for path in ("/consumers", "/brokers/seqid", "/config/changes", "/config/topics", "/config/brokers",
                 "/config/clients", "/config/users", "/admin/delete_topics", "/isr_change_notification",
                 "/latest_producer_id_block", "/log_dir_event_notification"):
        assert zk.exists(path) is not None, path
    assert get_json(zk, "/cluster/id")["version"] == "1"
    assert zk.get("/brokers/seqid")[0] in (b"", None)
    block = get_json(zk, "/latest_producer_id_block")       # one block of 1000 claimed per broker
    assert block["block_start"] == "3000" and block["block_end"] == "3999"
    epoch, _ = zk.get("/controller_epoch")
    assert epoch == b"1"
    ctrl = get_json(zk, "/controller")
    assert ctrl["brokerid"] == cluster.controller_id() and isinstance(ctrl["timestamp"], str)
    assert zk.exists("/controller").ephemeralOwner != 0


def test_topic_creation_states(make_cluster, zk):
    cluster = make_cluster()
    create_json(zk, "/config/topics/ta1", {"version": 1, "config": {}})
    create_json(zk, "/brokers/topics/ta1", {"version": 1, "partitions": {
        "0": [0, 1, 2], "1": [1, 2, 3], "2": [2, 3, 0], "3": [3, 0, 1]}})
    wait_for(lambda: state(zk, "ta1", 3), what="ta1 states")
    ce = int(zk.get("/controller_epoch")[0])
    assert state(zk, "ta1", 0) == {"controller_epoch": ce, "leader": 0, "version": 1, "leader_epoch": 0,
                                   "isr": [0, 1, 2]}
    assert state(zk, "ta1", 2)["isr"] == [2, 3, 0]
    assert zk.get("/brokers/topics/ta1/partitions")[0] in (b"", None)
    # the tool's v1 payload is not rewritten at creation
    assert topic(zk, "ta1")["version"] == 1
    writes = [w.path for w in cluster.journal() if w.path.startswith("/brokers/topics/ta1")]
    assert writes[0] == "/brokers/topics/ta1/partitions"
    assert writes[1:5] == [f"/brokers/topics/ta1/partitions/{p}" for p in range(4)]
    assert writes[5:] == [f"/brokers/topics/ta1/partitions/{p}/state" for p in range(4)]


def test_disjoint_reassignment_trajectory(make_cluster, zk):
    """b-i: [0,1] -> [2,3]: U, A (+1), catch-up, B2 (+1), B3 (+2), B4, node deleted."""
    cluster = make_cluster()
    cluster.create_topic("tb1", {0: [0, 1], 1: [1, 0]}, sizes={0: 1000})
    create_json(zk, "/admin/reassign_partitions",
                {"version": 1, "partitions": [{"topic": "tb1", "partition": 0, "replicas": [2, 3]}]})
    wait_for(lambda: zk.exists("/admin/reassign_partitions") is None, what="reassignment done")
    journal = cluster.journal()
    assert writes_to(journal, "/brokers/topics/tb1") == [
        {"version": 2, "partitions": {"0": [2, 3, 0, 1], "1": [1, 0]},
         "adding_replicas": {"0": [2, 3]}, "removing_replicas": {"0": [0, 1]}},
        {"version": 2, "partitions": {"0": [2, 3], "1": [1, 0]}, "adding_replicas": {}, "removing_replicas": {}}]
    states = [(s["leader"], s["leader_epoch"], s["isr"])
              for s in writes_to(journal, "/brokers/topics/tb1/partitions/0/state")]
    assert states == [(0, 0, [0, 1]), (0, 1, [0, 1]), (0, 1, [0, 1, 2]), (0, 1, [0, 1, 2, 3]),
                      (2, 2, [0, 1, 2, 3]), (2, 3, [1, 2, 3]), (2, 4, [2, 3])]
    assert state(zk, "tb1", 0)["leader_epoch"] == 4


def test_bad_input_is_refused_before_any_write(make_cluster, zk, zk_connect):
    import pytest

    from kafka_sim.cluster import ClusterSpec, EmulatedCluster
    from kafka_zk.errors import InvalidInput, KafkaZkError, TopicExists
    from tests.zk_helpers import tree

    with pytest.raises(InvalidInput, match="brokers is empty"):
        ClusterSpec(brokers={})
    with pytest.raises(InvalidInput, match="speed"):
        ClusterSpec(brokers={0: None}, speed=0)
    for rate in (0, float("inf"), float("nan")):     # an unlimited network would copy in no time: NaN bytes
        with pytest.raises(InvalidInput, match="network_rate .* must be a finite rate > 0"):
            ClusterSpec(brokers={0: None}, network_rate=rate)
    cluster = make_cluster()
    cluster.create_topic("x", {0: [0, 1]})
    before = tree(zk)
    for bad, message in [({0: [0, 0]}, "must be distinct"), ({1: [0]}, "must be 0..0"), ({}, "empty")]:
        with pytest.raises(InvalidInput, match=message):
            cluster.create_topic("y", bad)
    with pytest.raises(InvalidInput, match="size for partition"):
        cluster.create_topic("y", {0: [0]}, sizes={3: 10})
    with pytest.raises(TopicExists):
        cluster.create_topic("x", {0: [0]})
    with pytest.raises(InvalidInput, match="not in this cluster"):
        cluster.kill_broker(42)
    assert tree(zk) == before
    other = EmulatedCluster(zk_connect, ClusterSpec(brokers={1: "z"}))
    with pytest.raises(KafkaZkError, match="broker id 1 is already registered"):
        other.start()
    other.stop()
    assert json.loads(zk.get("/brokers/ids/1")[0])["rack"] == "b"
