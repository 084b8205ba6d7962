"""ZkWriter on a real ZooKeeper: validation, size limit, create-only admin nodes, audit, dry run."""

import json

import pytest

from kafka_zk.audit import AuditLog
from kafka_zk.errors import (ElectionInProgress, InvalidInput, InvalidPayload, NodeMissing,
                             ReassignmentInProgress, TopicExists, ZnodeTooLarge)
from kafka_zk.writer import PlannedWrite, ZkWriter
from kafka_zk.authority import PersonAtKeyboard
from tests.zk_helpers import read_json, tree

KEYBOARD = PersonAtKeyboard("the test")   # these tests stand for a person at the keyboard

REASSIGN = b'{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]}]}'


def test_create_set_delete_are_audited_with_before_and_after(zk, tmp_path):
    log = AuditLog(tmp_path / "audit.jsonl", run_id="r1", task="t1")
    w = ZkWriter(zk, log, actor="alice", authority=KEYBOARD)
    assert w.create("/brokers/topics/foo", b'{"version":1,"partitions":{"0":[1,2]}}') == "/brokers/topics/foo"
    w.set("/brokers/topics/foo", b'{"version":1,"partitions":{"0":[1,2],"1":[2,1]}}')
    with pytest.raises(InvalidInput, match="never delete topic znodes"):
        w.delete("/brokers/topics/foo")
    w.create("/config/topics/foo", b'{"version":1,"config":{"retention.ms":"1"}}')
    w.delete("/config/topics/foo")
    assert not zk.exists("/config/topics/foo") and zk.exists("/brokers/topics/foo")
    recs = AuditLog.read(tmp_path / "audit.jsonl")
    assert [(r.op, r.path) for r in recs] == [("create", "/brokers/topics/foo"), ("set", "/brokers/topics/foo"),
                                             ("create", "/config/topics/foo"), ("delete", "/config/topics/foo")]
    assert recs[1].before == {"version": 1, "partitions": {"0": [1, 2]}}
    assert recs[1].after["partitions"]["1"] == [2, 1]
    assert recs[3].after is None and recs[3].before == {"version": 1, "config": {"retention.ms": "1"}}
    assert all(r.actor == "alice" and r.run_id == "r1" and r.task == "t1" and not r.dry_run for r in recs)
    assert recs[0].time.endswith("Z")


def test_write_config_writes_the_node_then_one_v2_notification(zk):
    w = ZkWriter(zk, authority=KEYBOARD)
    note = w.write_config("brokers", "1", {"leader.replication.throttled.rate": "1000"})
    assert note.startswith("/config/changes/config_change_")
    assert read_json(zk, "/config/brokers/1") == {"version": 1, "config": {
        "leader.replication.throttled.rate": "1000"}}
    assert zk.get_children("/config/changes") == [note.rsplit("/", 1)[1]]
    assert read_json(zk, note) == {"version": 2, "entity_path": "brokers/1"}
    w.write_config("brokers", "1", {})
    assert read_json(zk, "/config/brokers/1") == {"version": 1, "config": {}}
    assert len(zk.get_children("/config/changes")) == 2


def test_admin_nodes_are_create_only(zk):
    w = ZkWriter(zk, authority=KEYBOARD)
    w.create("/admin/reassign_partitions", REASSIGN)
    with pytest.raises(ReassignmentInProgress, match="already in progress"):
        w.create("/admin/reassign_partitions", REASSIGN)
    with pytest.raises(InvalidInput, match="create-only"):
        w.set("/admin/reassign_partitions", REASSIGN)
    w.create("/admin/preferred_replica_election", b'{"version":1,"partitions":[]}')
    with pytest.raises(ElectionInProgress):
        w.create("/admin/preferred_replica_election", b'{"version":1,"partitions":[]}')
    assert w.create("/admin/delete_topics/foo", None) == "/admin/delete_topics/foo"
    n = len(w.planned)
    assert w.create("/admin/delete_topics/foo", None) == "/admin/delete_topics/foo"
    assert len(w.planned) == n  # already requested: nothing written
    w.create("/brokers/topics/foo", b'{"version":1,"partitions":{"0":[1]}}')
    with pytest.raises(TopicExists, match="Topic 'foo' already exists."):
        w.create("/brokers/topics/foo", b'{"version":1,"partitions":{"0":[1]}}')


@pytest.mark.parametrize("path,data,error,match", [
    ("/admin/reassign_partitions",
     b'{"version":1,"partitions":[{"topic":"f","partition":0,"replicas":[1],"log_dirs":["any"]}]}',
     InvalidInput, "log_dirs"),
    ("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"f","partition":0,"replicas":[1],'
     b'"foo":1}]}', InvalidPayload, "unrecognized field 'foo'"),
    ("/brokers/topics/foo", b'{"version":1}', InvalidPayload, "missing 'partitions'"),
    ("/brokers/topics/foo", b"not json", InvalidPayload, "not valid JSON"),
    ("/config/topics/foo", b'{"version":1,"config":{"a":1}}', InvalidPayload, "must be a string"),
    ("/admin/delete_topics/foo", b"x", InvalidInput, "without data"),
])
def test_bad_payloads_are_refused_before_anything_is_written(zk, tmp_path, path, data, error, match):
    before = tree(zk)
    log = AuditLog(tmp_path / "a.jsonl")
    with pytest.raises(error, match=match):
        ZkWriter(zk, log, authority=KEYBOARD).create(path, data)
    assert tree(zk) == before
    assert not (tmp_path / "a.jsonl").exists()


def test_oversized_payload_names_path_size_and_limit(zk):
    before = tree(zk)
    big = json.dumps({"version": 1, "partitions": [{"topic": "t" * 50, "partition": i} for i in range(20000)]},
                     separators=(",", ":")).encode()
    with pytest.raises(ZnodeTooLarge) as exc:
        ZkWriter(zk, authority=KEYBOARD).create("/admin/preferred_replica_election", big)
    msg = str(exc.value)
    assert "/admin/preferred_replica_election" in msg and str(len(big)) in msg
    assert str(1_048_576 - 4096) in msg and "split into batches" in msg
    assert tree(zk) == before


def test_missing_node_set_and_delete(zk):
    with pytest.raises(NodeMissing):
        ZkWriter(zk, authority=KEYBOARD).set("/config/topics/nope", b'{"version":1,"config":{}}')
    with pytest.raises(NodeMissing):
        ZkWriter(zk, authority=KEYBOARD).delete("/config/topics/nope")


def test_dry_run_writes_nothing_and_audits_plans(zk, tmp_path):
    zk.create("/config/brokers/1", b'{"version":1,"config":{"x":"1"}}', makepath=True)
    before = tree(zk)
    log = AuditLog(tmp_path / "dry.jsonl", run_id="r")
    w = ZkWriter(zk, log, dry_run=True, authority=KEYBOARD)
    w.write_config("brokers", "1", {"x": "2"})
    w.create("/admin/reassign_partitions", REASSIGN)
    w.delete("/config/brokers/1")
    assert tree(zk) == before
    assert [p.op for p in w.planned] == ["set", "create", "create", "delete"]
    assert w.planned[0] == PlannedWrite("set", "/config/brokers/1", b'{"version":1,"config":{"x":"2"}}',
                                        b'{"version":1,"config":{"x":"1"}}')
    recs = AuditLog.read(tmp_path / "dry.jsonl")
    assert len(recs) == 4 and all(r.dry_run for r in recs)
    assert recs[1].path == "/config/changes/config_change_"
    assert recs[1].after == {"version": 2, "entity_path": "brokers/1"}


def test_dry_run_plans_a_delete_then_create_as_it_would_run_and_still_refuses_a_plain_create(zk):
    zk.create("/admin/reassign_partitions", REASSIGN, makepath=True)
    before = tree(zk)
    w = ZkWriter(zk, dry_run=True, authority=KEYBOARD)
    with pytest.raises(ReassignmentInProgress):
        w.create("/admin/reassign_partitions", REASSIGN)      # nothing planned on it yet: it exists
    w.delete("/admin/reassign_partitions")
    w.create("/admin/reassign_partitions", REASSIGN)          # the planned delete made room
    with pytest.raises(ReassignmentInProgress):
        w.create("/admin/reassign_partitions", REASSIGN)      # the planned create filled it again
    assert [(p.op, p.path) for p in w.planned] == [("delete", "/admin/reassign_partitions"),
                                                   ("create", "/admin/reassign_partitions")]
    assert tree(zk) == before


def test_config_writes_refuse_values_kafka_cannot_parse_whoever_calls(zk):
    """Issue 12 finding 6: the DAG wrote a 2^63 throttle to every broker; the gate now refuses it
    (and other unparsable values it adds), while values already stored by others pass untouched."""
    from kafka_zk.admin.throttles import apply_throttles
    from kafka_zk.errors import InvalidConfig
    from kafka_zk.throttle_lists import TopicThrottle
    from tests.zk_helpers import register_brokers, set_config_by_hand

    register_brokers(zk, {1: None, 2: None})
    zk.create("/brokers/topics/t", b'{"version":1,"partitions":{"0":[1]}}')
    set_config_by_hand(zk, "topics/t", {"min.cleanable.dirty.ratio": "0.5d"})   # Java parses it; we would not
    before = tree(zk)
    w = ZkWriter(zk, authority=KEYBOARD)
    with pytest.raises(InvalidConfig, match="LONG"):
        w.write_config("brokers", "1", {"leader.replication.throttled.rate": str(2**63)})
    with pytest.raises(InvalidConfig, match="DOUBLE"):
        w.write_config("topics", "t", {"min.cleanable.dirty.ratio": "nan"})
    with pytest.raises(InvalidInput, match="broker id"):
        w.write_config("brokers", "²", {"leader.replication.throttled.rate": "5"})
    with pytest.raises(InvalidInput, match="Topic name is invalid"):
        w.write_config("topics", "t\n", {})
    with pytest.raises(InvalidInput, match="LONG"):
        apply_throttles(w, [TopicThrottle("t", frozenset({(0, 1)}), frozenset({(0, 2)}))], [1, 2], 2**63)
    assert tree(zk) == before
    w.write_config("topics", "t", {"min.cleanable.dirty.ratio": "0.5d", "retention.ms": "5"})
    assert read_json(zk, "/config/topics/t")["config"]["retention.ms"] == "5"
