"""Topic creation and topic-znode edits (docs/zookeeper.md §2.3, §2.4), as in the recorded scenario a."""

from __future__ import annotations

import time

from tests.kafka_sim.zk_read import create_json, state, topic, wait_for


def test_creation_without_live_replicas_waits_for_registration(make_cluster, zk):
    """ta4: a partition only on an unregistered broker gets no node until the broker registers."""
    cluster = make_cluster(brokers={0: "a", 1: "b", 2: "a", 3: "b", 9: "c"})
    cluster.move_controller(1)
    cluster.kill_broker(9)
    create_json(zk, "/config/topics/ta4", {"version": 1, "config": {}})
    create_json(zk, "/brokers/topics/ta4", {"version": 1, "partitions": {"0": [9], "1": [0, 9]}})
    wait_for(lambda: state(zk, "ta4", 1), what="ta4-1 state")
    assert state(zk, "ta4", 1)["isr"] == [0] and state(zk, "ta4", 1)["leader"] == 0
    time.sleep(0.3)
    assert zk.exists("/brokers/topics/ta4/partitions/0") is None
    cluster.restart_broker(9)
    wait_for(lambda: state(zk, "ta4", 0), what="ta4-0 created when broker 9 registers")
    assert state(zk, "ta4", 0)["leader"] == 9 and state(zk, "ta4", 0)["leader_epoch"] == 0
    # broker 9 is not put back into ta4-1's ISR by the controller; its leader does it
    wait_for(lambda: state(zk, "ta4", 1)["isr"] == [0, 9], what="leader-driven ISR expansion")
    assert state(zk, "ta4", 1)["leader_epoch"] == 0


def test_v2_payloads_at_creation(make_cluster, zk):
    """ta2/ta3: v2 payloads are accepted as written; creation does not start a reassignment."""
    make_cluster()
    create_json(zk, "/config/topics/ta3", {"version": 1, "config": {}})
    create_json(zk, "/brokers/topics/ta3", {"version": 2, "partitions": {"0": [3, 2, 1]},
                                            "adding_replicas": {"0": [3]}, "removing_replicas": {"0": [1]}})
    wait_for(lambda: state(zk, "ta3", 0), what="ta3 state")
    assert state(zk, "ta3", 0)["isr"] == [3, 2, 1] and state(zk, "ta3", 0)["leader"] == 3
    time.sleep(0.3)
    assert topic(zk, "ta3")["adding_replicas"] == {"0": [3]}


def test_added_partitions_created_and_other_edits_ignored(make_cluster, zk):
    cluster = make_cluster()
    create_json(zk, "/config/topics/ta1", {"version": 1, "config": {}})
    create_json(zk, "/brokers/topics/ta1", {"version": 1, "partitions": {
        "0": [0, 1, 2], "1": [1, 2, 3], "2": [2, 3, 0], "3": [3, 0, 1]}})
    wait_for(lambda: state(zk, "ta1", 3), what="ta1 states")
    zk.set("/brokers/topics/ta1", b'{"version":1,"partitions":{"0":[3,2,1],"1":[1,2,3],"2":[2,3,0],'
                                  b'"3":[3,0,1],"4":[0,2,1]}}')
    wait_for(lambda: state(zk, "ta1", 4), what="added partition")
    assert state(zk, "ta1", 4)["isr"] == [0, 2, 1] and state(zk, "ta1", 4)["leader_epoch"] == 0
    time.sleep(0.3)
    assert state(zk, "ta1", 0) == {"controller_epoch": 1, "leader": 0, "version": 1, "leader_epoch": 0,
                                   "isr": [0, 1, 2]}
    assert topic(zk, "ta1")["version"] == 1            # not rewritten by the controller
    # the controller's memory keeps [0,1,2] until the next failover: a preferred election of
    # partition 0 is "not needed" (leader 0 is the preferred replica it knows)
    create_json(zk, "/admin/preferred_replica_election",
                {"version": 1, "partitions": [{"topic": "ta1", "partition": 0}]})
    wait_for(lambda: zk.exists("/admin/preferred_replica_election") is None, what="election done")
    assert state(zk, "ta1", 0)["leader"] == 0
    zk.set("/brokers/topics/ta1", b'{"version":1,"partitions":{"0":[1,0,2],"1":[1,2,3],"2":[2,3,0],'
                                  b'"3":[3,0,1],"4":[0,2,1]}}')   # same set, preferred replica 1
    cluster.move_controller()                           # ZooKeeper wins at failover
    create_json(zk, "/admin/preferred_replica_election",
                {"version": 1, "partitions": [{"topic": "ta1", "partition": 0}]})
    wait_for(lambda: zk.exists("/admin/preferred_replica_election") is None, what="election done")
    assert state(zk, "ta1", 0)["leader"] == 1 and state(zk, "ta1", 0)["leader_epoch"] == 1
