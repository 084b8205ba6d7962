"""Throttles a live runbook run recorded as its own are owned, not leaked (kafka_zk.health.owners).

Run folders are written as the runbooks write them (ThrottleRecord.save; the teardown's marker);
snapshots are literals.
"""

from __future__ import annotations

import json

from kafka_zk import health
from kafka_zk.admin.throttles import BrokerThrottleRecord, ThrottleRecord, TopicThrottleRecord
from kafka_zk.health import ThrottleOwners, check_health, find_throttle_owners
from tests.kafka_zk.health.test_health_literal import NO_AGES, snap

CFG = {"t": {"leader.replication.throttled.replicas": "0:1,0:2"},
       "u": {"follower.replication.throttled.replicas": "0:3"}}
BROKERS = {"1": {"leader.replication.throttled.rate": "1000"}, "2": {"follower.replication.throttled.rate": "5"}}


def _run_folder(root, dag, run, topics=(), brokers=(), removed=False):
    folder = root / dag / run
    folder.mkdir(parents=True)
    ThrottleRecord(tuple(TopicThrottleRecord(t, None, None, frozenset({(0, 1)})) for t in topics),
                   tuple(BrokerThrottleRecord(b, {}, {"leader.replication.throttled.rate": "1000"})
                         for b in brokers)).save(folder / "throttles.json")
    if removed:
        (folder / "throttles_removed.json").write_text("{}")
    return folder


def _cluster():
    return snap({"t": [((1, 2), 1, (1, 2))], "u": [((1, 3), 1, (1, 3))]}, configs=CFG, broker_configs=BROKERS)


def test_a_live_runs_throttles_are_owned_and_only_the_rest_leak(tmp_path):
    live = _run_folder(tmp_path, "decommission_brokers", "manual__1", topics=["t"], brokers=["1"])
    _run_folder(tmp_path, "decommission_brokers", "manual__0", topics=["u"], brokers=["2"], removed=True)
    owners = find_throttle_owners(tmp_path)
    assert [r.run_id for r in owners.runs] == ["manual__1"]
    report = check_health(_cluster(), NO_AGES, owners=owners)
    assert {f.subject for f in report.of(health.LEAKED_THROTTLE)} == {"broker 2", "topic u"}
    assert {(o.subject, o.run, o.folder) for o in report.owned_throttles} == {
        ("broker 1", "decommission_brokers run manual__1", str(live)),
        ("topic t", "decommission_brokers run manual__1", str(live))}
    doc = json.loads(json.dumps(report.to_json()))
    assert {o["subject"] for o in doc["owned_throttles"]} == {"broker 1", "topic t"}


def test_without_owners_every_unneeded_throttle_leaks(tmp_path):
    report = check_health(_cluster(), NO_AGES, owners=find_throttle_owners(tmp_path / "missing"))
    assert {f.subject for f in report.of(health.LEAKED_THROTTLE)} == {"broker 1", "broker 2", "topic t", "topic u"}
    assert report.owned_throttles == ()


def test_an_unreadable_record_is_named_and_owns_nothing(tmp_path):
    folder = tmp_path / "decommission_brokers" / "manual__2"
    folder.mkdir(parents=True)
    (folder / "throttles.json").write_text("{not json")
    owners = find_throttle_owners(tmp_path)
    assert owners.runs == () and owners.unreadable == (str(folder / "throttles.json"),)
    assert len(check_health(_cluster(), NO_AGES, owners=ThrottleOwners()).of(health.LEAKED_THROTTLE)) == 4
