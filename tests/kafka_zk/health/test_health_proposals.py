"""procedures.proposals on literal snapshots: each anomaly's proposal, one per anomaly, the
grace and persistence waits, the cancel of a healed anomaly's waiting run (never of an approved
one), the cooldown after a run ended, and a trigger that did not land sent again with its run id."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from kafka_zk.codecs import ReassignmentEntry, ReassignmentRequest, TopicPartition
from kafka_zk.errors import InvalidInput
from kafka_zk.health import HealthThresholds, ZnodeAge, ZnodeAges, check_health
from procedures.proposals import (APPROVED, BROKER_DOWN, DISK, ENDED, KINDS, LEAKED_THROTTLE, SKEW,
                                       STUCK_REASSIGNMENT, WAITING, Anomaly, DiskUse, Ledger, ProposalSettings,
                                       SkewTargets, decide, find_anomalies, mark_triggered, skew_of)
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic

T0 = datetime(2026, 12, 2, 1, 0, tzinfo=timezone.utc)
NO_AGES = ZnodeAges(now_ms=10_000_000)


def snap(rows: dict[str, list[tuple[int, ...]]], live=(1, 2, 3), configs=None, **kw) -> ClusterSnapshot:
    topics = {}
    for name, assignments in rows.items():
        parts = {}
        for i, r in enumerate(assignments):
            isr = tuple(b for b in r if b in live)
            parts[i] = Partition(name, i, r, leader=isr[0] if isr else -1, leader_epoch=0, isr=isr)
        topics[name] = Topic(name, parts, (configs or {}).get(name, {}))
    return ClusterSnapshot({b: Broker(b) for b in live}, topics, **kw)


BALANCED = {"a": [(1, 2), (2, 3), (3, 1)]}


def anomalies(s: ClusterSnapshot, ages=NO_AGES, **kw) -> list[Anomaly]:
    report = check_health(s, ages, HealthThresholds(stuck_reassignment_s=0))
    return find_anomalies(s, report, zk_conn_id="prod", **kw)


def test_a_balanced_healthy_cluster_has_no_anomaly():
    assert anomalies(snap(BALANCED)) == []


def test_a_down_broker_holding_replicas_is_proposed_for_decommission_and_no_skew_is_judged_meanwhile():
    s = snap({"a": [(1, 5), (5, 2), (3, 1), (1, 2)]}, live=(1, 2, 3))
    found = anomalies(s)
    assert [a.key for a in found] == ["broker_down:broker 5"]
    down = found[0]
    assert down.runbook == "decommission_brokers"
    assert down.conf == {"zk_conn_id": "prod", "rehearse": "on", "brokers_to_remove": [5]}
    assert "still holds 2 replica(s)" in down.evidence


def test_a_skew_beyond_the_targets_is_proposed_for_rebalance_but_a_retiring_broker_is_no_skew():
    s = snap({"a": [(1, 2), (2, 1), (1, 2), (2, 1)]}, live=(1, 2, 3))
    found = anomalies(s)
    assert [a.key for a in found] == ["skew:brokers"]
    assert "replica counts differ by 4 (target 1)" in found[0].evidence
    assert found[0].conf["target_replica_spread"] == 1 and found[0].runbook == "rebalance"
    assert skew_of(s, SkewTargets(), exclude=[3]) is None
    assert skew_of(s, SkewTargets(replica_spread=4, leader_spread=2)) is None


def test_a_full_disk_needs_a_capacity_file_and_proposes_rebalance_with_it():
    s = snap(BALANCED)
    use = [DiskUse(1, 90, 85, 100), DiskUse(2, 10, 85, 100)]
    assert anomalies(s, disk=use) == []
    found = anomalies(s, disk=use, capacity_file="/etc/kafka/capacity.json", sizes_file="/runs/h/log_dirs.json",
                      disk_threshold_pct=80)
    assert [a.key for a in found] == ["disk:brokers 1"]
    assert found[0].conf["capacity_file"] == "/etc/kafka/capacity.json" and found[0].runbook == "rebalance"
    assert found[0].conf["sizes_file"] == "/runs/h/log_dirs.json" and found[0].conf["rehearse"] == "on"
    assert found[0].conf["disk_threshold_pct"] == 80
    assert "90.0% of 100" in found[0].evidence


def test_a_leaked_throttle_and_a_stuck_reassignment_are_proposed_to_stuck_reassignment():
    s = snap(BALANCED, configs={"a": {"leader.replication.throttled.replicas": "0:1"}},
             reassignment=ReassignmentRequest((ReassignmentEntry("a", 0, (1, 9)),)))
    ages = ZnodeAges(now_ms=10_000_000, reassignment=ZnodeAge("/admin/reassign_partitions", 0, 0))
    found = {a.kind: a for a in anomalies(s, ages)}
    assert set(found) == {STUCK_REASSIGNMENT}      # a throttle on a moving topic is no leak
    s = snap(BALANCED, configs={"a": {"leader.replication.throttled.replicas": "0:1"}})
    found = {a.kind: a for a in anomalies(s)}
    assert set(found) == {LEAKED_THROTTLE}
    assert found[LEAKED_THROTTLE].conf == {"zk_conn_id": "prod"}
    assert found[LEAKED_THROTTLE].runbook == "stuck_reassignment"


DOWN = Anomaly(BROKER_DOWN, "broker 5", "broker 5 is not registered", {"zk_conn_id": "prod", "brokers_to_remove": [5]})
SETTINGS = ProposalSettings(broker_down_grace_s=600, skew_persist_s=3600, cooldown_s=7200)


def test_a_down_broker_is_proposed_only_after_its_grace_once_and_kept_while_it_waits():
    d1 = decide(Ledger(), [DOWN], {}, T0, SETTINGS, "health run 1")
    assert not d1.propose and d1.waiting[0][1].startswith("seen since")
    settings = ProposalSettings(broker_down_grace_s=600, runbook_conf={"decommission_brokers": {
        "throttle_bytes_per_sec": 1000, "run_root": "/other"}, "rebalance": {"max_replicas_moved": 9}})
    d2 = decide(d1.ledger, [DOWN], {}, T0 + timedelta(seconds=601), settings, "health run 2",
                {"run_root": "/runs"})
    (p,) = d2.propose
    assert p.run_id == "proposal__broker_down__broker_5__20261202T011001" and p.proposed_by == "health run 2"
    assert p.conf == {"zk_conn_id": "prod", "brokers_to_remove": [5], "run_root": "/other",
                      "throttle_bytes_per_sec": 1000}
    ledger = mark_triggered(d2.ledger, p.key)
    d3 = decide(ledger, [DOWN], {p.run_id: WAITING}, T0 + timedelta(seconds=1500), SETTINGS, "health run 3")
    assert not d3.propose and not d3.cancel and [o.run_id for o in d3.open] == [p.run_id]
    assert Ledger.from_json(d3.ledger.to_json()) == d3.ledger


def test_a_trigger_that_did_not_land_is_sent_again_with_the_same_run_id():
    d1 = decide(Ledger(), [DOWN], {}, T0, ProposalSettings(broker_down_grace_s=0), "h1")
    (p,) = d1.propose
    d2 = decide(d1.ledger, [DOWN], {}, T0 + timedelta(minutes=15), ProposalSettings(broker_down_grace_s=0), "h2")
    assert [q.run_id for q in d2.propose] == [p.run_id]


def test_a_healed_anomaly_cancels_its_waiting_proposal_but_never_an_approved_one():
    d1 = decide(Ledger(), [DOWN], {}, T0, ProposalSettings(broker_down_grace_s=0), "h1")
    ledger, run_id = mark_triggered(d1.ledger, DOWN.key), d1.propose[0].run_id
    healed = decide(ledger, [], {run_id: WAITING}, T0 + timedelta(minutes=15), SETTINGS, "health run 7")
    (c,) = healed.cancel
    assert c.proposal.run_id == run_id and not healed.ledger.proposals
    assert c.note.startswith("cancelled by health run 7 at 2026-12-02T01:15:00+00:00: the anomaly it was proposed "
                             "for is gone (broker_down:broker 5")
    running = decide(ledger, [], {run_id: APPROVED}, T0 + timedelta(minutes=15), SETTINGS, "h")
    assert not running.cancel and [o.run_id for o in running.open] == [run_id]
    done = decide(running.ledger, [], {run_id: ENDED}, T0 + timedelta(minutes=30), SETTINGS, "h")
    assert not done.cancel and not done.open and not done.ledger.proposals


def test_an_ended_proposal_is_not_proposed_again_before_the_cooldown():
    d1 = decide(Ledger(), [DOWN], {}, T0, ProposalSettings(broker_down_grace_s=0, cooldown_s=3600), "h1")
    ledger, run_id = mark_triggered(d1.ledger, DOWN.key), d1.propose[0].run_id
    s = ProposalSettings(broker_down_grace_s=0, cooldown_s=3600)
    d2 = decide(ledger, [DOWN], {run_id: ENDED}, T0 + timedelta(minutes=10), s, "h2")
    assert not d2.propose and "cooldown" in d2.waiting[0][1]
    d3 = decide(d2.ledger, [DOWN], {run_id: ENDED}, T0 + timedelta(minutes=71), s, "h3")
    assert [p.run_id for p in d3.propose] == ["proposal__broker_down__broker_5__20261202T021100"]


def test_a_kind_turned_off_is_seen_and_reported_but_not_proposed():
    skew = Anomaly(SKEW, "brokers", "replica counts differ by 4", {"zk_conn_id": "prod"})
    s = ProposalSettings(enabled={k: k != SKEW for k in KINDS}, skew_persist_s=0)
    d = decide(Ledger(), [skew], {}, T0, s, "h")
    assert not d.propose and "propose_skew=false" in d.waiting[0][1]


def test_bad_settings_and_a_bad_ledger_are_refused_by_name():
    with pytest.raises(InvalidInput, match="broker_down_grace_s"):
        ProposalSettings(broker_down_grace_s=-1)
    with pytest.raises(InvalidInput, match="not one of"):
        ProposalSettings(enabled={"reboot": True})
    with pytest.raises(InvalidInput, match="proposal_conf: 'rebalanc' must be one of"):
        ProposalSettings(runbook_conf={"rebalanc": {}})
    with pytest.raises(InvalidInput, match="ledger.json: not a proposal ledger"):
        Ledger.from_json("{}", "ledger.json")
    assert DISK in KINDS
