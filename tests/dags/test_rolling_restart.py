"""rolling_restart end to end (Airflow dag.test, the emulator as Kafka 2.4.1 on a real ZooKeeper).

The acceptance of issue 29, each on 6 brokers in 3 racks with data and a producer-like load, every
broker restarted by ``kafka-runbook sim fault restart`` run by Airflow's SubprocessHook:

* the whole cluster rolled, rack by rack, one broker at a time, the controller last: no partition
  offline in any sample of an independent reader, every preferred leadership back at the end,
  replica orders as before, each broker's timeline in the progress file and the report;
* a broker whose action fails, or that never registers again, stops the roll before the next
  broker: notified, the broker and the gate named in the batch and the report (and the brokers
  left demoted), every other broker untouched (same registration); after the cause is fixed,
  running the roll again in the same run folder resumes at that broker;
* a partition at min ISR (RF 2, ``min.insync.replicas=2``) holds the roll before the stop: the
  gate names it, nothing is restarted.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import pytest

from procedures.restart.gates import registration_czxid
from kafka_zk.snapshot import read_snapshot
from procedures.restart.plan import plan_roll
from tests.dags.conftest import new_chroot, plain_client, zk_connection
from tests.rolling_restart_env import OfflineSampler, preferred_leaders, restart_action, start_roll_cluster

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
DAG_ID = "rolling_restart"


@pytest.fixture
def env(zk_server, tmp_path: Path) -> Iterator[tuple]:
    chroot = new_chroot(zk_server)
    connect = zk_server.connect_string + chroot
    with start_roll_cluster(connect) as cluster:
        zk = plain_client(zk_server, chroot)
        try:
            yield cluster, zk, connect, zk_connection(zk_server, chroot), tmp_path / "runs"
        finally:
            zk.stop()
            zk.close()


def run(conn_id: str, run_root: Path, action: str, answer: str | None = "Approve", **params):
    from cli.local_run import run_dag

    return run_dag(DAG_ID, {"zk_conn_id": conn_id, "run_root": str(run_root), "action": action,
                            "poll_interval_s": 0.1, **params}, answer=answer)


def order(zk) -> list[int]:
    return list(plan_roll(read_snapshot(zk, with_configs=False), "all", [], "broker", "x {broker}").brokers)


def czxids(zk) -> dict[int, int | None]:
    return {b: registration_czxid(zk, b) for b in range(1, 7)}


def assignment(zk) -> dict[str, tuple[int, ...]]:
    return {str(p.tp): p.replicas for p in read_snapshot(zk, with_configs=False).partitions()}


def progress(result) -> list[dict]:
    return json.loads((result.run_folder / "restart_progress.json").read_text())["batches"]


def notified(result) -> list[str]:
    path = result.run_folder / "notifications.jsonl"
    return [json.loads(line)["event"] for line in path.read_text().splitlines()] if path.is_file() else []


def test_six_brokers_in_three_racks_are_rolled_with_no_partition_offline(env) -> None:
    cluster, zk, connect, conn_id, run_root = env
    before, first_czxids, planned = assignment(zk), czxids(zk), order(zk)
    with OfflineSampler(connect) as sampler:
        result = run(conn_id, run_root, restart_action(connect))
    assert result.state == "success", result.task_states
    assert sampler.samples > 50 and sampler.offline == set(), sampler.offline
    assert all(pref == leader for pref, leader in preferred_leaders(zk).values()), preferred_leaders(zk)
    assert assignment(zk) == before
    assert all(czxids(zk)[b] > first_czxids[b] for b in range(1, 7))          # each one restarted
    batches = progress(result)
    assert [int(b["brokers"][0]) for b in batches] == planned
    for b in batches:
        assert b["state"] == "done"
        assert b["submitted_at"] <= b["down_at"] <= b["registered_at"] <= b["in_sync_at"] <= b["leaders_back_at"]
    report = (result.run_folder / "final_report.md").read_text()
    assert "every broker restarted (6 batch(es))" in report and "| leaders back |" in report
    assert "finished" in notified(result)
    audit = [json.loads(line) for line in (result.run_folder / "audit.jsonl").read_text().splitlines()]
    writes = {r["path"] for r in audit if r.get("op") != "approve"}
    assert writes <= {"/admin/reassign_partitions", "/admin/preferred_replica_election",
                      str(result.run_folder / "approval_rolling_restart.json")}, writes


def test_a_broker_that_does_not_come_back_stops_the_roll_before_the_next(env, tmp_path) -> None:
    cluster, zk, connect, conn_id, run_root = env
    planned = order(zk)
    second = planned[1]
    flag = tmp_path / "broken"
    flag.write_text("the restart of this broker fails until the flag is removed")
    action = f"if [ {{broker}} = {second} ] && [ -e {flag} ]; then echo 'unit kafka.service failed' >&2; exit 3; fi; " \
             + restart_action(connect)
    when = datetime(2026, 11, 26, 9, 0, tzinfo=timezone.utc)
    from cli.local_run import run_dag

    conf = {"zk_conn_id": conn_id, "run_root": str(run_root), "action": action, "poll_interval_s": 0.1}
    result = run_dag(DAG_ID, conf, answer="Approve", when=when)
    assert result.state == "failed" and result.task_states["roll"] == "failed", result.task_states
    batches = progress(result)
    assert batches[0]["state"] == "done"
    assert batches[1]["state"] == "failed" and "exited 3: unit kafka.service failed" in batches[1]["message"]
    assert batches[1]["stopped_at"] == "restart action" and f"broker {second}: stopped at the restart action" \
        in batches[1]["message"]
    assert all(b["state"] == "pending" for b in batches[2:])
    untouched = czxids(zk)
    assert "failed" in notified(result)
    report = (result.run_folder / "final_report.md").read_text()
    assert "STOPPED: 1 of 6 batch(es) done" in report
    assert f"**Why:** broker {second}: stopped at the restart action" in report
    assert "To resume the roll, clear its roll task" in report
    # the cause fixed, the roll run again in the same run folder: it resumes at the broker it stopped on
    flag.unlink()
    again = run_dag(DAG_ID, conf, answer="Approve", when=when)
    assert again.state == "success", again.task_states
    now = czxids(zk)
    assert now[planned[0]] == untouched[planned[0]]                          # not restarted twice
    assert all(now[b] > untouched[b] for b in planned[1:])
    assert all(pref == leader for pref, leader in preferred_leaders(zk).values())


def test_a_broker_that_never_registers_again_stops_the_roll_and_others_are_untouched(env) -> None:
    cluster, zk, connect, conn_id, run_root = env
    first = order(zk)[0]
    before = czxids(zk)
    stop_only = restart_action(connect).replace(" restart {broker}", " shutdown-broker {broker}")
    result = run(conn_id, run_root, stop_only, register_timeout_s=5)
    assert result.task_states["roll"] == "failed" and result.state == "failed", result.task_states
    batches = progress(result)
    assert batches[0]["state"] == "failed" and f"broker {first} did not come back" in batches[0]["message"]
    assert batches[0]["stopped_at"] == "registration"
    report = (result.run_folder / "final_report.md").read_text()
    assert f"- broker(s) {first}, batch 1, at the registration (failed): broker {first} did not come back" in report
    assert not batches[0]["demoted"] or f"Brokers {first}: {len(batches[0]['demoted'])} partition(s) still list " \
                                          "them last (demoted)" in report
    assert all(b["state"] == "pending" for b in batches[1:])
    now = czxids(zk)
    assert now[first] is None
    assert {b: c for b, c in now.items() if b != first} == {b: c for b, c in before.items() if b != first}
    assert "failed" in notified(result)


def test_a_partition_at_min_isr_holds_the_roll_and_the_gate_names_it(env) -> None:
    cluster, zk, connect, conn_id, run_root = env
    first = order(zk)[0]
    other = next(b for b in range(1, 7) if b != first)
    cluster.create_topic("payments", {0: [other, first]}, None, {"min.insync.replicas": "2"})
    before = czxids(zk)
    result = run(conn_id, run_root, restart_action(connect), stop_gate_timeout_s=2)
    assert result.task_states["roll"] == "failed", result.task_states
    batches = progress(result)
    assert batches[0]["state"] == "pending" and "payments-0" in batches[0]["message"]
    assert batches[0]["stopped_at"] == "stop gate"
    assert any("payments-0: at min ISR" in p and "min.insync.replicas=2" in p for p in batches[0]["gate_problems"])
    assert czxids(zk) == before                                                  # nothing restarted
    assert "payments-0: at min ISR" in (result.run_folder / "final_report.md").read_text()
    assert "payments-0" in (result.run_folder / "restart_plan.md").read_text()  # the plan said so already


def test_a_dry_run_and_a_rejected_roll_restart_nothing(env) -> None:
    cluster, zk, connect, conn_id, run_root = env
    before, leaders = czxids(zk), preferred_leaders(zk)
    dry = run(conn_id, run_root, restart_action(connect), answer=None, dry_run=True)
    assert dry.state == "success", dry.task_states
    assert dry.task_states["approve"] == "skipped" and dry.task_states["roll"] == "success"
    assert all(b["state"] == "planned" for b in progress(dry))
    planned = [json.loads(line) for line in (dry.run_folder / "audit.jsonl").read_text().splitlines()]
    assert planned and all(r["dry_run"] for r in planned)           # the demotions, planned only
    assert "dry run: planned only, nothing restarted" in (dry.run_folder / "final_report.md").read_text()
    rejected = run(conn_id, run_root, restart_action(connect), answer="Reject")
    assert rejected.task_states["roll"] == "skipped", rejected.task_states
    assert not (rejected.run_folder / "audit.jsonl").is_file() or all(
        json.loads(line).get("op") in ("approve", "reject")
        for line in (rejected.run_folder / "audit.jsonl").read_text().splitlines())
    assert czxids(zk) == before and preferred_leaders(zk) == leaders
