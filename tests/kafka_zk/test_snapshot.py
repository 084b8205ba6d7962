"""The snapshot reader on a real ZooKeeper, against a tree written with plain kazoo."""

import dataclasses
import json

import pytest

from kafka_zk.codecs import PartitionState, TopicPartition as TP
from kafka_zk.snapshot import (multi_read, pipelined, read_partition_states, read_partition_states_one_by_one,
                               read_snapshot, supports_multi_read)
from tests.zk_helpers import register_brokers


def _state(leader, isr, epoch=0):
    return json.dumps({"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": epoch,
                       "isr": isr}).encode()


def build(zk):
    register_brokers(zk, {0: "a", 1: "b", 2: "c"})
    zk.create("/controller", b'{"version":1,"brokerid":1,"timestamp":"1"}')
    zk.create("/controller_epoch", b"3")
    zk.create("/brokers/topics/foo", b'{"version":2,"partitions":{"0":[0,1],"1":[1,2,0]},'
              b'"adding_replicas":{"1":[0]},"removing_replicas":{}}')
    zk.create("/config/topics/foo", b'{"version":1,"config":{"retention.ms":"1000"}}')
    zk.create("/brokers/topics/foo/partitions/0/state", _state(0, [0, 1], 4), makepath=True)
    zk.create("/brokers/topics/bar", b'{"version":1,"partitions":{"0":[2]}}')
    zk.create("/admin/delete_topics/bar", makepath=True)
    zk.create("/config/brokers/1", b'{"version":1,"config":{"leader.replication.throttled.rate":"10"}}')
    zk.create("/config/brokers/<default>", b'{"version":1,"config":{}}')
    zk.create("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"foo","partition":1,'
              b'"replicas":[1,2],"log_dirs":["any","any"]}]}')


@pytest.mark.parametrize("multi", [True, False])
def test_read_snapshot_reads_everything(zk, multi):
    build(zk)
    snap = read_snapshot(zk, multi=multi)
    other = read_snapshot(zk, multi=not multi)
    assert dataclasses.replace(other, taken_at_ms=0) == dataclasses.replace(snap, taken_at_ms=0)
    assert snap.live_broker_ids == (0, 1, 2)
    assert snap.brokers[2].rack == "c" and snap.brokers[0].port == 19092
    assert snap.controller_id == 1 and snap.controller_epoch == 3
    foo = snap.topics["foo"]
    assert foo.config == {"retention.ms": "1000"} and not foo.marked_for_deletion
    assert foo.partitions[0].leader == 0 and foo.partitions[0].isr == (0, 1)
    assert foo.partitions[0].leader_epoch == 4
    assert foo.partitions[1].leader is None and foo.partitions[1].adding == (0,)
    assert foo.partitions[1].replicas == (1, 2, 0) and foo.assignment_version == 2
    assert snap.topics["bar"].marked_for_deletion and snap.delete_markers == {"bar"}
    assert snap.broker_configs == {"1": {"leader.replication.throttled.rate": "10"}, "<default>": {}}
    assert snap.reassignment.targets() == {TP("foo", 1): (1, 2)}
    assert snap.preferred_election is None
    only = read_snapshot(zk, topics=["bar", "nope"], with_configs=False)
    assert set(only.topics) == {"bar"} and only.broker_configs == {}


def test_empty_cluster(zk):
    snap = read_snapshot(zk)
    assert snap.brokers == {} and snap.topics == {} and snap.controller_id is None


def test_pipelined_and_one_by_one_agree_and_missing_nodes_are_none(zk):
    build(zk)
    tps = [TP("foo", 0), TP("foo", 1), TP("gone", 0)]
    fast = read_partition_states(zk, tps, window=2, multi=False)
    slow = read_partition_states_one_by_one(zk, tps)
    assert fast == slow
    assert supports_multi_read(zk)  # Debian's ZooKeeper 3.8 has multiRead
    assert read_partition_states(zk, tps, multi=True) == slow
    got = multi_read(zk, ["/", "/brokers/ids/0", "/nope", "/brokers/topics/foo"], batch=3, window=1)
    assert got["/nope"] is None and got["/brokers/ids/0"][1].ephemeralOwner != 0
    assert got["/brokers/topics/foo"][0] == zk.get("/brokers/topics/foo")[0]
    assert fast[TP("foo", 0)] == PartitionState(0, 4, (0, 1), 1)
    assert fast[TP("foo", 1)] is None and fast[TP("gone", 0)] is None
    got = pipelined(zk, "get_children", ["/brokers/ids", "/nope"])
    assert sorted(got["/brokers/ids"]) == ["0", "1", "2"] and got["/nope"] is None


def test_topics_vanishing_mid_read_are_skipped_not_fatal(zk):
    import threading

    register_brokers(zk, {0: "a", 1: "b"})
    names = [f"v{i:02d}" for i in range(20)]
    for n in names:
        zk.create(f"/brokers/topics/{n}", json.dumps(
            {"version": 1, "partitions": {str(p): [0, 1] for p in range(5)}}).encode())
        for p in range(5):
            zk.create(f"/brokers/topics/{n}/partitions/{p}/state", _state(0, [0, 1]), makepath=True)
    stop = threading.Event()

    def controller_deleting_topics():
        for n in names:
            if stop.is_set():
                return
            zk.delete(f"/brokers/topics/{n}", recursive=True)

    deleter = threading.Thread(target=controller_deleting_topics)
    deleter.start()
    seen = []
    try:
        while deleter.is_alive() or not seen:
            for multi in (True, False):
                snap = read_snapshot(zk, multi=multi)
                for t in snap.topics.values():
                    assert sorted(t.partitions) == list(range(5))
                    for p in t.partitions.values():
                        assert p.replicas == (0, 1) and p.leader in (0, None)
                seen.append(len(snap.topics))
            stop.wait(0.01)  # let the deleting thread run
    finally:
        stop.set()
        deleter.join(timeout=30)
    assert read_snapshot(zk).topics == {}
    assert seen[0] >= seen[-1]
