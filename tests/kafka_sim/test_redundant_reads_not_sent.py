"""Reads the emulator no longer sends, and what still reaches ZooKeeper (issue 38, rehearsal speed).

* The brokers of one emulator share their reads of ``/config/changes`` children
  (kafka_sim/config_notifications.NotificationReads): one read per notification, not one per
  broker; every broker still processes it; a child the emulator deletes is forgotten.
* A data watch an engine event already set on a state znode is not set again before an emulator
  write fires it (kafka_sim/zk_io.EventReads.needs_watch); after such a write it is set again, and
  a write by another session still fires it.

Requests are counted on the emulator's real kazoo clients (their ``_call`` wrapped to count, then
passed on): nothing is mocked.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter

from kafka_zk.codecs import TopicPartition
from tests.kafka_sim.zk_read import wait_for

TP = TopicPartition("t", 0)
STATE = "/brokers/topics/t/partitions/0/state"


def _count_requests(client, counter: Counter) -> None:
    """Count (request type, path, with a watch) of every request ``client`` sends."""
    real = client._call

    def counted(request, async_object):
        counter[(type(request).__name__, getattr(request, "path", ""), getattr(request, "watcher", None) is not None)] += 1
        return real(request, async_object)
    client._call = counted


def _gets(counter: Counter, path: str, watched: bool | None = None) -> int:
    return sum(n for (kind, p, w), n in counter.items()
               if kind == "GetData" and p.endswith(path) and (watched is None or w == watched))


def test_every_broker_processes_a_notification_the_emulator_read_once(make_cluster, zk):
    cluster = make_cluster(brokers={0: "a", 1: "b", 2: "a", 3: "b"})
    cluster.create_topic("t", {0: [0, 1, 2]})
    cluster.wait_idle(30)
    eng = cluster._engine
    counter: Counter = Counter()
    for broker in eng.brokers.values():
        _count_requests(broker.client, counter)
    zk.ensure_path("/config/topics/t")
    zk.set("/config/topics/t", json.dumps({"version": 1, "config": {
        "leader.replication.throttled.replicas": "0:0", "follower.replication.throttled.replicas": "0:1"}}).encode())
    path = zk.create("/config/changes/config_change_", b'{"version":2,"entity_path":"topics/t"}', sequence=True)
    seq = int(path.rsplit("_", 1)[1])
    wait_for(lambda: all(b.last_config_seq >= seq for b in eng.brokers.values()),
             what="every broker processed the notification")
    cluster.wait_idle(30)
    name = path.rsplit("/", 1)[1]
    assert _gets(counter, name) == 1, counter
    assert any(e.kind == "throttle_lists" and e.topic == "t" for e in cluster.history())
    assert eng.notification_reads.get(path) is not None


def test_a_notification_the_emulator_deletes_is_read_from_zookeeper_again(make_cluster):
    cluster = make_cluster()
    eng = cluster._engine
    reads = eng.notification_reads
    reads.put("/config/changes/config_change_0000000007", b"{}", 1)
    eng.journal.add("broker-0", "delete", "/config/changes/config_change_0000000007", None)
    assert reads.get("/config/changes/config_change_0000000007") is None


def _engine(make_cluster):
    cluster = make_cluster(brokers={0: "a", 1: "b", 2: "c"})
    cluster.create_topic("t", {0: [0, 1, 2]})
    cluster.wait_idle(30)
    return cluster._engine


def test_a_watch_set_in_an_event_is_set_again_only_after_a_write_fires_it(make_cluster, zk):
    eng = _engine(make_cluster)
    counter: Counter = Counter()
    _count_requests(eng.controller.zk, counter)
    fired: list[str] = []
    lock = threading.Lock()

    def watch(event) -> None:
        with lock:
            fired.append(event.type)

    def event() -> tuple[int, int, int]:
        ctrl = eng.controller
        eng.reads.clear()                                # as the engine does before each event
        ctrl.read_state(TP, watch=watch)                 # sets the watch
        ctrl.read_state(TP, watch=watch)                 # already set: not sent
        after_two = _gets(counter, STATE, watched=True)
        ctrl.update_state(TP, lambda st: (st.leader, st.isr))    # the emulator's write fires it
        ctrl.read_state(TP, watch=watch)                 # so it is set again
        return after_two, _gets(counter, STATE, watched=True), len(fired)

    after_two, after_write, _ = eng.call(event)
    assert after_two == 1 and after_write == 2
    wait_for(lambda: len(fired) == 1, what="the emulator's own write fired the watch")
    data, stat = zk.get(STATE)
    zk.set(STATE, data, version=stat.version)            # another session's write fires the re-set watch
    wait_for(lambda: len(fired) == 2, what="the watch set again fires on another session's write")
    time.sleep(0.2)
    assert fired == ["CHANGED", "CHANGED"]


def test_a_new_event_sets_the_watch_again(make_cluster):
    eng = _engine(make_cluster)
    counter: Counter = Counter()
    _count_requests(eng.controller.zk, counter)

    def watch(_event) -> None:
        return None

    def read_twice_in_two_events() -> int:
        eng.reads.clear()
        eng.controller.read_state(TP, watch=watch)
        eng.reads.clear()                                # the next event
        eng.controller.read_state(TP, watch=watch)
        return _gets(counter, STATE, watched=True)

    assert eng.call(read_twice_in_two_events) == 2
