"""The broker_configs procedure alone, without Airflow, on a real ZooKeeper (kazoo, the write gate).

The spec applied entity by entity (one write of /config/brokers/<entity> and one v2 change
notification each, other keys kept), read back, and a second plan writes nothing; every kind of
bad input refused before anything is written, the message naming the problem and the fix; a diff
that went stale refused; a dry run plans the writes and writes nothing.
"""

from __future__ import annotations

import json

import pytest

from kafka_zk.audit import AuditLog
from kafka_zk.authority import PersonAtKeyboard
from kafka_zk.errors import InvalidConfig, InvalidInput, StalePlan
from kafka_zk.admin.configs import alter_config
from kafka_zk.writer import ZkWriter
from procedures.broker_configs.run import apply_changes, plan_changes, unverified
from procedures.broker_configs.spec import BrokerConfigSpecError, parse_broker_config_spec
from tests.dags.scenario import data_tree

KEYBOARD = PersonAtKeyboard("the test")
SPEC = ("brokers:\n  default: {set: {log.cleaner.io.max.bytes.per.second: '1e7'}, delete: [log.retention.ms]}\n"
        "  2: {set: {num.network.threads: '6', advertised.listeners: 'PLAINTEXT://kafka-2:9092'}}\n")


@pytest.fixture
def cluster(zk):
    """Three registered brokers; overrides already there: a default retention, broker 2's throttle."""
    for b in (1, 2, 3):
        zk.create(f"/brokers/ids/{b}", b'{"version":4,"host":"127.0.0.1","port":9092,"endpoints":[]}',
                  makepath=True)
    zk.create("/config/brokers/<default>", b'{"version":1,"config":{"log.retention.ms":"1000"}}', makepath=True)
    zk.create("/config/brokers/2", b'{"version":1,"config":{"leader.replication.throttled.rate":"100"}}')
    zk.ensure_path("/config/changes")
    return zk


def notifications(zk) -> list[dict]:
    return [json.loads(zk.get(f"/config/changes/{n}")[0]) for n in sorted(zk.get_children("/config/changes"))]


def stored(zk, entity: str) -> dict:
    return json.loads(zk.get(f"/config/brokers/{entity}")[0])["config"]


def test_the_spec_is_applied_one_entity_at_a_time_and_a_second_plan_writes_nothing(cluster, tmp_path) -> None:
    zk = cluster
    spec = parse_broker_config_spec(SPEC)
    diff = plan_changes(zk, spec).to_json()
    assert [c["entity"] for c in diff["changes"]] == ["<default>", "2"]
    audit = AuditLog(tmp_path / "audit.jsonl")
    applied = apply_changes(ZkWriter(zk, audit=audit, authority=KEYBOARD), spec, diff)
    assert [a["entity"] for a in applied] == ["<default>", "2"]
    assert stored(zk, "<default>") == {"log.cleaner.io.max.bytes.per.second": "1e7"}
    assert stored(zk, "2") == {"leader.replication.throttled.rate": "100", "num.network.threads": "6",
                               "advertised.listeners": "PLAINTEXT://kafka-2:9092"}    # the throttle kept
    assert notifications(zk) == [{"version": 2, "entity_path": "brokers/<default>"},
                                 {"version": 2, "entity_path": "brokers/2"}]
    writes = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(w["op"], w["path"].rsplit("/", 1)[-1][:14]) for w in writes if w["op"] in ("create", "set")] == [
        ("set", "<default>"), ("create", "config_change_"), ("set", "2"), ("create", "config_change_")]
    assert unverified(zk, diff) == []
    again = plan_changes(zk, spec)
    assert again.writes_nothing and "Nothing to change" in again.text()
    assert again.already_unset == [{"entity": "<default>", "keys": ["log.retention.ms"]}]


def test_a_dry_run_plans_every_write_and_writes_nothing(cluster) -> None:
    zk = cluster
    spec = parse_broker_config_spec(SPEC)
    before = data_tree(zk), zk.get_children("/config/changes")
    writer = ZkWriter(zk, dry_run=True, authority=KEYBOARD)
    apply_changes(writer, spec, plan_changes(zk, spec).to_json())
    assert len(writer.planned) == 4
    assert (data_tree(zk), zk.get_children("/config/changes")) == before


def test_a_diff_that_went_stale_is_refused_with_nothing_written(cluster) -> None:
    zk = cluster
    spec = parse_broker_config_spec(SPEC)
    diff = plan_changes(zk, spec).to_json()
    zk.set("/config/brokers/2", b'{"version":1,"config":{"num.network.threads":"8"}}')   # someone, by hand
    before = data_tree(zk)
    with pytest.raises(StalePlan, match="run again for a fresh diff"):
        apply_changes(ZkWriter(zk, authority=KEYBOARD), spec, diff)
    assert data_tree(zk) == before and zk.get_children("/config/changes") == []


def test_an_apply_stopped_after_its_first_entity_is_finished_by_the_retry_writing_only_the_rest(cluster,
                                                                                                 tmp_path) -> None:
    zk = cluster
    spec = parse_broker_config_spec(SPEC)
    diff = plan_changes(zk, spec).to_json()
    first = diff["changes"][0]                 # what the first try wrote before Airflow killed it (CI, load ~9)
    alter_config(ZkWriter(zk, authority=KEYBOARD), "brokers", first["entity"], add=first["set"],
                 delete=first["delete"], dynamic=True)
    audit = AuditLog(tmp_path / "audit.jsonl")
    applied = apply_changes(ZkWriter(zk, audit=audit, authority=KEYBOARD), spec, diff)
    assert [(a["entity"], bool(a.get("found_applied"))) for a in applied] == [("<default>", True), ("2", False)]
    writes = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(w["op"], w["path"].rsplit("/", 1)[-1][:14]) for w in writes if w["op"] in ("create", "set")] == [
        ("set", "2"), ("create", "config_change_")]                 # the default not written again
    assert unverified(zk, diff) == [] and len(notifications(zk)) == 2


def test_a_retry_that_finds_its_own_writes_still_refuses_a_change_someone_else_made(cluster) -> None:
    zk = cluster
    spec = parse_broker_config_spec(SPEC)
    diff = plan_changes(zk, spec).to_json()
    first = diff["changes"][0]
    alter_config(ZkWriter(zk, authority=KEYBOARD), "brokers", first["entity"], add=first["set"],
                 delete=first["delete"], dynamic=True)
    zk.set("/config/brokers/2", b'{"version":1,"config":{"num.network.threads":"8"}}')   # someone, by hand
    before = data_tree(zk), zk.get_children("/config/changes")
    with pytest.raises(StalePlan, match="run again for a fresh diff"):
        apply_changes(ZkWriter(zk, authority=KEYBOARD), spec, diff)
    assert (data_tree(zk), zk.get_children("/config/changes")) == before


BAD = [
    ("unknown key", "1:\n    set:\n      num.io.thread: '8'", "num.io.thread is not a Kafka 2.4 broker config",
     "check the spelling"),
    ("read-only key", "1:\n    set:\n      log.dirs: /data", "log.dirs cannot be changed dynamically",
     "set it in server.properties and roll the brokers with the rolling_restart runbook"),
    ("read-only at default", "default:\n    delete: [zookeeper.connect]", "zookeeper.connect cannot be changed",
     "rolling_restart runbook"),
    ("per-broker key at default", "default:\n    set:\n      listeners: PLAINTEXT://:9092",
     "listeners is a per-broker config", "set it under each broker id"),
    ("throttle", "3:\n    set:\n      follower.replication.throttled.rate: '100'",
     "follower.replication.throttled.rate is a replication throttle", "kafka-runbook throttle"),
    ("alter log dirs throttle", "3:\n    delete: [replica.alter.log.dirs.io.max.bytes.per.second]",
     "is a replication throttle", "remove it from the spec"),
    ("password", "1:\n    set:\n      listener.name.internal.ssl.key.password: x", "is a security config",
     "kafka-configs --bootstrap-server"),
    ("bad value", "1:\n    set:\n      num.io.threads: '0'", "Invalid value 0 for configuration num.io.threads",
     "give a valid value"),
    ("bad enum", "default:\n    set:\n      log.cleanup.policy: shred", "String must be one of: compact, delete",
     "give a valid value"),
    ("bad entity", "broker-1:\n    set:\n      num.io.threads: '8'", "must be a valid integer broker id",
     "write a broker id or default"),
    ("set and delete", "1:\n    set:\n      num.io.threads: '8'\n    delete: [num.io.threads]", "listed twice",
     "keep one"),
    ("empty entity", "1: {}", "says nothing", "give set: and/or delete:"),
]


@pytest.mark.parametrize("entry, problem, fix", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_is_refused_before_anything_is_written(cluster, entry, problem, fix) -> None:
    zk = cluster
    before = data_tree(zk)
    with pytest.raises(BrokerConfigSpecError) as refused:
        spec = parse_broker_config_spec(f"brokers:\n  {entry}\n", "spec.yaml")
        apply_changes(ZkWriter(zk, authority=KEYBOARD), spec, plan_changes(zk, spec).to_json())
    assert problem in str(refused.value) and fix in str(refused.value), str(refused.value)
    assert str(refused.value).startswith("spec.yaml, line ")
    assert data_tree(zk) == before and zk.get_children("/config/changes") == []


def test_a_broker_not_in_the_cluster_is_refused_before_anything_is_written(cluster) -> None:
    zk = cluster
    before = data_tree(zk)
    spec = parse_broker_config_spec("brokers:\n  default:\n    set:\n      num.io.threads: '8'\n  9:\n    set:\n"
                                    "      num.io.threads: '8'\n")
    with pytest.raises(InvalidInput, match=r"broker 9 is not in the cluster \(registered: 1, 2, 3\): fix the id"):
        plan_changes(zk, spec)
    assert data_tree(zk) == before and zk.get_children("/config/changes") == []


def test_the_shared_writer_refuses_deleting_a_key_that_is_not_set(cluster) -> None:
    """kafka-configs' rule, kept by the one config writer the runbook and the CLI share: a deletion of
    a key that vanished after the approval is refused there, before its write."""
    zk = cluster
    before = data_tree(zk)
    with pytest.raises(InvalidConfig, match=r"Invalid config\(s\): num.io.threads"):
        alter_config(ZkWriter(zk, authority=KEYBOARD), "brokers", "1", delete=["num.io.threads"], dynamic=True)
    with pytest.raises(InvalidConfig, match="is a replication throttle"):
        alter_config(ZkWriter(zk, authority=KEYBOARD), "brokers", "1", add={"leader.replication.throttled.rate": "1"},
                     dynamic=True)
    assert data_tree(zk) == before
