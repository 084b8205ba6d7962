"""Controller-level behaviours: fencing, session expiry, unclean election, auto rebalance."""

from __future__ import annotations

import json
import time

from tests.zk_helpers import set_config_by_hand
from tests.kafka_sim.zk_read import create_json, get_json, state, topic, wait_for


def test_writes_are_fenced_on_the_controller_epoch_version(make_cluster, zk):
    """A controller whose /controller_epoch version moved cannot write anything (docs/zookeeper.md §0)."""
    cluster = make_cluster()
    cluster.create_topic("t", {0: [0, 1]})
    zk.set("/controller_epoch", b"7")                     # someone else's epoch bump
    create_json(zk, "/admin/reassign_partitions",
                {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 0]}]})
    time.sleep(0.5)
    assert topic(zk, "t")["version"] == 1 and zk.exists("/admin/reassign_partitions") is not None
    zk.delete("/controller")                              # a new election reads the new version
    wait_for(lambda: zk.exists("/admin/reassign_partitions") is None, what="the new controller ran it")
    assert zk.get("/controller_epoch")[0] == b"8"
    assert topic(zk, "t")["partitions"]["0"] == [1, 0]
    assert state(zk, "t", 0)["controller_epoch"] == 8


def test_controller_session_expiry_moves_the_controller(make_cluster, zk):
    cluster = make_cluster()
    cluster.create_topic("t", {0: [0, 1], 1: [2, 3]})
    first = cluster.controller_id()
    czxid = zk.exists(f"/brokers/ids/{first}").czxid
    cluster.expire_session(first)
    wait_for(lambda: cluster.controller_id() not in (-1, first), what="another controller")
    wait_for(lambda: zk.exists(f"/brokers/ids/{first}") and zk.exists(f"/brokers/ids/{first}").czxid != czxid,
             what="the expired broker registered again")
    assert zk.get("/controller_epoch")[0] == b"2"
    assert cluster.wait_idle(20)
    assert sorted(state(zk, "t", 0)["isr"] + state(zk, "t", 1)["isr"]) == [0, 1, 2, 3]


def test_unclean_election_enabled_by_topic_config_change(make_cluster, zk):
    cluster = make_cluster(speed=100.0)
    cluster.move_controller(3)
    cluster.create_topic("u", {0: [0, 1]}, sizes={0: 1000})
    cluster.stall_replica("u", 0, 1)
    wait_for(lambda: state(zk, "u", 0)["isr"] == [0], what="follower dropped")
    cluster.kill_broker(0)
    wait_for(lambda: state(zk, "u", 0)["leader"] == -1, what="no eligible leader")
    assert state(zk, "u", 0)["isr"] == [0] and state(zk, "u", 0)["leader_epoch"] == 1
    time.sleep(0.3)
    assert state(zk, "u", 0)["leader"] == -1
    set_config_by_hand(zk, "topics/u", {"unclean.leader.election.enable": "true"})
    wait_for(lambda: state(zk, "u", 0)["leader"] == 1, what="unclean leader")
    assert state(zk, "u", 0)["isr"] == [1] and state(zk, "u", 0)["leader_epoch"] == 2


def test_auto_leader_rebalance_restores_preferred_leaders(make_cluster, zk):
    cluster = make_cluster(speed=300.0, auto_leader_rebalance=True)
    cluster.move_controller(3)
    cluster.create_topic("r", {p: [0, 1] for p in range(4)})
    cluster.shutdown_broker(0)
    assert all(state(zk, "r", p)["leader"] == 1 for p in range(4))
    cluster.restart_broker(0)
    wait_for(lambda: all(state(zk, "r", p)["leader"] == 0 for p in range(4)), timeout=20,
             what="auto rebalance (every 300 s simulated)")
    assert all(state(zk, "r", p)["isr"] == [1, 0] for p in range(4))
    assert get_json(zk, "/admin/preferred_replica_election") is None
