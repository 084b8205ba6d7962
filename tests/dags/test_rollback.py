"""rollback end to end (Airflow dag.test, Spark local once, the emulator on a real ZooKeeper).

The acceptance case: a decommission (tests/dags/scenario.py, broker 6 removed) is stopped after
its second wave — the worker running it is SIGKILLed while wave 2 copies; wave 2 then finishes in
Kafka, as a ZooKeeper-mode reassignment does. Someone then moves one partition of wave 1 by hand.
The rollback of that run's folder restores the original assignment of every partition the two
waves moved, exactly (order included), leaves the hand-moved partition alone and lists it, and
does not touch the partitions the run never reached. Also: a Kafka-format JSON rolled back
through the 3.5/3.4 proxies, dry run, rejection, and refused inputs. Final state read with plain
kazoo.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import pytest

from kafka_zk.codecs import TopicPartition, decode_reassignment_file
from tests.dags.conftest import new_chroot, plain_client, through_proxy, zk_connection
from tests.dags.kernel_plan import write_kernel_plan as write_decommission_plan
from tests.dags.moving_runbook import check_dry_run_writes_nothing, check_rejection_writes_nothing, write_kernel_plan
from tests.dags.scenario import (REMOVED, THROTTLE, TOPICS, assignment, data_tree, start_cluster, submit_by_hand,
                                 throttle_configs)

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
REPO = Path(__file__).resolve().parents[2]
SIZES = {TopicPartition(t, p): size for t, (_, by_p) in TOPICS.items() for p, size in by_p.items()}
CHILD = """
import os, sys, json
from cli.local_run import configure_local_airflow, run_dag
configure_local_airflow(os.environ["KR_TEST_AIRFLOW_HOME"])
run_dag("decommission_brokers", json.loads(sys.argv[1]), answer="Approve")
"""


def conf(conn_id: str, run_root: Path, **extra) -> dict:
    return {"zk_conn_id": conn_id, "spark_conn_id": "spark_local", "run_root": str(run_root),
            "throttle_bytes_per_sec": THROTTLE, "max_moves_per_broker": 2, "poll_interval_s": 0.3, **extra}


def stop_decommission_after_two_waves(zk_server, zk, cluster, tmp_path: Path) -> tuple[Path, dict]:
    """Run the decommission in a child process, SIGKILL it while wave 2 copies; return its run folder
    and the per-wave partitions."""
    write_decommission_plan(zk_server.connect_string + zk.chroot, tmp_path / "plan", REMOVED, SIZES, THROTTLE)
    waves = json.loads((tmp_path / "plan" / "waves.json").read_text())["waves"]
    assert len(waves) >= 3, "the scenario must need more than two waves"
    held = [(p["topic"], p["partition"], b) for p in waves[1]["partitions"] for b in p["replicas"]
            if b not in p["current"]]
    for topic, partition, broker in held:            # wave 2 cannot finish until released
        cluster.stall_replica(topic, partition, broker)
    run_conf = {**conf(zk_connection(zk_server, zk.chroot), tmp_path / "runs"), "brokers_to_remove": REMOVED,
                "plan_from": str(tmp_path / "plan")}
    child = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(run_conf)], cwd=REPO, env=dict(os.environ),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def wave_two_in_flight() -> bool:
            runs = list((tmp_path / "runs" / "decommission_brokers").glob("*/waves.json"))
            if not runs or zk.exists("/admin/reassign_partitions") is None:
                return False
            book = json.loads(runs[0].read_text())["waves"]
            return book[0]["status"] == "done" and book[1]["status"] == "submitted"
        assert cluster.wait_until(wave_two_in_flight, 240), "the decommission never reached its second wave"
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
    for topic, partition, broker in held:             # the wave left running in Kafka finishes
        cluster.stall_replica(topic, partition, broker, stalled=False)
    assert cluster.wait_until(lambda: zk.exists("/admin/reassign_partitions") is None, 120)
    assert cluster.wait_idle(60)
    folder = next((tmp_path / "runs" / "decommission_brokers").iterdir())
    return folder, {i: [(p["topic"], p["partition"]) for p in w["partitions"]] for i, w in enumerate(waves)}


def test_rollback_of_a_decommission_stopped_after_its_second_wave_restores_what_it_moved(
        zk_server, tmp_path: Path) -> None:
    from cli.local_run import run_dag

    chroot = new_chroot(zk_server)
    cluster = start_cluster(zk_server.connect_string + chroot, speed=360.0)
    zk = plain_client(zk_server, chroot)
    try:
        original = assignment(zk)
        run_folder, waves = stop_decommission_after_two_waves(zk_server, zk, cluster, tmp_path)
        moved = waves[0] + waves[1]
        stopped = assignment(zk)
        assert all(stopped[tp] != original[tp] for tp in moved)                 # the two waves happened
        # the later waves never ran (their partitions may only be re-ordered, by the demotion before wave 1)
        assert all(set(stopped[tp]) == set(original[tp]) for w in list(waves)[2:] for tp in waves[w])
        # someone moves a partition of wave 1 by hand afterwards: the rollback must leave it alone
        tp = waves[0][0]
        spare = next(b for b in (1, 2, 3, 4, 5) if b not in stopped[tp])
        by_hand = [spare] + stopped[tp][1:]
        submit_by_hand(zk, [(tp[0], tp[1], by_hand)])
        assert cluster.wait_until(lambda: zk.exists("/admin/reassign_partitions") is None
                                  and assignment(zk)[tp] == by_hand, 60)
        assert cluster.wait_idle(60)
        throttles_before = throttle_configs(zk)     # the killed run's, which the rollback must leave as found
        # the decommission's approval recorded broker 6 as retiring (issue 39); its rollback restores
        # replicas onto it (not refused) and, approved, releases it
        retiring_file = tmp_path / "runs" / "retiring_brokers.json"
        [entries] = json.loads(retiring_file.read_text())["clusters"].values()
        assert list(entries) == ["6"] and entries["6"]["stage"] == "approved", entries
        # named as <dag_id>/<run id> under the same run_root (a path works too: the refusals below)
        result = run_dag("rollback", conf(zk_connection(zk_server, chroot), tmp_path / "runs",
                                          from_run=f"decommission_brokers/{run_folder.name}"), answer="Approve")
        assert result.state == "success", result.task_states
        after = assignment(zk)
        for p in moved:
            if p != tp:
                assert after[p] == original[p], (p, original[p], after[p])
        assert after[tp] == by_hand
        assert {p: r for p, r in after.items() if p not in moved} == {p: r for p, r in original.items()
                                                                       if p not in moved}
        summary = json.loads((result.run_folder / "plan" / "summary.json").read_text())
        assert summary["replica_moves"] > 0 and summary["params"]["left_alone"] == "1"
        report = (result.run_folder / "plan_report.md").read_text()
        assert f"{tp[0]}-{tp[1]}: now {by_hand}" in report
        assert zk.exists("/admin/reassign_partitions") is None
        assert throttle_configs(zk) == throttles_before
        assert json.loads(retiring_file.read_text())["clusters"] == {}       # released by the rollback
    finally:
        zk.stop()
        zk.close()
        cluster.stop()


@pytest.fixture
def drifted(zk_server, tmp_path: Path, zk_via) -> Iterator[tuple]:
    """orders-0 moved by hand; the JSON that restores it; a plan of that rollback made without Spark."""
    chroot = new_chroot(zk_server)
    cluster = start_cluster(zk_server.connect_string + chroot)
    zk = plain_client(zk_server, chroot)
    original = assignment(zk)[("orders", 0)]
    submit_by_hand(zk, [("orders", 0, [3] + original[1:])])
    assert cluster.wait_until(lambda: zk.exists("/admin/reassign_partitions") is None
                              and assignment(zk)[("orders", 0)] == [3] + original[1:], 60)
    assert cluster.wait_idle(60)
    text = json.dumps({"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": original}]})
    from planning.kernels.rollback import plan_rollback
    from kafka_zk.admin.reassignment import targets_from_file_entries

    write_kernel_plan(zk_server.connect_string + chroot, tmp_path / "plan",
                      lambda snap, sizes: plan_rollback(snap, targets_from_file_entries(decode_reassignment_file(text)),
                                                        None, sizes), THROTTLE)
    yield cluster, zk, zk_connection(zk_server, chroot, zk_via), tmp_path / "runs", text, original
    zk.stop()
    zk.close()
    cluster.stop()


@pytest.mark.parametrize("zk_via", ["3.5", "3.4"], indirect=True)
def test_a_kafka_format_json_is_restored_through_old_zookeeper_servers(drifted, tmp_path: Path, zk_via) -> None:
    from cli.local_run import run_dag

    cluster, zk, conn_id, run_root, text, original = drifted
    result = run_dag("rollback", conf(conn_id, run_root, rollback_json=text, plan_from=str(tmp_path / "plan"),
                                      **through_proxy(zk_via)), answer="Approve")
    assert result.state == "success", result.task_states
    assert assignment(zk)[("orders", 0)] == original
    assert zk.exists("/admin/reassign_partitions") is None and throttle_configs(zk) == {}


def test_dry_run_and_rejection_write_nothing(drifted, tmp_path: Path) -> None:
    cluster, zk, conn_id, run_root, text, _ = drifted
    run_conf = conf(conn_id, run_root, rollback_json=text, plan_from=str(tmp_path / "plan"))
    check_dry_run_writes_nothing("rollback", run_conf, zk)
    check_rejection_writes_nothing("rollback", run_conf, zk)


@pytest.mark.parametrize("params,why", [
    ({}, "give exactly one of from_run"),
    ({"from_run": "/nonexistent/run", "rollback_json": '{"version":1,"partitions":[]}'}, "give exactly one"),
    ({"from_run": "/nonexistent/run"}, "no plan.json in"),
    ({"from_run": "decommission_brokers/manual__2026-11-24T03:16:01+00:00"},
     "runs/decommission_brokers/manual__2026-11-24T03_16_01_00_00/plan"),   # <dag_id>/<run id> under run_root
    ({"rollback_json": '{"version": 1, "partitions": [}'}, "rollback_json:"),
])
def test_bad_inputs_are_refused_before_spark_and_any_write(drifted, capfd, params, why) -> None:
    from cli.local_run import run_dag

    cluster, zk, conn_id, run_root, _, _ = drifted
    before = data_tree(zk)
    result = run_dag("rollback", conf(conn_id, run_root, **params))
    assert result.state == "failed" and result.task_states["plan"] == "failed", result.task_states
    assert why in capfd.readouterr().out
    assert data_tree(zk) == before
