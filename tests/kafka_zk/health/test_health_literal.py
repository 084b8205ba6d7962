"""kafka_zk.health on literal snapshots: each check's edge cases, without ZooKeeper.

The planted-problem tests on a real emulated cluster are in ``test_health_emulated.py``; these
pin the arithmetic (imbalance ratio as Kafka's rebalancer computes it, min-ISR resolution,
thresholds, severities) where a literal cluster states the expectation plainly.
"""

from __future__ import annotations

import pytest

from kafka_zk import health
from kafka_zk.codecs import PreferredElectionRequest, ReassignmentEntry, ReassignmentRequest, TopicPartition
from kafka_zk.errors import InvalidInput
from kafka_zk.health import HealthThresholds, ZnodeAge, ZnodeAges, check_health, leader_balance
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic

TP = TopicPartition


def snap(parts: dict[str, list[tuple[tuple[int, ...], int | None, tuple[int, ...]]]], live=(1, 2, 3),
         configs: dict[str, dict[str, str]] | None = None, **kw) -> ClusterSnapshot:
    topics = {}
    for name, rows in parts.items():
        ps = {i: Partition(name, i, r, leader=l, leader_epoch=0 if l is not None else None, isr=isr)
              for i, (r, l, isr) in enumerate(rows)}
        topics[name] = Topic(name, ps, (configs or {}).get(name, {}), marked_for_deletion=name in kw.get(
            "delete_markers", frozenset()))
    return ClusterSnapshot({b: Broker(b) for b in live}, topics, **kw)


NO_AGES = ZnodeAges(now_ms=10_000_000)


def test_clean_cluster_has_no_finding_and_reaches_only_ok():
    s = snap({"a": [((1, 2, 3), 1, (1, 2, 3)), ((2, 3, 1), 2, (2, 3, 1)), ((3, 1, 2), 3, (3, 1, 2))]})
    report = check_health(s, NO_AGES)
    assert report.clean and report.worst == "ok"
    assert report.reaches("ok") and not report.reaches("info")
    assert all(c == 0 for c in report.counts().values())
    assert [b.imbalance_ratio for b in report.leader_balance] == [0.0, 0.0, 0.0]


def test_imbalance_ratio_counts_not_led_among_preferred_and_ignores_stateless_partitions():
    # broker 1 is preferred for 4 partitions: two led by 2, one without a state znode.
    s = snap({"a": [((1, 2), 2, (1, 2)), ((1, 2), 2, (2,)), ((1, 2), 1, (1, 2)), ((1, 2), None, ()),
                    ((2, 1), 2, (2, 1))]})
    b1 = next(b for b in leader_balance(s) if b.broker == 1)
    assert (b1.preferred, b1.not_led, b1.leaders, b1.electable) == (4, 2, 1, 1)
    assert b1.imbalance_ratio == 0.5
    after = next(b for b in leader_balance(s, assume_elected=[TP("a", 0)]) if b.broker == 1)
    assert (after.not_led, after.leaders) == (1, 2)
    report = check_health(s, NO_AGES, HealthThresholds(leader_imbalance_pct=49))
    [f] = report.of(health.LEADER_IMBALANCE)
    assert f.subject == "broker 1" and "50.0% > 49%" in f.message and "1 can be moved back" in f.cause
    assert not check_health(s, NO_AGES, HealthThresholds(leader_imbalance_pct=50)).of(health.LEADER_IMBALANCE)


def test_min_isr_from_topic_override_then_default_broker_config():
    s = snap({"t": [((1, 2, 3), 1, (1, 2))], "u": [((1, 2, 3), 1, (1, 2))], "v": [((1, 2, 3), 1, (1,))]},
             configs={"t": {"min.insync.replicas": "3"}}, broker_configs={"<default>": {"min.insync.replicas": "2"}})
    report = check_health(s, NO_AGES)
    assert report.partitions_of(health.UNDER_MIN_ISR) == (TP("t", 0), TP("v", 0))
    assert report.partitions_of(health.AT_MIN_ISR) == (TP("u", 0),)
    assert report.partitions_of(health.UNDER_REPLICATED) == (TP("t", 0), TP("u", 0), TP("v", 0))
    assert report.worst == "critical"


def test_rf_equal_to_min_isr_is_info_only():
    s = snap({"one": [((1,), 1, (1,))]})
    [f] = check_health(s, NO_AGES).findings
    assert (f.check, f.severity) == (health.AT_MIN_ISR, "info")


def test_leaked_throttles_only_when_nothing_moves():
    cfg = {"t": {"leader.replication.throttled.replicas": "0:1,0:2", "retention.ms": "1"}}
    brokers = {"1": {"leader.replication.throttled.rate": "1000"}, "2": {"log.cleaner.threads": "2"}}
    s = snap({"t": [((1, 2), 1, (1, 2))], "m": [((1, 2), 1, (1, 2))]}, configs=cfg, broker_configs=brokers)
    found = {f.subject for f in check_health(s, NO_AGES).of(health.LEAKED_THROTTLE)}
    assert found == {"broker 1", "topic t"}
    running = snap({"t": [((1, 2), 1, (1, 2))], "m": [((1, 2), 1, (1, 2))]}, configs=cfg, broker_configs=brokers,
                   reassignment=ReassignmentRequest((ReassignmentEntry("m", 0, (2, 3)),)))
    # a reassignment of m runs: broker rates may be its own; t's list is still leaked
    assert {f.subject for f in check_health(running, NO_AGES).of(health.LEAKED_THROTTLE)} == {"topic t"}
    empty = snap({"t": [((1, 2), 1, (1, 2))]}, configs={"t": {"leader.replication.throttled.replicas": ""}})
    assert not check_health(empty, NO_AGES).findings


def test_stuck_reassignment_uses_mtime_and_names_the_cause():
    s = snap({"m": [((1, 2), 1, (1, 2)), ((1, 2), 1, (1, 2))]},
             reassignment=ReassignmentRequest((ReassignmentEntry("m", 0, (1, 9)), ReassignmentEntry("m", 1, (1, 2)),
                                               ReassignmentEntry("gone", 0, (1,)))), controller_id=1)
    ages = ZnodeAges(now_ms=1_000_000, reassignment=ZnodeAge("/admin/reassign_partitions", 0, 995_000))
    assert not check_health(s, ages, HealthThresholds(stuck_reassignment_s=10)).of(health.STUCK_REASSIGNMENT)
    [f] = check_health(s, ages, HealthThresholds(stuck_reassignment_s=4)).of(health.STUCK_REASSIGNMENT)
    assert f.partitions == (TP("gone", 0), TP("m", 0))
    assert "target broker(s) 9 not live" in f.cause and "no longer exists" in f.cause
    assert f.severity == "critical" and f.age_s == 5.0


def test_stuck_election_and_deletion_by_ctime():
    s = snap({"d": [((1, 4), 1, (1,))]}, delete_markers=frozenset({"d", "nope"}),
             preferred_election=PreferredElectionRequest((TP("d", 0),)), controller_id=None)
    ages = ZnodeAges(now_ms=100_000, election=ZnodeAge("/admin/preferred_replica_election", 0, 0),
                     delete_markers={"d": ZnodeAge("/admin/delete_topics/d", 50_000, 50_000),
                                     "nope": ZnodeAge("/admin/delete_topics/nope", 0, 0)})
    report = check_health(s, ages, HealthThresholds(stuck_election_s=60, stuck_deletion_s=60))
    [e] = report.of(health.STUCK_ELECTION)
    assert "no active controller" in e.cause
    [d] = report.of(health.STUCK_DELETION)  # d is only 50 s old
    assert d.subject == "topic nope" and "does not exist" in d.cause
    report = check_health(s, ages, HealthThresholds(stuck_election_s=60, stuck_deletion_s=10))
    d = {f.subject: f for f in report.of(health.STUCK_DELETION)}["topic d"]
    assert "broker(s) 4 that are not live" in d.cause and d.partitions == (TP("d", 0),)
    # topics marked for deletion are not reported as unavailable/URP
    assert not report.of(health.UNAVAILABLE) and not report.of(health.UNDER_REPLICATED)


@pytest.mark.parametrize("kwargs, field", [({"leader_imbalance_pct": 101}, "leader_imbalance_pct"),
                                           ({"stuck_deletion_s": -1}, "stuck_deletion_s"),
                                           ({"default_min_isr": 0}, "default_min_isr"),
                                           ({"severity": {"nope": "warning"}}, "nope"),
                                           ({"severity": {"unavailable": "fatal"}}, "fatal")])
def test_bad_thresholds_are_refused_naming_the_field(kwargs, field):
    with pytest.raises(InvalidInput, match=field):
        HealthThresholds(**kwargs)


def test_severity_override_and_json_summary():
    s = snap({"a": [((1, 2), 1, (1,))]})
    report = check_health(s, NO_AGES, HealthThresholds(severity={"under_replicated": "critical"}))
    doc = report.to_json()
    assert doc["worst_severity"] == "critical" and doc["counts"]["under_replicated"] == 1
    assert doc["findings"][0]["partitions"] == ["a-0"]
