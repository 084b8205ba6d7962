"""kafka_zk.admin.controller (the action MoveControllerOperator calls): moving the controller off removed brokers, on the emulator.

The emulator elects a controller among its live brokers as Kafka does when ``/controller`` is
deleted; every delete here goes through ZkWriter (audited). The retry case makes the next
election land on a removed broker again (the emulator's "wanted controller", as its
``move_controller(to=...)`` fault uses) and checks the step deletes again, within its bound.
"""

from __future__ import annotations

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk.audit import AuditLog
from kafka_zk.writer import ZkWriter
from kafka_zk.authority import PersonAtKeyboard
from kafka_zk.admin.controller import ControllerNotMoved, move_controller_off, read_controller
from operators.reports.final import controller_text

KEYBOARD = PersonAtKeyboard("the test")   # these tests stand for a person at the keyboard


@pytest.fixture
def cluster(zk_connect):
    c = EmulatedCluster(zk_connect, ClusterSpec(brokers={0: None, 1: None, 2: None}, speed=50.0)).start()
    yield c
    c.stop()


def _audited(zk, tmp_path):
    audit = AuditLog(tmp_path / "audit.jsonl")
    return ZkWriter(zk, audit=audit, authority=KEYBOARD), audit


def test_controller_on_a_removed_broker_is_moved_to_a_kept_one(cluster, zk, tmp_path):
    cluster.move_controller(to=0)
    writer, audit = _audited(zk, tmp_path)
    placement = move_controller_off(zk, writer, frozenset({0}), wait_s=30)
    assert placement.before == 0 and placement.after in (1, 2) and placement.attempts == 1
    assert read_controller(zk)[0] == placement.after and not placement.on_removed
    assert [(r.op, r.path) for r in AuditLog.read(tmp_path / "audit.jsonl")] == [("delete", "/controller")]
    assert "moved off removed broker 0 by 1 re-election" in controller_text(placement.to_json())


def test_an_election_landing_on_a_removed_broker_again_is_retried_within_the_bound(cluster, zk, tmp_path):
    cluster.kill_broker(0)                       # a removed broker already stopped
    cluster.move_controller(to=1)
    cluster._engine.wanted_controller = 1        # the next election picks removed broker 1 again
    placement = move_controller_off(zk, ZkWriter(zk, authority=KEYBOARD), frozenset({0, 1}), wait_s=30)
    assert (placement.before, placement.after, placement.attempts) == (1, 2, 2)

    cluster.move_controller(to=1)
    cluster._engine.wanted_controller = 1
    with pytest.raises(ControllerNotMoved, match="still on removed broker 1 after 1 re-election"):
        move_controller_off(zk, ZkWriter(zk, authority=KEYBOARD), frozenset({0, 1}), max_attempts=1, wait_s=30)


def test_a_kept_controller_is_left_alone_and_a_dry_run_only_plans(cluster, zk, tmp_path):
    cluster.move_controller(to=2)
    placement = move_controller_off(zk, ZkWriter(zk, authority=KEYBOARD), frozenset({0}), wait_s=30)
    assert (placement.before, placement.after, placement.attempts) == (2, 2, 0)
    assert controller_text(placement.to_json()) == "on broker 2 (not a removed broker)"
    dry = move_controller_off(zk, ZkWriter(zk, dry_run=True, authority=KEYBOARD), frozenset({2}), wait_s=30)
    assert dry.dry_run and dry.attempts == 1 and read_controller(zk)[0] == 2
    stay = {**placement.to_json(), "requested": False, "removed": [2], "on_removed": True}
    assert "a REMOVED broker (2)" in controller_text(stay)
