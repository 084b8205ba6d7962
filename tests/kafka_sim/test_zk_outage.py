"""The controller after its ZooKeeper connection comes back (issue 27 item 1).

kazoo drops every watch when a connection is lost; the Java client Kafka uses sets them again on
reconnection (SetWatches) and fires those whose nodes changed meanwhile, and a controller whose
session expired is elected again and reads everything (onControllerFailover). So admin nodes
written while the emulator could not see ZooKeeper — a cut shorter than the session timeout, a
ZooKeeper server restart, a cut that expires every session — are acted on once it can again, and
the watches work for the nodes written after. Cuts are made by a loopback forwarder in front of
the real server (tests/campaign/blip_proxy.py) or by restarting the real server itself; the
admin nodes are written with plain kazoo straight to the server.
"""

from __future__ import annotations

import json
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
from kazoo.exceptions import ConnectionLoss

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_sim.timeline import move_spans
from kafka_sim.zookeeper_server import EmbeddedZooKeeper
from tests.campaign.blip_proxy import BlipProxy
from tests.kafka_sim.cut_write import caught_up, cut_first_write, wait_caught_up
from tests.kafka_sim.zk_read import create_json, state, topic, wait_for

BROKERS = {1: "a", 2: "b", 3: "c"}


def _cluster(connect: str, session_timeout: float = 10.0) -> EmulatedCluster:
    return EmulatedCluster(connect, ClusterSpec(brokers=BROKERS, speed=50.0, seed=3),
                           session_timeout=session_timeout).start()


def _cut_and_write(zk, proxy: BlipProxy, seconds: float, cluster: EmulatedCluster) -> None:
    """Cut the emulator off for ``seconds`` and, while it is cut off, ask for a reassignment, a
    preferred election and a deletion, as Kafka's tools would."""
    proxy.blip(seconds)                  # the emulator's connections are closed when it returns
    create_json(zk, "/admin/reassign_partitions",
                {"version": 1, "partitions": [{"topic": "moving", "partition": 0, "replicas": [2, 3]}]})
    create_json(zk, "/admin/preferred_replica_election",
                {"version": 1, "partitions": [{"topic": "led", "partition": 0}]})
    zk.create("/admin/delete_topics/doomed", b"", makepath=True)


def _setup_topics(cluster: EmulatedCluster, zk) -> None:
    cluster.create_topics({"moving": ({0: [1, 2]}, {0: 1000}, None), "led": ({0: [2, 1]}, None, None),
                           "doomed": ({0: [1, 3]}, None, None)})
    cluster.kill_broker(2)                           # "led" is led by 1, its preferred replica is 2
    wait_for(lambda: state(zk, "led", 0)["leader"] == 1, what="leadership moved to 1")
    cluster.restart_broker(2)
    wait_for(lambda: 2 in state(zk, "led", 0)["isr"], what="2 back in the ISR")


def _expired(cluster: EmulatedCluster) -> bool:
    return any(e.kind == "session_expired" for e in cluster.history())


def _acted_on(zk, cluster: EmulatedCluster, elected: bool | None = True) -> None:
    """Each of the three nodes was consumed and did what it asks (the election only moves the
    leader if its preferred replica was registered and in the ISR when the node was read:
    ``elected=False`` after every broker re-registered one by one)."""
    wait_for(lambda: zk.exists("/admin/reassign_partitions") is None
             and topic(zk, "moving")["partitions"]["0"] == [2, 3], timeout=60, what="the reassignment")
    wait_for(lambda: zk.exists("/admin/preferred_replica_election") is None, timeout=60, what="the election")
    if elected is None:                  # unless a session expired meanwhile (then brokers re-registered)
        elected = not _expired(cluster)
    seen = [f"{e.time:.1f} {e.kind} {e.topic}-{e.partition} b{e.broker} {e.detail}" for e in cluster.history()[-40:]]
    assert state(zk, "led", 0)["leader"] == 2 or not elected, "\n".join(seen)
    wait_for(lambda: zk.exists("/brokers/topics/doomed") is None and zk.get_children("/admin/delete_topics") == [],
             timeout=60, what="the deletion")


def _watches_still_work(zk, cluster: EmulatedCluster) -> None:
    """Nodes written after the cut are acted on too (the watches were set again)."""
    create_json(zk, "/admin/reassign_partitions",
                {"version": 1, "partitions": [{"topic": "moving", "partition": 0, "replicas": [3, 1]}]})
    wait_for(lambda: zk.exists("/admin/reassign_partitions") is None
             and topic(zk, "moving")["partitions"]["0"] == [3, 1], timeout=60, what="a later reassignment")
    create_json(zk, "/admin/preferred_replica_election",
                {"version": 1, "partitions": [{"topic": "moving", "partition": 0}]})
    wait_for(lambda: zk.exists("/admin/preferred_replica_election") is None, timeout=60, what="a later election")


def test_admin_nodes_written_during_a_short_cut_are_acted_on_when_the_session_answers_again(
        zk_server, zk_chroot, zk) -> None:
    proxy = BlipProxy((zk_server.host, zk_server.port))
    cluster = _cluster(proxy.hosts + zk_chroot)
    try:
        _setup_topics(cluster, zk)
        controller = cluster.controller_id()
        epoch = int(zk.get("/controller_epoch")[0])
        _cut_and_write(zk, proxy, 3.0, cluster)
        _acted_on(zk, cluster)
        # the same sessions answered again: no failover, the controller caught up by itself
        assert cluster.controller_id() == controller and int(zk.get("/controller_epoch")[0]) == epoch
        resync = [e for e in cluster.history() if e.kind == "controller_resync"]
        assert resync and resync[0].broker == controller, [e for e in cluster.history() if "controller" in e.kind]
        assert "reassign_partitions" in resync[0].detail and "preferred_replica_election" in resync[0].detail
        _watches_still_work(zk, cluster)
    finally:
        cluster.stop()
        proxy.close()


def test_a_cut_longer_than_the_session_timeout_ends_in_a_failover_that_reads_the_admin_nodes(
        zk_server, zk_chroot, zk) -> None:
    proxy = BlipProxy((zk_server.host, zk_server.port))
    cluster = _cluster(proxy.hosts + zk_chroot, session_timeout=2.0)
    try:
        _setup_topics(cluster, zk)
        epoch = int(zk.get("/controller_epoch")[0])
        _cut_and_write(zk, proxy, 6.0, cluster)      # three session timeouts: every session expires
        _acted_on(zk, cluster, elected=False)
        assert int(zk.get("/controller_epoch")[0]) > epoch
        assert sum(e.kind == "session_expired" for e in cluster.history()) >= len(BROKERS)
        _watches_still_work(zk, cluster)
    finally:
        cluster.stop()
        proxy.close()


def test_a_zookeeper_server_restart_leaves_a_controller_that_still_acts_on_admin_nodes(tmp_path: Path) -> None:
    from kazoo.client import KazooClient

    with ExitStack() as cleanup:
        server = EmbeddedZooKeeper(data_dir=str(tmp_path / "zk")).start()
        cleanup.callback(server.stop)
        cluster = _cluster(server.connect_string)
        cleanup.callback(cluster.stop)
        zk = KazooClient(hosts=server.connect_string, timeout=10)
        zk.start(timeout=10)
        cleanup.callback(zk.close)
        cleanup.callback(zk.stop)
        _setup_topics(cluster, zk)
        epoch = int(zk.get("/controller_epoch")[0])
        server.stop()
        time.sleep(2.0)                  # the outage itself: a fault's length, not a wait on a result
        server.start()
        wait_for(lambda: zk.connected, timeout=30, what="the test's own session back")
        create_json(zk, "/admin/reassign_partitions",
                    {"version": 1, "partitions": [{"topic": "moving", "partition": 0, "replicas": [2, 3]}]})
        create_json(zk, "/admin/preferred_replica_election",
                    {"version": 1, "partitions": [{"topic": "led", "partition": 0}]})
        zk.create("/admin/delete_topics/doomed", b"", makepath=True)
        _acted_on(zk, cluster, elected=None)
        # sessions survive a server restart (restored from its snapshot and log): no failover — unless the
        # restart took longer than a session timeout to answer again (seen under heavy load), which is
        # ZooKeeper's rule, not the emulator's choice; the admin nodes are acted on either way
        if not _expired(cluster):
            assert int(zk.get("/controller_epoch")[0]) == epoch
        assert json.loads(zk.get("/controller")[0])["brokerid"] == cluster.controller_id()


#: the controller's writes of one move, each cut off in flight by one test: the topic znode's
#: RS/ARS/RRS (U), the topic znode := target when the move completes (B4), the emptied node's delete (B5)
MOVE_WRITES = {"start": ("set", "/brokers/topics/moving", 0), "complete": ("set", "/brokers/topics/moving", 1),
               "node_delete": ("delete", "/admin/reassign_partitions", 0)}


@pytest.mark.parametrize("cut", list(MOVE_WRITES))
@pytest.mark.parametrize("lost", ["request", "reply"])
def test_a_connection_lost_under_a_controller_write_of_a_move_runs_the_step_again_not_drops_it(
        cut: str, lost: str, zk_server, zk_chroot, zk, monkeypatch: pytest.MonkeyPatch) -> None:
    """One controller write of a move is cut off in flight: ZooKeeper never sees it (or does it
    and its reply is lost) and kazoo answers ConnectionLoss. Kafka's controller would send it
    again on the same session; the emulator's runs the event again when the session answers,
    from the partition as ZooKeeper has it. Seen in the fault campaign (seed 269, zk_outage_6, the "start" write): the controller took
    the cut for this partition's failure, removed its entry from the node and kept the new
    assignment in memory only — the move never finished and the adding replica never started."""
    kind, path, nth = MOVE_WRITES[cut]
    proxy = BlipProxy((zk_server.host, zk_server.port))
    cluster = _cluster(proxy.hosts + zk_chroot)
    try:
        cluster.create_topics({"moving": ({0: [1, 2]}, {0: 1000}, None)})
        wait_for(lambda: state(zk, "moving", 0) and sorted(state(zk, "moving", 0)["isr"]) == [1, 2],
                 what="the topic's ISR")
        before = caught_up(cluster)
        seen = cut_first_write(monkeypatch, proxy, kind, path, nth, lost=lost)
        create_json(zk, "/admin/reassign_partitions",
                    {"version": 1, "partitions": [{"topic": "moving", "partition": 0, "replicas": [2, 3]}]})
        wait_for(lambda: seen, timeout=60, what=f"the controller's {kind} of {path}")
        assert isinstance(seen[0], ConnectionLoss), f"the cut did not land on the write: {seen[0]!r}"
        wait_caught_up(cluster, before)
        wait_for(lambda: zk.exists("/admin/reassign_partitions") is None
                 and topic(zk, "moving")["partitions"]["0"] == [2, 3], timeout=60, what="the move to finish")
        assert sorted(state(zk, "moving", 0)["isr"]) == [2, 3]
        # one move in the timeline, closed at its first completion (a re-run of B5 finds a no-op move)
        done = [e.time for e in cluster.history() if e.kind == "reassign_done"]
        assert list(move_spans(cluster.history())) == [("moving", 0)]
        assert move_spans(cluster.history())[("moving", 0)][1] == done[0]
    finally:
        cluster.stop()
        proxy.close()
