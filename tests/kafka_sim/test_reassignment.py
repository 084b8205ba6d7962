"""Reassignment through /admin/reassign_partitions, driven by plain kazoo writes (docs/zookeeper.md §2.7, 2.4+)."""

from __future__ import annotations

import json
import time

from tests.kafka_sim.zk_read import create_json, state, topic, wait_for, writes_to

NODE = "/admin/reassign_partitions"


def _request(zk, *entries, **extra) -> None:
    doc = {"version": 1, "partitions": [dict(topic=t, partition=p, replicas=r, **extra) for t, p, r in entries]}
    create_json(zk, NODE, doc)


def _gone(zk, timeout=20.0):
    wait_for(lambda: zk.exists(NODE) is None, timeout, "the controller to delete " + NODE)


def _states(cluster, t, p):
    return [(s["leader"], s["leader_epoch"], s["isr"])
            for s in writes_to(cluster.journal(), f"/brokers/topics/{t}/partitions/{p}/state")]


def test_rf3_disjoint_move_follows_the_controller_table(make_cluster, zk):
    """§2.7.3 table: {1,2,3} -> {4,5,6}: +1 (A) +1 (B2) +3 (B3) = +5."""
    cluster = make_cluster(brokers={1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"})
    cluster.create_topic("t", {0: [1, 2, 3]}, sizes={0: 10_000})
    _request(zk, ("t", 0, [4, 5, 6]))
    _gone(zk)
    assert writes_to(cluster.journal(), "/brokers/topics/t")[0]["partitions"]["0"] == [4, 5, 6, 1, 2, 3]
    states = _states(cluster, "t", 0)
    assert states[0] == (1, 0, [1, 2, 3]) and states[1] == (1, 1, [1, 2, 3])
    assert sorted(states[4][2]) == [1, 2, 3, 4, 5, 6] and states[4][:2] == (1, 1)
    assert states[5:] == [(4, 2, states[4][2]), (4, 3, [i for i in states[4][2] if i != 1]),
                          (4, 4, [i for i in states[4][2] if i not in (1, 2)]),
                          (4, 5, [i for i in states[4][2] if i not in (1, 2, 3)])]
    assert topic(zk, "t") == {"version": 2, "partitions": {"0": [4, 5, 6]}, "adding_replicas": {},
                              "removing_replicas": {}}
    assert state(zk, "t", 0)["leader_epoch"] == 5


def test_reorder_and_noop_complete_at_once_with_one_bump(make_cluster, zk):
    """b-ii: a re-order writes the topic znode twice, bumps the epoch once, keeps the leader."""
    cluster = make_cluster()
    cluster.create_topic("tb2", {0: [0, 1, 2], 1: [1, 2, 3]})
    _request(zk, ("tb2", 0, [2, 0, 1]), ("tb2", 1, [1, 2, 3]))
    _gone(zk)
    v2 = {"version": 2, "partitions": {"0": [2, 0, 1], "1": [1, 2, 3]}, "adding_replicas": {},
          "removing_replicas": {}}
    writes = writes_to(cluster.journal(), "/brokers/topics/tb2")
    assert writes[-1] == v2 and topic(zk, "tb2") == v2
    assert len(writes) == 3          # U for p0, B4 for p0, B4 for p1 (the no-op entry)
    assert _states(cluster, "tb2", 0) == [(0, 0, [0, 1, 2]), (0, 1, [0, 1, 2])]
    assert _states(cluster, "tb2", 1) == [(1, 0, [1, 2, 3]), (1, 1, [1, 2, 3])]


def test_replacing_one_replica_keeps_the_leader(make_cluster, zk):
    """Leader kept when it stays in the target: +3 (A, B2 bump, one removal)."""
    cluster = make_cluster()
    cluster.create_topic("t", {0: [0, 1]}, sizes={0: 1000})
    _request(zk, ("t", 0, [0, 2]))
    _gone(zk)
    assert state(zk, "t", 0) == {"controller_epoch": 1, "leader": 0, "version": 1, "leader_epoch": 3,
                                 "isr": [0, 2]}


def test_invalid_documents_stay_and_blind_until_controller_bounce(make_cluster, zk):
    """b-vi: log_dirs / unknown field -> ignored, node left; after a hand deletion the next valid
    node is ignored until /controller is deleted; then it runs."""
    cluster = make_cluster()
    cluster.create_topic("tb6", {0: [0, 1]})
    for extra in ({"log_dirs": ["any", "any"]}, {"foo": 1}):
        _request(zk, ("tb6", 0, [1, 2]), **extra)
        time.sleep(0.5)
        assert zk.exists(NODE) is not None and topic(zk, "tb6")["partitions"]["0"] == [0, 1]
        zk.delete(NODE)
        _request(zk, ("tb6", 0, [1, 2]))
        time.sleep(0.5)
        assert zk.exists(NODE) is not None and topic(zk, "tb6")["partitions"]["0"] == [0, 1], \
            "a node created after a hand deletion must be ignored"
        before = cluster.controller_id()
        zk.delete("/controller")
        _gone(zk)
        assert cluster.controller_id() != before
        assert topic(zk, "tb6")["partitions"]["0"] == [1, 2]
        _request(zk, ("tb6", 0, [0, 1]))        # the controller re-armed its watch: runs at once
        _gone(zk)
        assert topic(zk, "tb6")["partitions"]["0"] == [0, 1]


def test_unknown_partitions_are_dropped_and_unregistered_targets_never_finish(make_cluster, zk):
    cluster = make_cluster()
    cluster.create_topic("t", {0: [0, 1], 1: [1, 2]})
    _request(zk, ("t", 0, [0, 9]), ("t", 7, [0, 1]), ("nosuch", 0, [0, 1]))
    wait_for(lambda: json.loads(zk.get(NODE)[0])["partitions"] == [
        {"topic": "t", "partition": 0, "replicas": [0, 9]}], what="errored entries pruned")
    time.sleep(0.5)
    assert topic(zk, "t")["adding_replicas"] == {"0": [9]} and topic(zk, "t")["removing_replicas"] == {"0": [1]}
    assert not cluster.wait_idle(0.5)


def test_edits_while_the_node_exists_are_ignored_then_run_at_failover(make_cluster, zk):
    """§2.7.1: setData on the node has no effect; its entries survive the controller's
    pruning and run when the controller changes."""
    cluster = make_cluster(speed=20.0)
    cluster.create_topic("t", {0: [0, 1], 1: [1, 2]}, sizes={0: 400_000_000})
    _request(zk, ("t", 0, [2, 3]))
    wait_for(lambda: topic(zk, "t")["version"] == 2, what="reassignment started")
    edited = {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [2, 3]},
                                           {"topic": "t", "partition": 1, "replicas": [3, 0]}]}
    zk.set(NODE, json.dumps(edited).encode())
    wait_for(lambda: topic(zk, "t")["partitions"]["0"] == [2, 3], timeout=30, what="p0 done")
    time.sleep(0.3)
    assert json.loads(zk.get(NODE)[0])["partitions"] == [{"topic": "t", "partition": 1, "replicas": [3, 0]}]
    assert topic(zk, "t")["partitions"]["1"] == [1, 2]
    cluster.move_controller()
    _gone(zk)
    assert topic(zk, "t")["partitions"]["1"] == [3, 0]


def test_cancellation_by_new_target_at_failover(make_cluster, zk):
    """ZK-only cancel (§2.7.4): delete the stuck node, create one targeting the origin, bounce."""
    cluster = make_cluster()
    cluster.create_topic("t", {0: [0, 1]})
    _request(zk, ("t", 0, [0, 9]))
    wait_for(lambda: topic(zk, "t")["version"] == 2, what="stuck reassignment")
    zk.delete(NODE)
    _request(zk, ("t", 0, [0, 1]))
    cluster.move_controller()
    _gone(zk)
    assert topic(zk, "t") == {"version": 2, "partitions": {"0": [0, 1]}, "adding_replicas": {},
                              "removing_replicas": {}}
    assert state(zk, "t", 0)["isr"] == [0, 1]
