"""The topic_changes apply step, retried after a try that was stopped mid-way, writes only what is left.

On a loaded machine Airflow can kill an apply attempt after some of its writes (seen in the
runbook walk: "task shouldn't be running anymore"); the retry recomputes the diff, finds the
approved changes the cluster already shows, and writes the rest — never the same change twice,
never a change the approval does not cover. Real ZooKeeper, kazoo and the write gate.
"""

from __future__ import annotations

import json

import pytest

from kafka_zk.admin.topics import create_topic
from kafka_zk.audit import AuditLog
from kafka_zk.authority import PersonAtKeyboard
from kafka_zk.errors import StalePlan
from kafka_zk.writer import ZkWriter
from operators.runbooks.topic_changes import ApplyTopicChangesOperator, _live
from procedures.plan.topic_spec import parse_topic_spec
from tests.dags.scenario import data_tree

KEYBOARD = PersonAtKeyboard("the test")
SPEC = "topics:\n  orders:\n    partitions: 3\n    replication_factor: 2\n  clicks:\n    partitions: 2\n    replication_factor: 1\n"


@pytest.fixture
def cluster(zk):
    for b in (1, 2, 3):
        zk.create(f"/brokers/ids/{b}", b'{"version":4,"host":"127.0.0.1","port":9092,"endpoints":[]}',
                  makepath=True)
    for path in ("/brokers/topics", "/config/topics", "/config/changes", "/admin/delete_topics"):
        zk.ensure_path(path)
    return zk


def test_a_retry_creates_only_the_topics_the_stopped_try_did_not(cluster, tmp_path) -> None:
    zk = cluster
    spec = parse_topic_spec(SPEC, "spec")
    diff = _live(zk, spec).to_json()
    assert sorted(c["topic"] for c in diff["create"]) == ["clicks", "orders"]
    done = diff["create"][0]                  # the first try wrote this one, then was killed
    create_topic(ZkWriter(zk, authority=KEYBOARD), None, done["topic"], done["partitions"],
                 done["replication_factor"], done["configs"])
    audit = AuditLog(tmp_path / "audit.jsonl")
    applied = ApplyTopicChangesOperator(task_id="apply", zk_conn_id="unused", run_root=str(tmp_path)).apply(
        zk, ZkWriter(zk, audit=audit, authority=KEYBOARD), spec, diff)
    assert applied == [{"create": done["topic"], "found_applied": True}, {"create": diff["create"][1]["topic"]}]
    topic_writes = [json.loads(line)["path"] for line in (tmp_path / "audit.jsonl").read_text().splitlines()
                    if json.loads(line)["path"].startswith("/brokers/topics/")]
    assert topic_writes == [f"/brokers/topics/{diff['create'][1]['topic']}"]
    assert _live(zk, spec).writes_nothing


def test_a_retry_still_refuses_a_topic_someone_else_changed(cluster, tmp_path) -> None:
    zk = cluster
    spec = parse_topic_spec(SPEC, "spec")
    diff = _live(zk, spec).to_json()
    done, other = diff["create"]
    create_topic(ZkWriter(zk, authority=KEYBOARD), None, done["topic"], done["partitions"],
                 done["replication_factor"], done["configs"])
    create_topic(ZkWriter(zk, authority=KEYBOARD), None, other["topic"], 1, 1, {})   # someone, by hand
    before = data_tree(zk)
    with pytest.raises(StalePlan, match="run again for a fresh diff"):
        ApplyTopicChangesOperator(task_id="apply", zk_conn_id="unused", run_root=str(tmp_path)).apply(zk, ZkWriter(zk, authority=KEYBOARD), spec, diff)
    assert data_tree(zk) == before
