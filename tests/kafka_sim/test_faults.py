"""Broker failure and restart (docs/zookeeper.md §2.5, §2.6), controller failover, session expiry, stalls."""

from __future__ import annotations

import pytest

from tests.kafka_sim.zk_read import (create_json, isr_change_consumed, state, topic, wait_for,
                                     writes_to)

MB = 1_000_000


def test_broker_kill_and_restart(make_cluster, zk):
    """f: leader fails over to the first live ISR member; follower dropped; sole replica keeps
    [x] with leader -1; on restart the sole replica is elected, followers rejoin via leaders."""
    cluster = make_cluster()
    cluster.move_controller(1)
    ce = int(zk.get("/controller_epoch")[0])
    cluster.create_topic("tf", {0: [0, 2, 1], 1: [2, 0], 2: [0], 3: [1, 2]})
    cluster.kill_broker(0)
    # the controller writes one partition at a time: wait for the last of the three changes, not the first
    wait_for(lambda: zk.exists("/brokers/ids/0") is None and state(zk, "tf", 1)["isr"] == [2]
             and state(zk, "tf", 0)["leader"] == 2 and state(zk, "tf", 2)["leader"] == -1, what="failover")
    assert state(zk, "tf", 0) == {"controller_epoch": ce, "leader": 2, "version": 1, "leader_epoch": 1,
                                  "isr": [2, 1]}
    assert state(zk, "tf", 2) == {"controller_epoch": ce, "leader": -1, "version": 1, "leader_epoch": 1,
                                  "isr": [0]}
    assert state(zk, "tf", 3)["leader_epoch"] == 0
    old = zk.exists("/brokers/ids/1").czxid
    cluster.restart_broker(0)
    wait_for(lambda: state(zk, "tf", 0)["isr"] == [2, 1, 0] and state(zk, "tf", 1)["isr"] == [2, 0]
             and state(zk, "tf", 2)["leader"] == 0, what="rejoin")
    assert zk.exists("/brokers/ids/0").czxid > old
    assert state(zk, "tf", 2) == {"controller_epoch": ce, "leader": 0, "version": 1, "leader_epoch": 2,
                                  "isr": [0]}
    assert state(zk, "tf", 0)["leader_epoch"] == 1 and state(zk, "tf", 1)["leader_epoch"] == 1
    wait_for(lambda: isr_change_consumed(cluster.journal(), "tf", 0), what="ISR notification consumed")
    assert zk.get_children("/isr_change_notification") == []
    rejoin = [w for w in cluster.journal() if w.path.endswith("tf/partitions/0/state")][-1]
    assert rejoin.writer == "broker 2"                      # written by the leader, not the controller


def test_controller_failover_mid_reassignment(make_cluster, zk):
    cluster = make_cluster(brokers={0: "a", 1: "b", 2: "a", 3: "b", 4: "c"}, speed=100.0, network_rate=1 * MB)
    first = cluster.move_controller(4)
    cluster.create_topic("t", {0: [0, 1]}, sizes={0: 1000 * MB})
    create_json(zk, "/admin/reassign_partitions",
                {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [2, 3]}]})
    wait_for(lambda: state(zk, "t", 0)["leader_epoch"] == 1, what="phase A")
    zk.delete("/admin/reassign_partitions")        # the state lives in the topic znode (2.4+)
    cluster.kill_broker(first)                      # the controller's session ends
    wait_for(lambda: cluster.controller_id() not in (-1, first), what="new controller")
    wait_for(lambda: state(zk, "t", 0)["leader_epoch"] == 2, what="phase A again after failover")
    cluster.set_partition_size("t", 0, 1)           # let the copy finish now
    wait_for(lambda: topic(zk, "t")["partitions"]["0"] == [2, 3], timeout=30, what="completion")
    assert state(zk, "t", 0)["leader_epoch"] == 5 and state(zk, "t", 0)["isr"] == [2, 3]
    assert topic(zk, "t")["adding_replicas"] == {}


def test_killed_target_broker_stalls_the_move_until_restart(make_cluster, zk):
    cluster = make_cluster(speed=200.0, network_rate=10 * MB)
    cluster.move_controller(0)
    cluster.create_topic("t", {0: [0, 1]}, sizes={0: 2000 * MB})
    create_json(zk, "/admin/reassign_partitions",
                {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [0, 3]}]})
    wait_for(lambda: state(zk, "t", 0)["leader_epoch"] == 1, what="phase A")
    wait_for(lambda: cluster.now() > 50, what="some copying")
    cluster.kill_broker(3)
    copied = [e for e in cluster.history() if e.kind == "caught_up"]
    assert not copied
    assert not cluster.wait_idle(1.0)
    assert topic(zk, "t")["adding_replicas"] == {"0": [3]}
    epoch = state(zk, "t", 0)["leader_epoch"]
    cluster.restart_broker(3)
    wait_for(lambda: topic(zk, "t")["partitions"]["0"] == [0, 3], timeout=30, what="completion after restart")
    states = writes_to(cluster.journal(), "/brokers/topics/t/partitions/0/state")
    # the returning target broker re-runs the reassignment: one more bump (phase A again)
    assert states[-1]["leader_epoch"] == epoch + 1 + 1 + 1
    caught = [e for e in cluster.history() if e.kind == "caught_up"][0]
    # 2000 MB at 10 MB/s = 200 s of copying, split by the time broker 3 was down
    started = [e for e in cluster.history() if e.kind == "reassign_update"][0].time
    killed = [e for e in cluster.history() if e.kind == "broker_killed"][0].time
    restarted = [e for e in cluster.history() if e.kind == "broker_started"][0].time
    assert caught.time - started - (restarted - killed) == pytest.approx(200.0, rel=0.05)


def test_session_expiry_bounces_the_broker(make_cluster, zk):
    cluster = make_cluster()
    cluster.move_controller(0)
    cluster.create_topic("t", {0: [1, 2], 1: [2, 1]})
    czxid = zk.exists("/brokers/ids/2").czxid
    cluster.expire_session(2)
    wait_for(lambda: zk.exists("/brokers/ids/2") and zk.exists("/brokers/ids/2").czxid != czxid,
             what="re-registration with a new session")
    wait_for(lambda: state(zk, "t", 0)["isr"] == [1, 2] and state(zk, "t", 1)["leader"] == 1
             and sorted(state(zk, "t", 1)["isr"]) == [1, 2], what="bounce handled")
    assert state(zk, "t", 1)["leader_epoch"] >= 1         # leadership moved away from 2
    assert zk.exists("/brokers/ids/2").version == 1


def test_stalled_follower_leaves_and_rejoins_the_isr(make_cluster, zk):
    cluster = make_cluster(speed=100.0)
    cluster.create_topic("t", {0: [0, 1, 2]}, sizes={0: 10 * MB})
    cluster.stall_replica("t", 0, 2)
    # the engine records the shrink just after its write commits: wait for the record too (load ~20)
    wait_for(lambda: state(zk, "t", 0)["isr"] == [0, 1] and any(e.kind == "isr_shrink" for e in cluster.history()),
             what="lagging follower dropped by its leader")
    assert state(zk, "t", 0)["leader_epoch"] == 0                     # leader-driven: no bump
    shrink = [e for e in cluster.history() if e.kind == "isr_shrink"][0].time
    assert shrink - [e for e in cluster.history() if e.kind == "controller_elected"][0].time >= 10.0
    cluster.stall_replica("t", 0, 2, stalled=False)
    wait_for(lambda: state(zk, "t", 0)["isr"] == [0, 1, 2], what="rejoin after the stall")


def test_slow_broker_limits_its_catch_up(make_cluster, zk):
    cluster = make_cluster(speed=200.0, network_rate=100 * MB)
    cluster.create_topic("t", {0: [0]}, sizes={0: 500 * MB})
    cluster.slow_broker(1, 5 * MB)
    create_json(zk, "/admin/reassign_partitions",
                {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1]}]})
    wait_for(lambda: zk.exists("/admin/reassign_partitions") is None, timeout=30, what="done")
    started = [e for e in cluster.history() if e.kind == "reassign_update"][0].time
    caught = [e for e in cluster.history() if e.kind == "caught_up"][0].time
    assert caught - started == pytest.approx(100.0, rel=0.05)


def test_sigkill_registration_lingers_until_the_session_expires(make_cluster, zk):
    cluster = make_cluster(speed=20.0)
    cluster.move_controller(1)
    cluster.create_topic("t", {0: [0, 2]})
    killed = cluster.now()               # read before the kill: the clock runs on while kill_broker returns
    cluster.kill_broker(0, expire_after=8.0)
    assert zk.exists("/brokers/ids/0") is not None and state(zk, "t", 0)["leader"] == 0
    wait_for(lambda: zk.exists("/brokers/ids/0") is None, what="session expiry")
    assert cluster.now() - killed >= 8.0
    wait_for(lambda: state(zk, "t", 0)["leader"] == 2, what="failover after expiry")
    cluster.restart_broker(0)
    wait_for(lambda: state(zk, "t", 0)["isr"] == [2, 0], what="rejoin")
