"""Preferred election (docs/zookeeper.md §2.8) and topic deletion (§2.9), driven by plain kazoo writes."""

from __future__ import annotations

import time

from tests.kafka_sim.zk_read import create_json, isr_change_consumed, state, topic, wait_for, writes_to

ELECTION = "/admin/preferred_replica_election"


def _elect(zk, *tps) -> None:
    create_json(zk, ELECTION, {"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in tps]})
    wait_for(lambda: zk.exists(ELECTION) is None, what="election node deleted")


def test_preferred_election_cases(make_cluster, zk):
    """d: elected when live and in ISR; skipped when already leader; failed when down;
    nonexistent skipped; the node is always deleted."""
    cluster = make_cluster()
    cluster.move_controller(1)          # the recorded run's roles: x=0, y=2 stopped, controller 1
    ce = int(zk.get("/controller_epoch")[0])
    cluster.create_topic("td", {0: [0, 3], 1: [3, 0], 2: [2, 1], 3: [0, 1]})
    cluster.shutdown_broker(0)
    assert state(zk, "td", 0)["leader"] == 3 and state(zk, "td", 3) == {
        "controller_epoch": ce, "leader": 1, "version": 1, "leader_epoch": 1, "isr": [1]}
    assert state(zk, "td", 1) == {"controller_epoch": ce, "leader": 3, "version": 1, "leader_epoch": 1,
                                  "isr": [3]}
    cluster.restart_broker(0)
    wait_for(lambda: state(zk, "td", 0)["isr"] == [3, 0] and state(zk, "td", 3)["isr"] == [1, 0],
             what="broker 0 back in the ISRs (leader-driven, no epoch bump)")
    assert state(zk, "td", 0)["leader_epoch"] == 1
    # the controller learns the leader-driven ISR changes from /isr_change_notification
    wait_for(lambda: isr_change_consumed(cluster.journal(), "td", 0)
             and isr_change_consumed(cluster.journal(), "td", 3), what="ISR change notifications consumed")
    cluster.shutdown_broker(2)
    before = {p: state(zk, "td", p) for p in range(4)}
    _elect(zk, ("td", 0), ("td", 1), ("td", 2), ("td", 3), ("td", 9))
    assert state(zk, "td", 0) == {**before[0], "leader": 0, "leader_epoch": before[0]["leader_epoch"] + 1}
    assert state(zk, "td", 3) == {**before[3], "leader": 0, "leader_epoch": before[3]["leader_epoch"] + 1}
    assert state(zk, "td", 1) == before[1] and state(zk, "td", 2) == before[2]
    cluster.restart_broker(2)
    wait_for(lambda: state(zk, "td", 2)["isr"] == [1, 2], what="broker 2 back in td-2's ISR")
    wait_for(lambda: isr_change_consumed(cluster.journal(), "td", 2), what="td-2 ISR change consumed")
    _elect(zk, ("td", 2))
    assert state(zk, "td", 2)["leader"] == 2 and state(zk, "td", 2)["leader_epoch"] == 2


def test_deletion_enabled_and_nonexistent_marker(make_cluster, zk):
    """e-1: ISR shrink writes one broker at a time, then nodes deleted in order, marker last."""
    cluster = make_cluster()
    cluster.create_topic("te1", {0: [0, 1], 1: [1, 2], 2: [2, 3]}, config={"retention.ms": "1000000"})
    zk.create("/admin/delete_topics/te1")
    zk.create("/admin/delete_topics/nosuchtopic")
    wait_for(lambda: not zk.get_children("/admin/delete_topics"), what="markers deleted")
    assert zk.exists("/brokers/topics/te1") is None and zk.exists("/config/topics/te1") is None
    # the journal records a write just after ZooKeeper applied it: wait (bounded) for the last one
    wait_for(lambda: any(w.op == "delete" and w.path == "/admin/delete_topics/te1" for w in cluster.journal()),
             what="the marker's deletion journalled")
    j = cluster.journal()
    assert [s and (s["leader"], s["leader_epoch"], s["isr"]) for s in
            writes_to(j, "/brokers/topics/te1/partitions/0/state")[1:]] == [(-1, 1, [1]), (-1, 2, [1]), None]
    order = [w.path for w in j if w.op == "delete" and "te1" in w.path]
    base = "/brokers/topics/te1/partitions"
    assert order == [f"{base}/0/state", f"{base}/0", f"{base}/1/state", f"{base}/1", f"{base}/2/state",
                     f"{base}/2", base, "/brokers/topics/te1", "/config/topics/te1", "/admin/delete_topics/te1"]
    assert cluster.sizes() == {}


def test_deletion_disabled_drops_markers_and_keeps_the_topic(make_cluster, zk):
    make_cluster(delete_topic_enable=False)
    create_json(zk, "/config/topics/keep", {"version": 1, "config": {}})
    create_json(zk, "/brokers/topics/keep", {"version": 1, "partitions": {"0": [0, 1]}})
    wait_for(lambda: state(zk, "keep", 0), what="state")
    zk.create("/admin/delete_topics/keep")
    wait_for(lambda: zk.exists("/admin/delete_topics/keep") is None, what="marker deleted")
    assert topic(zk, "keep") is not None and state(zk, "keep", 0)["leader_epoch"] == 0


def test_deletion_waits_for_a_dead_replica(make_cluster, zk):
    """e-3: live replicas go offline at once, the topic waits for the dead broker, then goes."""
    cluster = make_cluster()
    cluster.create_topic("te3", {0: [0, 2], 1: [2, 1]})
    cluster.kill_broker(0)
    wait_for(lambda: state(zk, "te3", 0)["leader"] == 2, what="failover of te3-0")
    assert state(zk, "te3", 0) == {"controller_epoch": 1, "leader": 2, "version": 1, "leader_epoch": 1,
                                   "isr": [2]}
    zk.create("/admin/delete_topics/te3")
    wait_for(lambda: state(zk, "te3", 1)["leader"] == -1, what="offline replicas")
    time.sleep(0.3)
    assert state(zk, "te3", 0) == {"controller_epoch": 1, "leader": -1, "version": 1, "leader_epoch": 2,
                                   "isr": [2]}
    assert state(zk, "te3", 1) == {"controller_epoch": 1, "leader": -1, "version": 1, "leader_epoch": 2,
                                   "isr": [2]}
    # adding a partition while queued is reverted (written back in v2)
    zk.set("/brokers/topics/te3", b'{"version":1,"partitions":{"0":[0,2],"1":[2,1],"2":[1,2]}}')
    wait_for(lambda: topic(zk, "te3")["version"] == 2, what="rewrite-back")
    assert topic(zk, "te3") == {"version": 2, "partitions": {"0": [0, 2], "1": [2, 1]},
                                "adding_replicas": {}, "removing_replicas": {}}
    assert zk.exists("/admin/delete_topics/te3") is not None
    # while queued: a reassignment entry is an error (dropped, node deleted), an election skipped
    create_json(zk, "/admin/reassign_partitions",
                {"version": 1, "partitions": [{"topic": "te3", "partition": 1, "replicas": [1, 3]}]})
    wait_for(lambda: zk.exists("/admin/reassign_partitions") is None, what="erroneous entry dropped")
    assert topic(zk, "te3")["partitions"]["1"] == [2, 1]
    _elect(zk, ("te3", 1))
    assert state(zk, "te3", 1)["leader"] == -1 and state(zk, "te3", 1)["leader_epoch"] == 2
    cluster.restart_broker(0)
    wait_for(lambda: zk.exists("/admin/delete_topics/te3") is None, what="deletion completed")
    assert zk.exists("/brokers/topics/te3") is None
    assert len(writes_to(cluster.journal(), "/brokers/topics/te3/partitions/0/state")) == 4  # +delete


def test_deleting_a_topic_under_reassignment_is_not_deferred(make_cluster, zk):
    """e-2: the topic goes at once; its entry keeps the node until the controller changes."""
    cluster = make_cluster(speed=10.0)
    cluster.create_topic("te2", {0: [0]}, sizes={0: 10_000_000})
    for b in (0, 1):
        create_json(zk, f"/config/brokers/{b}", {"version": 1, "config": {
            "leader.replication.throttled.rate": "500000", "follower.replication.throttled.rate": "500000"}})
        zk.create("/config/changes/config_change_", f'{{"version":2,"entity_path":"brokers/{b}"}}'.encode(),
                  sequence=True)
    zk.set("/config/topics/te2", b'{"version":1,"config":{"leader.replication.throttled.replicas":"0:0",'
                                 b'"follower.replication.throttled.replicas":"0:1"}}')
    zk.create("/config/changes/config_change_", b'{"version":2,"entity_path":"topics/te2"}', sequence=True)
    create_json(zk, "/admin/reassign_partitions",
                {"version": 1, "partitions": [{"topic": "te2", "partition": 0, "replicas": [1]}]})
    wait_for(lambda: topic(zk, "te2")["version"] == 2, what="reassignment started")
    zk.create("/admin/delete_topics/te2")
    wait_for(lambda: zk.exists("/brokers/topics/te2") is None, timeout=5, what="topic deleted at once")
    states = writes_to(cluster.journal(), "/brokers/topics/te2/partitions/0/state")
    assert [(s["leader"], s["leader_epoch"], s["isr"]) for s in states[:-1]] == [
        (0, 0, [0]), (0, 1, [0]), (-1, 2, [0])]
    time.sleep(0.5)
    assert zk.exists("/admin/reassign_partitions") is not None
    cluster.move_controller()
    wait_for(lambda: zk.exists("/admin/reassign_partitions") is None, what="leftover node removed")
