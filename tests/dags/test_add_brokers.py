"""add_brokers end to end (Airflow dag.test, Spark local once, the emulator on a real ZooKeeper).

The scenario's six brokers (tests/dags/scenario.py: 38 replicas, broker 6 carrying 11) plus two new
empty brokers, 7 (rack c) and 8 (rack a). The runbook must move the least that brings every broker
within one replica of the others — 9 replica moves, all onto the new brokers, each new broker
within ±1 of the mean — and leave every ISR full, no admin node and only the user's throttles.
The cheaper runs (dry run, rejection, stale plan, a failure mid-wave) reuse a plan with plan_from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest

from tests.dags.conftest import new_chroot, plain_client, through_proxy, zk_connection
from tests.dags.moving_runbook import (assert_settled, check_dry_run_writes_nothing, check_failure_mid_wave_restores_throttles,
                                       check_rejection_writes_nothing, check_stale_plan_refused, counts,
                                       set_user_throttles, start, write_kernel_plan)
from tests.dags.scenario import RACKS, THROTTLE, assignment, data_tree, write_sizes

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
NEW = {7: "c", 8: "a"}
BROKERS = {**RACKS, **NEW}


def conf(conn_id: str, run_root: Path, **extra) -> dict:
    return {"zk_conn_id": conn_id, "spark_conn_id": "spark_local", "new_brokers": sorted(NEW),
            "run_root": str(run_root), "throttle_bytes_per_sec": THROTTLE, "max_moves_per_broker": 2,
            "poll_interval_s": 0.3, **extra}


def minimum_moves(before: dict[int, int]) -> int:
    """Fewest replica moves that make every broker's count within one of the others': the brokers
    that keep the larger share are the most loaded ones; the rest of the excess must move."""
    total, n = sum(before.values()), len(before)
    shares = [total // n + (1 if i < total % n else 0) for i in range(n)]
    return sum(max(0, c - s) for c, s in zip(sorted(before.values(), reverse=True), shares))


@pytest.fixture(scope="module")
def spark_run(zk_server, tmp_path_factory, airflow_db):
    """Spark plans, a human approves, the waves run; the user's throttles were set before."""
    from cli.local_run import run_dag

    chroot = new_chroot(zk_server)
    cluster = start(zk_server.connect_string + chroot, BROKERS)
    zk = plain_client(zk_server, chroot)
    run_root = tmp_path_factory.mktemp("add_brokers")
    users = set_user_throttles(zk)
    before = assignment(zk)
    before_counts = {b: counts(zk).get(b, 0) for b in BROKERS}
    result = run_dag("add_brokers", conf(zk_connection(zk_server, chroot), run_root,
                                         sizes_file=write_sizes(cluster, run_root)),
                     answer="Approve", approver="alice.sre")
    yield result, zk, before, before_counts, users
    zk.stop()
    zk.close()
    cluster.stop()


@pytest.fixture
def env(zk_server, tmp_path: Path) -> Iterator[tuple]:
    chroot = new_chroot(zk_server)
    cluster = start(zk_server.connect_string + chroot, BROKERS)
    zk = plain_client(zk_server, chroot)
    yield cluster, zk, zk_connection(zk_server, chroot), tmp_path / "runs"
    zk.stop()
    zk.close()
    cluster.stop()


def test_new_brokers_take_their_share_with_the_fewest_moves(spark_run) -> None:
    result, zk, before, before_counts, users = spark_run
    assert result.answer_error is None
    assert result.state == "success", result.task_states
    assert_settled(zk, result, before, users)
    after = {b: counts(zk).get(b, 0) for b in BROKERS}
    mean = sum(after.values()) / len(after)
    for b in NEW:
        assert abs(after[b] - mean) <= 1, (b, after, mean)
    assert max(after.values()) - min(after.values()) <= 1, after
    moved = sum(len(set(r) - set(before[tp])) for tp, r in assignment(zk).items())
    assert moved == minimum_moves(before_counts) == 9
    summary = json.loads((result.run_folder / "plan" / "summary.json").read_text())
    assert summary["operation"] == "add-brokers" and summary["replica_moves"] == moved
    # every new replica went onto a new broker; no partition spans fewer racks than before
    for tp, replicas in assignment(zk).items():
        assert set(replicas) - set(before[tp]) <= set(NEW), tp
        assert len({BROKERS[b] for b in replicas}) >= len({BROKERS[b] for b in before[tp]}), (tp, replicas)
    assert "Add brokers plan — new brokers 7, 8" in (result.run_folder / "plan_report.md").read_text()
    # the final report's lines are this runbook's steps only: no controller line (no move_controller step)
    final = (result.run_folder / "final_report.md").read_text()
    assert "- final verify: passed" in final and "controller:" not in final and "move_controller" not in final
    assert "Controller:" not in (result.run_folder / "final_report.html").read_text()
    assert (result.run_folder / "notification.txt").read_text().startswith(
        "Add brokers — new brokers 7, 8: SUCCEEDED")


def test_dry_run_writes_nothing(env, spark_run) -> None:
    cluster, zk, conn_id, run_root = env
    check_dry_run_writes_nothing("add_brokers", conf(conn_id, run_root,
                                                     plan_from=str(spark_run[0].run_folder / "plan")), zk)


def test_rejection_writes_nothing(env, spark_run) -> None:
    cluster, zk, conn_id, run_root = env
    check_rejection_writes_nothing("add_brokers", conf(conn_id, run_root,
                                                       plan_from=str(spark_run[0].run_folder / "plan")), zk)


def test_stale_plan_is_refused(env, spark_run) -> None:
    cluster, zk, conn_id, run_root = env
    plan_dir = spark_run[0].run_folder / "plan"
    check_stale_plan_refused("add_brokers", conf(conn_id, run_root, plan_from=str(plan_dir)), zk, cluster,
                             plan_dir, sorted(RACKS))


def test_unregistered_new_broker_is_refused_before_spark_and_any_write(env) -> None:
    from cli.local_run import run_dag

    cluster, zk, conn_id, run_root = env
    before = data_tree(zk)
    result = run_dag("add_brokers", conf(conn_id, run_root, new_brokers=[7, 9]), answer="Approve")
    assert result.state == "failed" and result.task_states["plan"] == "failed"
    assert not (result.run_folder / "plan" / "plan.json").exists()
    assert data_tree(zk) == before


@pytest.mark.parametrize("zk_via", ["3.5", "3.4"], indirect=True)   # 3.8: the Spark run above
def test_the_runbook_runs_to_the_end_through_old_zookeeper_servers(zk_server, tmp_path: Path, zk_via) -> None:
    from cli.local_run import run_dag
    from planning.kernels.add_and_move import plan_add_brokers

    chroot = new_chroot(zk_server)
    cluster = start(zk_server.connect_string + chroot, BROKERS)
    zk = plain_client(zk_server, chroot)
    try:
        users = set_user_throttles(zk)
        before = assignment(zk)
        write_kernel_plan(zk_server.connect_string + chroot, tmp_path / "plan",
                          lambda snap, sizes: plan_add_brokers(snap, sorted(NEW), sizes), THROTTLE)
        result = run_dag("add_brokers", conf(zk_connection(zk_server, chroot, zk_via), tmp_path / "runs",
                                             plan_from=str(tmp_path / "plan"), **through_proxy(zk_via)), answer="Approve")
        assert result.state == "success", result.task_states
        assert_settled(zk, result, before, users)
        assert all(counts(zk).get(b, 0) > 0 for b in NEW)
    finally:
        zk.stop()
        zk.close()
        cluster.stop()


def test_a_failure_mid_wave_keeps_then_restores_the_throttles(zk_server, tmp_path: Path, airflow_db) -> None:
    from planning.kernels.add_and_move import plan_add_brokers

    chroot = new_chroot(zk_server)
    cluster = start(zk_server.connect_string + chroot, BROKERS, speed=40.0)   # a wave takes ~10-30 s
    zk = plain_client(zk_server, chroot)
    try:
        users = set_user_throttles(zk)
        write_kernel_plan(zk_server.connect_string + chroot, tmp_path / "plan",
                          lambda snap, sizes: plan_add_brokers(snap, sorted(NEW), sizes), THROTTLE)
        check_failure_mid_wave_restores_throttles(
            "add_brokers", conf(zk_connection(zk_server, chroot), tmp_path / "runs",
                                plan_from=str(tmp_path / "plan")), zk, users)
    finally:
        zk.stop()
        zk.close()
        cluster.stop()
