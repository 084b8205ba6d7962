"""decommission_brokers end to end: real Airflow (dag.test on SQLite), real ZooKeeper, the emulator,
real Spark (once per module; the other runs reuse that plan through ``plan_from``).

Every test reads the final cluster back with plain kazoo. Approvals are answered from a second
thread through the Core API's HITL handler, as the Required-actions page does.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import pytest

from kafka_sim.cluster import EmulatedCluster
from kafka_zk.health import find_throttle_owners
from tests.dags.conftest import new_chroot, plain_client, through_proxy, zk_connection
from tests.zk_helpers import set_config_by_hand
from tests.dags.scenario import (REMOVED, Env, THROTTLE, TOPICS, assignment, audit, config, data_tree, plan_targets,
                                 read, start_cluster, states, submit_by_hand, throttle_configs,
                                 write_sizes)

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
REPO = Path(__file__).resolve().parents[2]


def conf(conn_id: str, run_root: Path, **extra) -> dict:
    return {"zk_conn_id": conn_id, "spark_conn_id": "spark_local", "brokers_to_remove": REMOVED,
            "run_root": str(run_root), "throttle_bytes_per_sec": THROTTLE, "max_moves_per_broker": 2,
            "poll_interval_s": 0.3, **extra}


@pytest.fixture
def env(zk_server, tmp_path: Path) -> Iterator[Env]:
    chroot = new_chroot(zk_server)
    cluster = start_cluster(zk_server.connect_string + chroot)
    zk = plain_client(zk_server, chroot)
    yield Env(cluster, zk_connection(zk_server, chroot), zk, tmp_path / "runs")
    zk.stop()
    zk.close()
    cluster.stop()


@pytest.fixture(scope="module")
def spark_run(zk_server, tmp_path_factory, airflow_db):
    """The happy path, once per module: Spark plans, a human approves, the waves run."""
    from cli.local_run import run_dag

    chroot = new_chroot(zk_server)
    cluster = start_cluster(zk_server.connect_string + chroot)
    zk = plain_client(zk_server, chroot)
    run_root = tmp_path_factory.mktemp("spark_run")
    before = assignment(zk)
    result = run_dag("decommission_brokers", conf(zk_connection(zk_server, chroot), run_root,
                                                  sizes_file=write_sizes(cluster, run_root), verify_data=True),
                     answer="Approve", approver="alice.sre")
    yield result, zk, before
    zk.stop()
    zk.close()
    cluster.stop()


def assert_decommissioned(zk, run_folder: Path, before: dict) -> None:
    targets = plan_targets(run_folder)
    after = assignment(zk)
    for tp, replicas in after.items():
        assert not set(replicas) & set(REMOVED), f"{tp} still on a removed broker: {replicas}"
        assert replicas == targets.get(tp, before[tp]), tp
    for tp, st in states(zk).items():
        assert st["leader"] not in REMOVED and sorted(st["isr"]) == sorted(after[tp]), (tp, st)
        assert st["leader"] == after[tp][0], f"{tp}: leader {st['leader']} is not the preferred replica"
    assert zk.exists("/admin/reassign_partitions") is None
    assert zk.exists("/admin/preferred_replica_election") is None
    assert throttle_configs(zk) == {}


def zk_writes(records: list[dict]) -> list[dict]:
    """Audit records of ZooKeeper writes (made or planned), not approval decisions."""
    return [r for r in records if r["op"] in ("create", "set", "delete")]


def reassignment_creates(records: list[dict]) -> list[dict]:
    return [r for r in records if r["path"] == "/admin/reassign_partitions" and r["op"] == "create"]


def test_happy_path_with_a_human_approval(spark_run) -> None:
    result, zk, before = spark_run
    assert result.answer_error is None
    assert result.state == "success", result.task_states
    assert set(result.task_states.values()) == {"success"}
    folder = result.run_folder
    assert_decommissioned(zk, folder, before)
    approval = json.loads((folder / "approval.json").read_text())
    assert approval["decision"] == "approved" and approval["by"] == "alice.sre"
    assert approval["plan_hash"] == (folder / "plan" / "plan.sha256").read_text().strip()
    data_check = json.loads((folder / "verify.json").read_text())["verify_data"]
    assert data_check["ok"] is True and data_check["replicas"] > 0 and not data_check["problems"]
    waves = json.loads((folder / "waves.json").read_text())["waves"]
    assert len(waves) >= 2 and all(w["status"] == "done" for w in waves)
    records = audit(folder)
    creates = reassignment_creates(records)
    # one same-set re-ordering (demotion) + exactly one submission per wave
    assert len(creates) == len(waves) + 1
    assert {r["op"] for r in records} >= {"create", "set", "approve"}
    assert all(not r["dry_run"] for r in records)
    html = (folder / "plan_report.html").read_text()
    assert "<svg" in html and approval["plan_hash"] in html
    assert "— SUCCEEDED" in (folder / "final_report.md").read_text().splitlines()[0]
    assert "- controller: on broker" in (folder / "final_report.md").read_text()      # it has the step
    final_html = (folder / "final_report.html").read_text()
    assert "at the snapshot vs now" in final_html and "broker 6 (removed)" in final_html
    assert (folder / "notification.txt").read_text().startswith("Decommission — brokers 6: SUCCEEDED")


@pytest.mark.parametrize("zk_via", ["3.5", "3.4"], indirect=True)
def test_every_zookeeper_step_works_on_zookeeper_3_5_and_3_4(zk_server, tmp_path: Path, zk_via, spark_run) -> None:
    """The whole run (Spark's plan reused) with the runbook's ZooKeeper steps through the proxy
    that answers as 3.5/3.4 would; the proxy fails the test if anything it lacks was sent."""
    from cli.local_run import run_dag

    chroot = new_chroot(zk_server)
    cluster = start_cluster(zk_server.connect_string + chroot)
    zk = plain_client(zk_server, chroot)
    try:
        before = assignment(zk)
        result = run_dag("decommission_brokers", conf(zk_connection(zk_server, chroot, zk_via), tmp_path / "runs",
                                                      plan_from=str(spark_run[0].run_folder / "plan"),
                                                      **through_proxy(zk_via)),
                         answer="Approve")
        assert result.state == "success", result.task_states
        assert_decommissioned(zk, result.run_folder, before)
    finally:
        zk.stop()
        zk.close()
        cluster.stop()


def test_dry_run_writes_nothing_and_audits_the_would_be_writes(env: Env, spark_run) -> None:
    from cli.local_run import run_dag

    plan_dir = spark_run[0].run_folder / "plan"
    before = data_tree(env.zk)
    result = run_dag("decommission_brokers", conf(env.conn_id, env.run_root, dry_run=True, plan_from=str(plan_dir)))
    assert result.state == "success", result.task_states
    assert data_tree(env.zk) == before
    records = audit(result.run_folder)
    zk_records = zk_writes(records)
    assert zk_records and all(r["dry_run"] for r in zk_records)
    waves = json.loads((plan_dir / "waves.json").read_text())["waves"]
    assert len(reassignment_creates(zk_records)) >= len(waves)
    assert any(r["path"].startswith("/config/brokers/") for r in zk_records)
    assert json.loads((result.run_folder / "approval.json").read_text())["decision"] == "dry_run"
    assert "dry run" in (result.run_folder / "final_report.md").read_text()


def test_rejected_approval_writes_nothing_and_skips_execution(env: Env, spark_run) -> None:
    from cli.local_run import run_dag

    before = data_tree(env.zk)
    result = run_dag("decommission_brokers",
                     conf(env.conn_id, env.run_root, plan_from=str(spark_run[0].run_folder / "plan")),
                     answer="Reject", approver="bob.sre")
    assert result.answer_error is None
    assert result.task_states["approve"] == "success"
    for task in ("guards", "demote", "set_throttles", "execute_waves", "remove_throttles", "verify_drained"):
        assert result.task_states[task] == "skipped", (task, result.task_states)
    assert data_tree(env.zk) == before
    approval = json.loads((result.run_folder / "approval.json").read_text())
    assert approval["decision"] == "rejected" and approval["by"] == "bob.sre"
    assert not zk_writes(audit(result.run_folder))
    assert "rejected" in (result.run_folder / "final_report.md").read_text()


def test_stale_plan_is_refused(env: Env, spark_run) -> None:
    from cli.local_run import run_dag

    plan_dir = spark_run[0].run_folder / "plan"
    moved = sorted(plan_targets(spark_run[0].run_folder))[0]
    old = assignment(env.zk)[moved]
    spare = next(b for b in (1, 2, 3, 4, 5) if b not in old)
    drifted = [spare if b == REMOVED[0] else b for b in old]
    submit_by_hand(env.zk, [(moved[0], moved[1], drifted)])  # someone moved it since the plan
    assert env.cluster.wait_until(lambda: env.zk.exists("/admin/reassign_partitions") is None
                                  and assignment(env.zk)[moved] == drifted, 30)
    before = data_tree(env.zk)
    result = run_dag("decommission_brokers", conf(env.conn_id, env.run_root, plan_from=str(plan_dir)),
                     answer="Approve")
    assert result.state == "failed"
    assert result.task_states["guards"] == "failed" and result.task_states["demote"] == "upstream_failed"
    guards = json.loads((result.run_folder / "guards.json").read_text())
    assert not guards["ok"] and "plan is stale, re-plan" in guards["problems"][0]
    assert f"{moved[0]}-{moved[1]}: plan assumed replicas {old}, cluster has {drifted}" in guards["problems"][0]
    assert data_tree(env.zk) == before


def test_reassignment_already_in_progress_is_refused(env: Env, spark_run) -> None:
    from cli.local_run import run_dag

    submit_by_hand(env.zk, [("payments", 2, [1, 2, 99])])  # broker 99 never comes: it stays in progress
    assert env.cluster.wait_until(lambda: "adding_replicas" in (read(env.zk, "/brokers/topics/payments") or {})
                                  and read(env.zk, "/brokers/topics/payments")["adding_replicas"], 30)
    before = data_tree(env.zk)
    result = run_dag("decommission_brokers", conf(env.conn_id, env.run_root,
                                                  plan_from=str(spark_run[0].run_folder / "plan")), answer="Approve")
    assert result.state == "failed" and result.task_states["guards"] == "failed"
    assert result.task_states["set_throttles"] == "upstream_failed"
    assert result.task_states["remove_throttles"] in ("skipped", "upstream_failed")  # did not run
    problems = json.loads((result.run_folder / "guards.json").read_text())["problems"]
    assert "a reassignment is already in progress" in problems[0] and "payments-2 → [1, 2, 99]" in problems[0]
    assert data_tree(env.zk) == before
    assert read(env.zk, "/admin/reassign_partitions")["partitions"][0]["replicas"] == [1, 2, 99]


def test_a_failure_mid_wave_keeps_the_throttles_until_the_wave_ends_then_restores_the_users(
        zk_server, tmp_path: Path, airflow_db) -> None:
    """execute_waves times out while wave 0 copies (it keeps copying in Kafka): the teardown keeps
    every throttle while any partition still copies, removes them when the wave ends, and restores
    the user's own throttles exactly. Before the fix it removed them at once (the rest of the copy
    ran unthrottled)."""
    from cli.local_run import run_dag

    chroot = new_chroot(zk_server)
    cluster = start_cluster(zk_server.connect_string + chroot, speed=40.0)  # wave 0: ~10-30 s of real time
    zk = plain_client(zk_server, chroot)
    samples: list[tuple[bool, dict]] = []
    stop = threading.Event()

    def sample() -> None:
        """While any new replica is copying (adding_replicas non-empty), what throttles are set."""
        while not stop.is_set():
            try:
                copying = any((read(zk, f"/brokers/topics/{t}") or {}).get("adding_replicas") for t in TOPICS)
                samples.append((copying, throttle_configs(zk)))
            except Exception:  # noqa: BLE001 - a node changing under the read: sample again
                pass
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    try:
        set_config_by_hand(zk, "brokers/1", {"leader.replication.throttled.rate": "12345",
                                                "follower.replication.throttled.rate": "12345"})
        set_config_by_hand(zk, "topics/payments", {"leader.replication.throttled.replicas": "2:1",
                                                      "retention.ms": "3600000"})
        users = throttle_configs(zk)
        from kafka_zk.codecs import TopicPartition
        from tests.dags.kernel_plan import write_kernel_plan

        sizes = {TopicPartition(t, p): size for t, (_, by_p) in TOPICS.items() for p, size in by_p.items()}
        write_kernel_plan(zk_server.connect_string + chroot, tmp_path / "plan", REMOVED, sizes, THROTTLE)
        sampler.start()
        result = run_dag("decommission_brokers", conf(zk_connection(zk_server, chroot), tmp_path / "runs",
                                                      wave_timeout_s=3,
                                                      plan_from=str(tmp_path / "plan")), answer="Approve")
        stop.set()
        sampler.join(timeout=5)
        assert result.state == "failed"
        assert result.task_states["execute_waves"] == "failed"
        assert result.task_states["final_verify"] == "upstream_failed"
        assert result.task_states["remove_throttles"] == "success"
        approval = json.loads((result.run_folder / "approval.json").read_text())
        assert approval["decision"] == "approved" and approval["by"] == "sre-on-call"
        throttled = sorted({r["path"].rsplit("/", 1)[1] for r in zk_writes(audit(result.run_folder))
                            if r["path"].startswith("/config/brokers/")})
        assert throttled, "the run did set throttles before failing"
        copying = [configs for is_copying, configs in samples if is_copying]
        assert copying, "the sampler never saw the wave copying"
        for configs in copying:   # no wave ever unthrottled
            for broker in throttled:
                rate = configs.get(f"brokers/{broker}", {}).get("follower.replication.throttled.rate")
                assert rate == str(THROTTLE), (broker, configs)
        assert zk.exists("/admin/reassign_partitions") is None
        assert throttle_configs(zk) == users
        assert config(zk, "topics", "payments")["retention.ms"] == "3600000"
        janitor = json.loads((result.run_folder / "throttle_janitor.json").read_text())
        assert janitor["in_flight"] and janitor["removed_at"] >= janitor["kept_at"]
        report = (result.run_folder / "final_report.md").read_text()
        assert "FAILED" in report and "kept after the failure while" in report
        assert "kept after the failure while" in (result.run_folder / "notification.txt").read_text()
    finally:
        stop.set()
        zk.stop()
        zk.close()
        cluster.stop()


CHILD = """
import os, sys
from datetime import datetime
from cli.local_run import configure_local_airflow, run_dag
configure_local_airflow(os.environ["KR_TEST_AIRFLOW_HOME"])
run_dag("decommission_brokers", __import__("json").loads(sys.argv[1]), when=datetime.fromisoformat(sys.argv[2]),
        answer="Approve")
"""


def test_task_killed_mid_wave_resumes_without_resubmitting_a_finished_wave(zk_server, tmp_path: Path,
                                                                           spark_run) -> None:
    """The worker running the DAG is SIGKILLed while wave 1 runs; the same run is started again."""
    from cli.local_run import run_dag

    chroot = new_chroot(zk_server)
    cluster = start_cluster(zk_server.connect_string + chroot, speed=360.0)
    zk = plain_client(zk_server, chroot)
    run_conf = conf(zk_connection(zk_server, chroot), tmp_path / "runs",
                    plan_from=str(spark_run[0].run_folder / "plan"))
    when = datetime.now(timezone.utc).replace(microsecond=0)
    before = assignment(zk)
    plan_waves = json.loads((spark_run[0].run_folder / "plan" / "waves.json").read_text())["waves"]
    held = [(p["topic"], p["partition"], b) for p in plan_waves[1]["partitions"]
            for b in p["replicas"] if b not in p["current"]]
    for topic, partition, broker in held:  # wave 1's new replicas cannot copy until released
        cluster.stall_replica(topic, partition, broker)
    child = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(run_conf), when.isoformat()], cwd=REPO,
                             env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def wave_one_in_flight() -> bool:
            runs = list((tmp_path / "runs" / "decommission_brokers").glob("*/waves.json"))
            if not runs or zk.exists("/admin/reassign_partitions") is None:
                return False
            waves = json.loads(runs[0].read_text())["waves"]
            return waves[0]["status"] == "done" and waves[1]["status"] == "submitted"
        assert cluster.wait_until(wave_one_in_flight, 180), "the first run never reached wave 1"
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)

    released_on_wait = threading.Event()

    def release() -> None:
        """Un-stall wave 1 once the second run's execute_waves waits on it (deferred), at worst after 120 s."""
        from sqlalchemy import select

        from airflow.models.taskinstance import TaskInstance
        from airflow.utils.session import create_session

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with create_session() as session:
                ti = session.scalar(select(TaskInstance).where(
                    TaskInstance.dag_id == "decommission_brokers", TaskInstance.task_id == "execute_waves",
                    TaskInstance.run_id == f"manual__{when.isoformat()}"))
                if ti is not None and ti.next_method == "execute_complete":
                    released_on_wait.set()
                    break
            time.sleep(0.2)
        for topic, partition, broker in held:
            cluster.stall_replica(topic, partition, broker, stalled=False)
    releaser = threading.Thread(target=release, daemon=True)
    releaser.start()
    try:
        result = run_dag("decommission_brokers", run_conf, when=when, answer="Approve")
        assert result.state == "success", result.task_states
        releaser.join(timeout=5)
        assert released_on_wait.is_set(), "execute_waves never waited on the wave left running"
        assert_decommissioned(zk, result.run_folder, before)
        records = audit(result.run_folder)
        creates = reassignment_creates(records)
        waves = json.loads((result.run_folder / "waves.json").read_text())["waves"]
        submitted = [sorted((p["topic"], p["partition"]) for p in r["after"]["partitions"]) for r in creates]
        for w in waves:
            members = sorted((m["topic"], m["partition"]) for m in w["moves"])
            assert submitted.count(members) == 1, f"wave {w['id']} submitted {submitted.count(members)} times"
        assert len(creates) == len(waves) + 1  # + the demotion's re-ordering, also not repeated
    finally:
        zk.stop()
        zk.close()
        cluster.stop()


def test_plan_from_for_other_brokers_is_refused_before_any_write(env: Env, tmp_path: Path) -> None:
    """Issue 12 finding 5: a plan for broker 6 run with brokers_to_remove=[5] once made 57 writes,
    moving broker 6's data under an approval titled broker 5. Now the plan step refuses it."""
    from cli.local_run import run_dag

    plan = tmp_path / "rehearsal" / "plan"      # what the plan step reads of a plan/ folder
    plan.mkdir(parents=True)
    (plan / "plan.json").write_text("{}")
    (plan / "summary.json").write_text(json.dumps({"operation": "decommission", "removed_brokers": [6]}))
    before = data_tree(env.zk)
    result = run_dag("decommission_brokers", {**conf(env.conn_id, env.run_root,
                                                     plan_from=str(plan)), "brokers_to_remove": [5]}, answer="Approve")
    assert result.state == "failed" and result.task_states["plan"] == "failed", result.task_states
    assert result.task_states["set_throttles"] in ("upstream_failed", "skipped"), result.task_states
    assert data_tree(env.zk) == before
    assert not zk_writes(audit(result.run_folder))
    assert not (result.run_folder / "plan").exists()


def test_cluster_health_during_the_run_reports_its_throttles_as_owned_not_leaked(zk_server, tmp_path: Path,
                                                                                  spark_run) -> None:
    """cluster_health runs (in this process) while a decommission (in a child process with its own
    copy of the metadata DB) holds wave 1: the finished wave's throttle lists and the broker rates
    belong to that run; none is a leak. After the run, its teardown marker ends the ownership."""
    from cli.local_run import run_dag

    chroot = new_chroot(zk_server)
    cluster = start_cluster(zk_server.connect_string + chroot, speed=360.0)
    zk = plain_client(zk_server, chroot)
    run_root = tmp_path / "runs"
    conn_id = zk_connection(zk_server, chroot)
    run_conf = conf(conn_id, run_root, plan_from=str(spark_run[0].run_folder / "plan"))
    plan_waves = json.loads((spark_run[0].run_folder / "plan" / "waves.json").read_text())["waves"]
    # hold wave k's partitions of one topic; the other topics throttled so far then move no more
    k, held_topic = next((k, w["partitions"][0]["topic"]) for k, w in enumerate(plan_waves) if k and {
        p["topic"] for v in plan_waves[:k + 1] for p in v["partitions"]} - {w["partitions"][0]["topic"]})
    held = [(p["topic"], p["partition"], b) for p in plan_waves[k]["partitions"] if p["topic"] == held_topic
            for b in p["replicas"] if b not in p["current"]]
    for topic, partition, broker in held:
        cluster.stall_replica(topic, partition, broker)
    child_home = tmp_path / "child-airflow"   # its own metadata DB, created by the child
    when = datetime.now(timezone.utc).replace(microsecond=0)
    child = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(run_conf), when.isoformat()], cwd=REPO,
                             env={**os.environ, "KR_TEST_AIRFLOW_HOME": str(child_home)},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        from kafka_zk.health import check_health, read_znode_ages
        from kafka_zk.snapshot import read_snapshot

        def unowned_leaks() -> list:
            """What health would call leaks without the run folders (none until wave k holds)."""
            snap = read_snapshot(zk)
            return list(check_health(snap, read_znode_ages(zk, snap)).of("leaked_throttle"))

        def wave_k_held() -> bool:
            runs = list((run_root / "decommission_brokers").glob("*/waves.json"))
            if not runs or zk.exists("/admin/reassign_partitions") is None:
                return False
            waves = json.loads(runs[0].read_text())["waves"]
            return waves[k]["status"] == "submitted" and bool(unowned_leaks())
        assert cluster.wait_until(wave_k_held, 240), f"the decommission never held wave {k}"
        folder = next((run_root / "decommission_brokers").iterdir())
        health = run_dag("cluster_health", {"zk_conn_id": conn_id, "run_root": str(run_root),
                                            "fail_on_severity": "critical"})
        doc = json.loads((health.run_folder / "health.json").read_text())
        assert [f for f in doc["findings"] if f["check"] == "leaked_throttle"] == []
        assert doc["counts"]["leaked_throttle"] == 0
        owned = {o["subject"] for o in doc["owned_throttles"]}
        # the same cluster without the run folders: those throttles would be reported as leaks (read
        # after the health run: the held run may have throttled another topic since, never fewer)
        assert owned and owned <= {f.subject for f in unowned_leaks()}
        assert all(o["run"] == f"decommission_brokers run {folder.name}" for o in doc["owned_throttles"])
        report = (health.run_folder / "health_report.md").read_text()
        assert "Throttles owned by a live runbook run" in report and folder.name in report
    finally:
        for topic, partition, broker in held:
            cluster.stall_replica(topic, partition, broker, stalled=False)
        try:
            child.wait(timeout=300)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=30)
            zk.stop()
            zk.close()
            cluster.stop()
    assert (folder / "throttles_removed.json").is_file(), "the teardown marks the run's throttles removed"
    assert find_throttle_owners(run_root).runs == ()
