"""Topic admin on a real ZooKeeper, read back with plain kazoo: create, describe, list, alter, delete."""

import json
import random

import pytest

from kafka_zk.admin.configs import alter_config, describe_config
from kafka_zk.admin.topics import add_partitions, create_topic, delete_topic, list_topics
from kafka_zk.audit import AuditLog
from kafka_zk.describe import DescribeFilters, describe_lines
from kafka_zk.errors import InvalidConfig, TopicExists
from kafka_zk.snapshot import read_snapshot
from kafka_zk.writer import ZkWriter
from kafka_zk.authority import PersonAtKeyboard
from tests.zk_helpers import read_json, register_brokers, tree

KEYBOARD = PersonAtKeyboard("the test")   # these tests stand for a person at the keyboard


@pytest.fixture
def cluster(zk):
    register_brokers(zk, {0: "a", 1: "b", 2: "c"})
    return zk


def state(leader, isr, epoch=0):
    return json.dumps({"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": epoch,
                       "isr": isr}).encode()


def test_create_leaves_zookeeper_as_kafkas_tool_does(cluster, tmp_path):
    zk = cluster
    before = set(tree(zk))
    w = ZkWriter(zk, AuditLog(tmp_path / "a.jsonl"), authority=KEYBOARD)
    res = create_topic(w, zk, "my-topic", 2, 2, {"flush.messages": "1"}, fixed_start_index=0)
    assert res.created and res.assignment == {0: (0, 1), 1: (1, 2)} and res.warning is None
    assert set(tree(zk)) - before == {"/config/topics/my-topic", "/brokers/topics/my-topic"}
    assert read_json(zk, "/config/topics/my-topic") == {"version": 1, "config": {"flush.messages": "1"}}
    assert read_json(zk, "/brokers/topics/my-topic") == {"version": 1, "partitions": {"0": [0, 1], "1": [1, 2]}}
    assert zk.get_children("/config/changes") == []  # creation emits no notification
    assert [r.path for r in AuditLog.read(tmp_path / "a.jsonl")] == ["/config/topics/my-topic",
                                                                       "/brokers/topics/my-topic"]
    # config node was written before the topic node
    cz = zk.exists("/config/topics/my-topic").czxid
    tz = zk.exists("/brokers/topics/my-topic").czxid
    assert cz < tz


def test_create_without_overrides_writes_an_empty_config_and_random_placement_is_seeded(cluster):
    zk = cluster
    a = create_topic(ZkWriter(zk, authority=KEYBOARD), zk, "t.1", 6, 3, rng=random.Random(5))
    assert read_json(zk, "/config/topics/t.1") == {"version": 1, "config": {}}
    assert a.warning.startswith("WARNING: Due to limitations")
    assert all(len(set(r)) == 3 for r in a.assignment.values())
    with pytest.raises(TopicExists, match="Topic 't.1' already exists."):
        create_topic(ZkWriter(zk, authority=KEYBOARD), zk, "t.1", 1, 1)
    again = create_topic(ZkWriter(zk, authority=KEYBOARD), zk, "t.1", 1, 1, if_not_exists=True)
    assert not again.created


def test_describe_once_states_exist(cluster):
    zk = cluster
    create_topic(ZkWriter(zk, authority=KEYBOARD), zk, "my-topic", 2, 2, {"flush.messages": "1"}, fixed_start_index=0)
    snap = read_snapshot(zk)
    assert describe_lines(snap) == [
        "Topic: my-topic\tPartitionCount: 2\tReplicationFactor: 2\tConfigs: flush.messages=1",
        "\tTopic: my-topic\tPartition: 0\tLeader: none\tReplicas: 0,1\tIsr: ",
        "\tTopic: my-topic\tPartition: 1\tLeader: none\tReplicas: 1,2\tIsr: "]
    # what a controller writes (plain kazoo)
    zk.create("/brokers/topics/my-topic/partitions/0/state", state(0, [0, 1]), makepath=True)
    zk.create("/brokers/topics/my-topic/partitions/1/state", state(-1, [2], 3), makepath=True)
    snap = read_snapshot(zk)
    assert describe_lines(snap) == [
        "Topic: my-topic\tPartitionCount: 2\tReplicationFactor: 2\tConfigs: flush.messages=1",
        "\tTopic: my-topic\tPartition: 0\tLeader: 0\tReplicas: 0,1\tIsr: 0,1",
        "\tTopic: my-topic\tPartition: 1\tLeader: none\tReplicas: 1,2\tIsr: 2"]
    assert describe_lines(snap, fmt="1.x") == [
        "Topic:my-topic\tPartitionCount:2\tReplicationFactor:2\tConfigs:flush.messages=1",
        "\tTopic: my-topic\tPartition: 0\tLeader: 0\tReplicas: 0,1\tIsr: 0,1",
        "\tTopic: my-topic\tPartition: 1\tLeader: -1\tReplicas: 1,2\tIsr: 2"]
    assert describe_lines(snap, filters=DescribeFilters(under_replicated=True)) == [
        "\tTopic: my-topic\tPartition: 1\tLeader: none\tReplicas: 1,2\tIsr: 2"]
    assert describe_lines(snap, filters=DescribeFilters(unavailable=True)) == [
        "\tTopic: my-topic\tPartition: 1\tLeader: none\tReplicas: 1,2\tIsr: 2"]
    assert describe_lines(snap, filters=DescribeFilters(at_min_isr=True)) == []
    assert describe_lines(snap, filters=DescribeFilters(topics_with_overrides=True)) == [
        "Topic: my-topic\tPartitionCount: 2\tReplicationFactor: 2\tConfigs: flush.messages=1"]


def test_list_alter_config_and_delete_exactly(cluster):
    zk = cluster
    w = ZkWriter(zk, authority=KEYBOARD)
    create_topic(w, zk, "my-topic", 2, 2, {"flush.messages": "1"}, fixed_start_index=0)
    create_topic(w, zk, "__consumer_offsets", 1, 1, fixed_start_index=0)
    assert list_topics(zk) == ["__consumer_offsets", "my-topic"]
    assert list_topics(zk, exclude_internal=True) == ["my-topic"]

    new = alter_config(w, "topics", "my-topic", {"retention.ms": "1000"}, ["flush.messages"])
    assert new == {"retention.ms": "1000"}
    assert read_json(zk, "/config/topics/my-topic") == {"version": 1, "config": {"retention.ms": "1000"}}
    notes = zk.get_children("/config/changes")
    assert len(notes) == 1 and notes[0].startswith("config_change_")
    assert read_json(zk, f"/config/changes/{notes[0]}") == {"version": 2, "entity_path": "topics/my-topic"}
    assert describe_config(zk, "topics", "my-topic") == {"retention.ms": "1000"}
    before = tree(zk)
    with pytest.raises(InvalidConfig, match=r"^Invalid config\(s\): flush.messages$"):
        alter_config(w, "topics", "my-topic", {}, ["flush.messages"])
    assert tree(zk) == before

    alter_config(w, "brokers", "<default>", {"leader.replication.throttled.rate": "5"})
    assert read_json(zk, "/config/brokers/<default>")["config"] == {"leader.replication.throttled.rate": "5"}
    last = sorted(zk.get_children("/config/changes"))[-1]
    assert read_json(zk, f"/config/changes/{last}") == {"version": 2, "entity_path": "brokers/<default>"}

    snapshot_before = tree(zk)
    assert delete_topic(w, zk, "my-topic").outcome == "marked"
    diff = set(tree(zk)) - set(snapshot_before)
    assert diff == {"/admin/delete_topics/my-topic"}
    assert zk.get("/admin/delete_topics/my-topic")[0] in (b"", None)
    assert delete_topic(w, zk, "my-topic").outcome == "already_marked"
    assert describe_lines(read_snapshot(zk), ["my-topic"])[0].endswith("\tMarkedForDeletion: true")


def test_add_partitions_keeps_other_keys(cluster):
    zk = cluster
    zk.create("/brokers/topics/grow", b'{"version":3,"topic_id":"Y5ZfQ0m9S4uuVx8pCqS0Fg","partitions":'
              b'{"0":[1,2],"1":[2,0,1]},"adding_replicas":{"1":[1]},"removing_replicas":{}}')
    res = add_partitions(ZkWriter(zk, authority=KEYBOARD), "grow", 4, disable_rack_aware=True)
    assert res.added == {2: (0, 2), 3: (1, 2)}  # start index = shift = 1 (broker 1 in [0,1,2])
    doc = read_json(zk, "/brokers/topics/grow")
    assert doc == {"version": 3, "topic_id": "Y5ZfQ0m9S4uuVx8pCqS0Fg", "adding_replicas": {"1": [1]},
                   "removing_replicas": {}, "partitions": {"0": [1, 2], "1": [2, 0, 1], "2": [0, 2], "3": [1, 2]}}
