"""Throttles (apply/restore exactly), reassignment, preferred election, deletion on a real ZooKeeper."""

import json

import pytest

from kafka_zk.admin.deletion import deletion_status, mark_for_deletion
from kafka_zk.admin.election import (election_batches, preferred_election_candidates,
                                     submit_preferred_election)
from kafka_zk.admin.reassignment import (classify_live_reassignment, reassignment_status, replace_reassignment,
                                         submit_reassignment, targets_from_file_entries, verify_text,
                                         verify_text_2_4)
from kafka_zk.admin.throttles import ThrottleRecord, apply_throttles, remove_throttles, throttles_left
from kafka_zk.codecs import (PreferredElectionRequest, ReassignmentEntry, ReassignmentFileEntry,
                             ReassignmentRequest, TopicPartition as TP)
from kafka_zk.errors import (BrokerNotAvailable, ElectionInProgress, InvalidInput, ReassignmentInProgress,
                             TopicNotFound)
from kafka_zk.snapshot import read_snapshot
from kafka_zk.throttle_lists import throttled_brokers, throttled_replicas
from kafka_zk.writer import ZkWriter
from kafka_zk.authority import PersonAtKeyboard
from tests.zk_helpers import read_json, register_brokers, tree

KEYBOARD = PersonAtKeyboard("the test")   # these tests stand for a person at the keyboard


def state(leader, isr):
    return json.dumps({"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": 0,
                       "isr": isr}).encode()


@pytest.fixture
def cluster(zk):
    register_brokers(zk, {100: "a", 101: "b", 102: "c"})
    zk.create("/brokers/topics/t1", b'{"version":1,"partitions":{"0":[100,101],"1":[100,102]}}')
    zk.create("/config/topics/t1", b'{"version":1,"config":{"retention.ms":"5",'
              b'"leader.replication.throttled.replicas":"7:100"}}', makepath=True)
    zk.create("/brokers/topics/t2", b'{"version":1,"partitions":{"0":[101,102]}}')
    zk.create("/config/topics/t2", b'{"version":1,"config":{}}')
    zk.create("/config/brokers/100", b'{"version":1,"config":{"follower.replication.throttled.rate":"9"}}',
              makepath=True)
    for t, p, leader, isr in (("t1", 0, 101, [100, 101]), ("t1", 1, 100, [100, 102]), ("t2", 0, 102, [102])):
        zk.create(f"/brokers/topics/{t}/partitions/{p}/state", state(leader, isr), makepath=True)
    return zk


def test_throttles_apply_per_wave_and_restore_exactly(cluster, tmp_path):
    zk = cluster
    original = tree(zk)
    current = read_snapshot(zk).assignment()
    wave1 = {TP("t1", 0): (101, 102)}
    wave2 = {TP("t2", 0): (100, 102)}
    w = ZkWriter(zk, authority=KEYBOARD)
    rec = apply_throttles(w, throttled_replicas(current, wave1).values(), throttled_brokers(current, wave1), 1000)
    assert read_json(zk, "/config/topics/t1")["config"] == {
        "retention.ms": "5", "leader.replication.throttled.replicas": "0:100,0:101,7:100",
        "follower.replication.throttled.replicas": "0:102"}
    for b in (100, 101, 102):
        cfg = read_json(zk, f"/config/brokers/{b}")["config"]
        assert cfg["leader.replication.throttled.rate"] == "1000" == cfg["follower.replication.throttled.rate"]
    rec.save(tmp_path / "throttles.json")
    rec = ThrottleRecord.load(tmp_path / "throttles.json")
    rec = apply_throttles(w, throttled_replicas(current, wave2).values(), throttled_brokers(current, wave2), 2000,
                          record=rec)
    assert rec.broker("100").before == {"leader.replication.throttled.rate": None,
                                        "follower.replication.throttled.rate": "9"}
    assert read_json(zk, "/config/topics/t2")["config"] == {
        "leader.replication.throttled.replicas": "0:101,0:102",
        "follower.replication.throttled.replicas": "0:100"}
    # a user edits t1's leader list during the run: their pair survives, ours go
    w.write_config("topics", "t1", {**read_json(zk, "/config/topics/t1")["config"],
                                    "leader.replication.throttled.replicas": "0:100,0:101,7:100,8:8"})
    assert throttles_left(zk, rec)
    remove_throttles(w, rec)
    assert read_json(zk, "/config/topics/t1")["config"] == {
        "retention.ms": "5", "leader.replication.throttled.replicas": "7:100,8:8"}
    assert read_json(zk, "/config/topics/t2")["config"] == {}
    assert read_json(zk, "/config/brokers/100")["config"] == {"follower.replication.throttled.rate": "9"}
    assert read_json(zk, "/config/brokers/101")["config"] == {}
    assert throttles_left(zk, rec) == {}
    n = len(zk.get_children("/config/changes"))
    assert remove_throttles(w, rec) == []  # idempotent: nothing written
    assert len(zk.get_children("/config/changes")) == n
    changed = {p for p in tree(zk) if p not in original or tree(zk)[p] != original[p]}
    assert {p for p in changed if not p.startswith("/config/changes/")} == {
        "/config/brokers/101", "/config/brokers/102", "/config/topics/t1"}


def test_throttle_refusals_write_nothing(cluster):
    zk = cluster
    before = tree(zk)
    from kafka_zk.throttle_lists import TopicThrottle
    with pytest.raises(TopicNotFound):
        apply_throttles(ZkWriter(zk, authority=KEYBOARD), [TopicThrottle("nope", frozenset({(0, 1)}), frozenset())], [1], 10)
    with pytest.raises(InvalidInput, match="bytes per second"):
        apply_throttles(ZkWriter(zk, authority=KEYBOARD), [], [100], -3)
    assert tree(zk) == before


def test_reassignment_submit_status_and_classification(cluster):
    zk = cluster
    snap = read_snapshot(zk)
    targets = {TP("t1", 0): (101, 102), TP("t2", 0): (102, 101)}
    for bad, err, msg in [
        ({}, InvalidInput, "Partition reassignment list cannot be empty"),
        ({TP("t1", 0): ()}, InvalidInput, "Partition replica list cannot be empty"),
        ({TP("t1", 0): (101, 101)}, InvalidInput, "may not contain duplicate entries: t1-0 contains 101, 101"),
        ({TP("t1", 5): (101,)}, InvalidInput, "non-existent partitions: t1-5"),
        ({TP("t1", 0): (101, 9)}, BrokerNotAvailable, "non-existent brokerIDs: 9"),
    ]:
        with pytest.raises(err, match=msg):
            submit_reassignment(ZkWriter(zk, authority=KEYBOARD), snap, bad)
    with pytest.raises(InvalidInput, match="duplicate topic partitions: t1-0"):
        targets_from_file_entries([ReassignmentFileEntry("t1", 0, (1,)), ReassignmentFileEntry("t1", 0, (2,))])
    with pytest.raises(InvalidInput, match="log_dirs"):
        targets_from_file_entries([ReassignmentFileEntry("t1", 0, (1,), ("/data",))])
    assert "/admin" not in tree(zk) or "/admin/reassign_partitions" not in tree(zk)

    req = submit_reassignment(ZkWriter(zk, authority=KEYBOARD), snap, targets)
    assert read_json(zk, "/admin/reassign_partitions") == {"version": 1, "partitions": [
        {"topic": "t1", "partition": 0, "replicas": [101, 102]},
        {"topic": "t2", "partition": 0, "replicas": [102, 101]}]}
    with pytest.raises(ReassignmentInProgress):
        submit_reassignment(ZkWriter(zk, authority=KEYBOARD), snap, targets)
    live = read_snapshot(zk)
    assert classify_live_reassignment(live.reassignment, targets) == "ours"
    assert classify_live_reassignment(ReassignmentRequest((req.entries[1],)), targets) == "ours"
    assert classify_live_reassignment(ReassignmentRequest((ReassignmentEntry("t2", 0, (101, 102)),)),
                                      targets) == "foreign"
    assert classify_live_reassignment(None, targets) == "none"
    status = reassignment_status(live, targets)
    assert status.count("in_progress") == 2 and not status.done
    # the controller finishes t1-0 and leaves t2-0 with another order, then deletes the node
    zk.set("/brokers/topics/t1", b'{"version":1,"partitions":{"0":[101,102],"1":[100,102]}}')
    zk.delete("/admin/reassign_partitions")
    status = reassignment_status(read_snapshot(zk), targets)
    assert status.done and not status.all_complete
    assert verify_text(status, zookeeper_warning=False) == [
        "Status of partition reassignment:",
        "Reassignment of partition t1-0 is complete.",
        "There is no active reassignment of partition t2-0, but replica set is 101,102 rather than 102,101."]
    assert verify_text_2_4(status) == [          # Kafka 2.4.1's verifyAssignment wording
        "Status of partition reassignment: ",
        "Reassignment of partition t1-0 completed successfully",
        "Reassignment of partition t2-0 failed"]


def test_replace_reassignment_rewrites_the_pending_node_and_refuses_empty_targets(cluster):
    zk = cluster
    submit_reassignment(ZkWriter(zk, authority=KEYBOARD), read_snapshot(zk), {TP("t1", 0): (101, 102)})
    before = tree(zk)
    for bad in ({}, {TP("t1", 0): ()}):
        with pytest.raises(InvalidInput, match="needs at least one partition and a replica list"):
            replace_reassignment(ZkWriter(zk, authority=KEYBOARD), read_snapshot(zk), bad)
    assert tree(zk) == before
    # a rewrite may keep a pending entry on a broker that is gone (9): the other entries stay as they are
    replace_reassignment(ZkWriter(zk, authority=KEYBOARD), read_snapshot(zk), {TP("t1", 0): (101, 9),
                                                                                TP("t2", 0): (100, 101)})
    assert read_json(zk, "/admin/reassign_partitions")["partitions"] == [
        {"topic": "t1", "partition": 0, "replicas": [101, 9]},
        {"topic": "t2", "partition": 0, "replicas": [100, 101]}]
    zk.delete("/admin/reassign_partitions")            # none pending: it only creates
    replace_reassignment(ZkWriter(zk, authority=KEYBOARD), read_snapshot(zk), {TP("t2", 0): (102,)})
    assert read_json(zk, "/admin/reassign_partitions")["partitions"] == [
        {"topic": "t2", "partition": 0, "replicas": [102]}]


def test_preferred_election(cluster):
    zk = cluster
    snap = read_snapshot(zk)
    eligible, rest = preferred_election_candidates(snap)
    assert eligible == (TP("t1", 0),)
    assert {(n.tp, n.reason) for n in rest} == {
        (TP("t1", 1), "preferred replica 100 is already the leader"),
        (TP("t2", 0), "preferred replica 101 is not in the ISR")}
    _, rest = preferred_election_candidates(snap, [TP("zz", 0)])
    assert rest[0].reason == "partition does not exist"
    with pytest.raises(InvalidInput, match="duplicate partitions: t1-0"):
        submit_preferred_election(ZkWriter(zk, authority=KEYBOARD), snap, [TP("t1", 0), TP("t1", 0)])
    sub = submit_preferred_election(ZkWriter(zk, authority=KEYBOARD), snap, [TP("t1", 0), TP("zz", 3)])
    assert sub.submitted == (TP("t1", 0),) and sub.skipped == (TP("zz", 3),)
    assert read_json(zk, "/admin/preferred_replica_election") == {
        "version": 1, "partitions": [{"topic": "t1", "partition": 0}]}
    with pytest.raises(ElectionInProgress, match="currently in progress for t1-0"):
        submit_preferred_election(ZkWriter(zk, authority=KEYBOARD), read_snapshot(zk), [TP("t1", 0)])


def test_election_batches_always_fit():
    tps = [TP("x" * (i % 200 + 1), i) for i in range(30000)]
    batches = election_batches(tps, max_bytes=100_000)
    assert [tp for b in batches for tp in b] == tps
    assert all(len(PreferredElectionRequest(b).encode()) <= 100_000 for b in batches)
    assert len(batches) > 1
    assert [len(b) for b in election_batches(tps[:10], max_partitions=4)] == [4, 4, 2]


def test_deletion_batch_and_status(cluster):
    zk = cluster
    snap = read_snapshot(zk)
    before = tree(zk)
    with pytest.raises(TopicNotFound, match="nope"):
        mark_for_deletion(ZkWriter(zk, authority=KEYBOARD), snap, ["t1", "nope"])
    assert tree(zk) == before
    assert mark_for_deletion(ZkWriter(zk, authority=KEYBOARD), snap, ["t1", "t2"]) == {"t1": "marked", "t2": "marked"}
    st = deletion_status(zk, ["t1", "t2", "gone"])
    assert st["t1"].state == "pending" and st["gone"].state == "deleted"
    # the controller finishes t1 in Kafka's order; for t2 the marker vanishes (delete.topic.enable=false)
    for p in ("/brokers/topics/t1/partitions/0/state", "/brokers/topics/t1/partitions/0",
              "/brokers/topics/t1/partitions/1/state", "/brokers/topics/t1/partitions/1",
              "/brokers/topics/t1/partitions", "/brokers/topics/t1", "/config/topics/t1",
              "/admin/delete_topics/t1", "/admin/delete_topics/t2"):
        zk.delete(p)
    st = deletion_status(zk, ["t1", "t2"])
    assert st["t1"].state == "deleted" and st["t2"].state == "not_deleted"
