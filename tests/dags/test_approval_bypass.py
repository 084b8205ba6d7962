"""Nobody can bypass the approval: each attempt is refused with nothing written to ZooKeeper.

Through Airflow (``dag.test``) on the emulator, with the preferred-leader election runbook (its
plan needs no Spark, so each attempt is a short run; every runbook shares the same approval
operator). ``dag.test`` records its runs as triggered by ``dag_test``: answering as ``dag_test``
is the person who triggered the run approving it. The attempts:

* the removed trigger-time ``pre_approved`` Param (refused by the run's first task);
* a policy in the windows file that pre-approves the runbook, used by a *manual* run (only
  scheduled runs inside a window may skip the human);
* approving one's own run (four eyes);
* approving after the request expired;
* approving a plan whose hash changed while the request waited;
* marking the approval task success instead of answering it (dag.test's ``mark_success_pattern``,
  what the UI's "Mark as success" does; tests/dags/test_real_airflow_approval_gate.py makes the same
  REST call on a real Airflow for the three writing shapes).
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from tests.dags.conftest import new_chroot, plain_client, zk_connection
from tests.dags.moving_runbook import zk_writes
from tests.dags.scenario import always_open_windows, audit, data_tree

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
DAG_ID = "preferred_leader_election"


@pytest.fixture(scope="module")
def cluster_env(zk_server, tmp_path_factory):
    """Six partitions whose leaders were moved off their preferred replicas by two restarts."""
    chroot = new_chroot(zk_server)
    cluster = EmulatedCluster(zk_server.connect_string + chroot, ClusterSpec(brokers={1: "a", 2: "b", 3: "c"},
                                                                             seed=0)).start()
    zk = plain_client(zk_server, chroot)
    cluster.create_topics({"orders": ({p: [1 + p % 3, 1 + (p + 1) % 3, 1 + (p + 2) % 3] for p in range(6)},
                                      None, None)})
    for b in (1, 2):
        cluster.kill_broker(b)
        assert cluster.wait_until(lambda: zk.exists("/controller") is not None, 30)
        cluster.restart_broker(b)
        assert cluster.wait_idle(30)
    yield cluster, zk, zk_connection(zk_server, chroot), tmp_path_factory.mktemp("bypass")
    zk.stop()
    zk.close()
    cluster.stop()


@pytest.fixture
def windows_file(tmp_path, monkeypatch):
    """Point the runbooks at a windows file written by the test (the environment variable)."""
    def write(text: str) -> Path:
        path = tmp_path / "windows.yaml"
        path.write_text(text)
        monkeypatch.setenv("KAFKA_RUNBOOKS_WINDOWS_FILE", str(path))
        return path
    return write


def attempt(cluster_env, answer: str | None = "Approve", approver: str = "carol.sre", **kwargs):
    """Run the election with ``answer`` from ``approver``; assert it was refused with nothing written."""
    from cli.local_run import run_dag

    cluster, zk, conn_id, root = cluster_env
    run_root = root / f"r{time.monotonic_ns()}"
    conf = {"zk_conn_id": conn_id, "run_root": str(run_root), "poll_interval_s": 0.2, **kwargs.pop("conf", {})}
    assert cluster.wait_idle(30)
    before = data_tree(zk)
    result = run_dag(DAG_ID, conf, answer=answer, approver=approver, **kwargs)
    assert result.state == "failed", result.task_states
    assert result.task_states["approve"] == "failed", result.task_states
    assert result.task_states["elect_batches"] in ("upstream_failed", "skipped"), result.task_states
    assert zk_writes(audit(result.run_folder)) == []
    assert data_tree(zk) == before
    return result


def approval(result) -> dict:
    return json.loads((result.run_folder / "approval.json").read_text())


def test_the_removed_pre_approved_param_is_refused_by_the_first_task(cluster_env, capfd) -> None:
    """Refused before any work (operators/approval/conf_check.py), not only at the approve step."""
    from cli.local_run import run_dag

    cluster, zk, conn_id, root = cluster_env
    before = data_tree(zk)
    result = run_dag(DAG_ID, {"zk_conn_id": conn_id, "run_root": str(root / "pre"), "pre_approved": True})
    assert result.state == "failed" and result.task_states["snapshot"] == "failed", result.task_states
    assert result.task_states["approve"] == "upstream_failed", result.task_states
    assert not (result.run_folder / "approval.json").exists()    # refused before any decision
    assert "pre_approved was removed" in capfd.readouterr().out
    assert data_tree(zk) == before


def test_a_policy_does_not_pre_approve_a_manual_run(cluster_env, windows_file) -> None:
    """The file pre-approves the election in an always-open window, but a person triggered the run:
    the human is still asked (and here the person who triggered answers, which is refused)."""
    _, _, conn_id, _ = cluster_env
    windows_file(f"""clusters:
  {conn_id}:
    windows:
      - name: always
        start: "* * * * *"
        duration: 7d
        timezone: UTC
        runbooks: ['*']
    pre_approval:
      runbooks: [{DAG_ID}]
      max_replicas_moved: 1000
      max_bytes_moved: 1TiB
      require_rehearsal: false
""")
    result = attempt(cluster_env, approver="dag_test")
    request = json.loads((result.run_folder / "approval_request.json").read_text())
    assert any("manual run is never pre-approved" in r for r in request["not_pre_approved"]), request
    assert approval(result)["decision"] == "rejected"


def test_approving_ones_own_run_is_refused(cluster_env) -> None:
    result = attempt(cluster_env, approver="dag_test")
    record = approval(result)
    assert record["decision"] == "rejected" and record["by"] == "dag_test"
    assert "four-eyes" in record["note"] and "dag_test triggered this run" in record["note"]


def test_approving_after_the_request_expired_is_refused(cluster_env, windows_file) -> None:
    _, _, conn_id, _ = cluster_env
    windows_file(always_open_windows(conn_id, "    approval_expires_after: 10s\n"))
    result = attempt(cluster_env, answer_delay=14)
    record = approval(result)
    assert record["decision"] == "rejected" and "expired" in record["note"], record
    request = json.loads((result.run_folder / "approval_request.json").read_text())
    assert request["expiry_s"] == 10


def test_approving_a_plan_whose_hash_changed_is_refused(cluster_env) -> None:
    """While the request waits, the plan on disk is replaced by another valid plan (a re-plan):
    the approval of the old hash does not carry over."""
    _, _, _, root = cluster_env
    swapped = threading.Event()
    stop = threading.Event()
    donor_plan: list[Path] = []

    def swap_plan() -> None:
        deadline = time.monotonic() + 600
        while not stop.is_set() and time.monotonic() < deadline:
            requests = list(root.glob(f"r*/{DAG_ID}/*/approval_request.json"))
            fresh = [r for r in requests if not (r.parent / "approval.json").exists()]
            if fresh:
                plan_dir = fresh[0].parent / "plan"
                shutil.rmtree(plan_dir)
                shutil.copytree(donor_plan[0], plan_dir)
                swapped.set()
                return
            time.sleep(0.2)

    # another valid plan to swap in: a dry run of the same election scoped to one partition
    from cli.local_run import run_dag

    cluster, zk, conn_id, _ = cluster_env
    scope = root / "one-partition.json"
    scope.write_text(json.dumps({"partitions": [{"topic": "orders", "partition": p} for p in range(6)][:1]}))
    donor = run_dag(DAG_ID, {"zk_conn_id": conn_id, "run_root": str(root / "r0donor"), "dry_run": True,
                             "path_to_json_file": str(scope)})
    assert donor.state == "success", donor.task_states
    donor_plan.append(donor.run_folder / "plan")
    swapper = threading.Thread(target=swap_plan, daemon=True)
    swapper.start()
    try:
        result = attempt(cluster_env, answer_delay=3)
    finally:
        stop.set()
        swapper.join(timeout=10)
    assert swapped.is_set()
    record = approval(result)
    assert record["decision"] == "rejected" and "now hashes to" in record["note"], record


def test_marking_the_approval_success_is_no_approval(cluster_env, capfd) -> None:
    """Nobody answers; the approve task is marked success. The election step refuses at the write
    gate's door with nothing written, naming the missing approval."""
    from cli.local_run import run_dag

    cluster, zk, conn_id, root = cluster_env
    assert cluster.wait_idle(30)
    before = data_tree(zk)
    result = run_dag(DAG_ID, {"zk_conn_id": conn_id, "run_root": str(root / "marked"), "poll_interval_s": 0.2},
                     mark_success="approve")
    assert result.state == "failed", result.task_states
    assert result.task_states["approve"] == "success" and result.task_states["elect_batches"] == "failed"
    assert not (result.run_folder / "approval.json").exists()
    assert "no approval record" in capfd.readouterr().out
    assert zk_writes(audit(result.run_folder)) == []
    assert data_tree(zk) == before
    said = json.loads((result.run_folder / "outcome.json").read_text())    # the note's and the message's source
    assert said["kind"] == "refused" and said["written"] == 0, said
    assert said["cause"].startswith("elect_batches: ") and "no approval record" in said["cause"], said


def test_marking_guards_and_approve_success_lets_no_decommission_step_write(zk_server, tmp_path, capfd) -> None:
    """The decommission's writing steps (demote first) check no approval themselves: the write gate
    refuses them, and the teardown has nothing of this run's to restore."""
    from kafka_zk.codecs import TopicPartition
    from cli.local_run import run_dag
    from tests.dags.kernel_plan import write_kernel_plan

    chroot = new_chroot(zk_server)
    cluster = EmulatedCluster(zk_server.connect_string + chroot,
                              ClusterSpec(brokers={1: "a", 2: "b", 3: "a", 4: "b"}, speed=100000.0, seed=0)).start()
    zk = plain_client(zk_server, chroot)
    try:
        topic = {p: r for p, r in enumerate([(4, 1), (2, 4), (4, 3), (1, 4)])}
        cluster.create_topics({"t": (topic, {p: 1024 * 1024 for p in topic}, None)})
        write_kernel_plan(zk_server.connect_string + chroot, tmp_path / "plan", [4],
                          {TopicPartition("t", p): 1024 * 1024 for p in topic}, 100 * 1024 ** 2)
        assert cluster.wait_idle(30)
        before = data_tree(zk)
        result = run_dag("decommission_brokers", {
            "zk_conn_id": zk_connection(zk_server, chroot), "run_root": str(tmp_path / "runs"),
            "brokers_to_remove": [4], "plan_from": str(tmp_path / "plan"), "poll_interval_s": 0.2,
            "throttle_bytes_per_sec": 100 * 1024 ** 2}, mark_success="guards|approve")
        assert result.state == "failed", result.task_states
        assert result.task_states["demote"] == "failed", result.task_states
        assert result.task_states["set_throttles"] == "upstream_failed", result.task_states
        assert "missing approval" in capfd.readouterr().out
        assert zk_writes(audit(result.run_folder)) == []
        assert data_tree(zk) == before
        said = json.loads((result.run_folder / "outcome.json").read_text())
        assert said["kind"] == "refused" and said["written"] == 0 and said["cause"].startswith("demote: "), said
    finally:
        zk.stop()
        zk.close()
        cluster.stop()
