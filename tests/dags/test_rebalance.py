"""rebalance end to end (Airflow dag.test, Spark local once, the emulator on a real ZooKeeper).

The scenario's six brokers carry 7, 6, 4, 5, 5 and 11 replicas (spread 7), bytes spread 167 %,
preferred leaders spread 4. With a budget of 6 replicas the runbook reaches the targets (replica
spread 1, bytes within 50 %, leader spread 1) with the fewest moves, 4; with a budget of 2 it moves
exactly 2 and the spread still shrinks. The cheaper runs (budget 2, dry run, rejection, stale plan,
a failure mid-wave) use plans handed over with plan_from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest

from tests.dags.conftest import OLD_SERVERS, new_chroot, plain_client, through_proxy, zk_connection
from tests.dags.moving_runbook import (SIZES, assert_settled, check_dry_run_writes_nothing,
                                       check_failure_mid_wave_restores_throttles, check_rejection_writes_nothing,
                                       check_stale_plan_refused, counts, set_user_throttles, start, write_kernel_plan)
from tests.dags.scenario import RACKS, THROTTLE, assignment, write_sizes

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
BUDGET = 6
TARGETS = {"target_replica_spread": 1, "target_bytes_spread_pct": 50, "target_leader_spread": 1}


def conf(conn_id: str, run_root: Path, **extra) -> dict:
    return {"zk_conn_id": conn_id, "spark_conn_id": "spark_local", "max_replicas_moved": BUDGET,
            "run_root": str(run_root), "throttle_bytes_per_sec": THROTTLE, "max_moves_per_broker": 2,
            "poll_interval_s": 0.3, **TARGETS, **extra}


def spread(values) -> int:
    values = list(values)
    return max(values) - min(values)


def bytes_per_broker(zk) -> dict[int, int]:
    out = {b: 0 for b in RACKS}
    for (t, p), replicas in assignment(zk).items():
        for b in replicas:
            out[b] += SIZES[(t, p)]
    return out


def preferred_leaders(zk) -> dict[int, int]:
    out = {b: 0 for b in RACKS}
    for replicas in assignment(zk).values():
        out[replicas[0]] += 1
    return out


def moved_replicas(zk, before) -> int:
    return sum(len(set(r) - set(before[tp])) for tp, r in assignment(zk).items())


@pytest.fixture(scope="module")
def spark_run(zk_server, tmp_path_factory, airflow_db):
    from cli.local_run import run_dag

    chroot = new_chroot(zk_server)
    cluster = start(zk_server.connect_string + chroot, RACKS)
    zk = plain_client(zk_server, chroot)
    run_root = tmp_path_factory.mktemp("rebalance")
    users = set_user_throttles(zk)
    before = assignment(zk)
    result = run_dag("rebalance", conf(zk_connection(zk_server, chroot), run_root,
                                       sizes_file=write_sizes(cluster, run_root)),
                     answer="Approve", approver="alice.sre")
    yield result, zk, before, users
    zk.stop()
    zk.close()
    cluster.stop()


@pytest.fixture
def env(zk_server, tmp_path: Path, zk_via) -> Iterator[tuple]:
    chroot = new_chroot(zk_server)
    cluster = start(zk_server.connect_string + chroot, RACKS)
    zk = plain_client(zk_server, chroot)
    yield cluster, zk, zk_connection(zk_server, chroot, zk_via), tmp_path / "runs", zk_server.connect_string + chroot
    zk.stop()
    zk.close()
    cluster.stop()


def test_spread_shrinks_to_the_target_within_the_budget_with_the_fewest_moves(spark_run) -> None:
    result, zk, before, users = spark_run
    assert result.answer_error is None
    assert result.state == "success", result.task_states
    assert_settled(zk, result, before, users)
    assert spread(counts(zk).get(b, 0) for b in RACKS) <= 1
    assert spread(preferred_leaders(zk).values()) <= 1
    sizes = bytes_per_broker(zk)
    assert spread(sizes.values()) / (sum(sizes.values()) / len(sizes)) <= 0.5
    # 7,6,4,5,5,11 → 7,7,6,6,6,6 at best: 4 replicas must move, and only 4 do, within the budget of 6
    assert moved_replicas(zk, before) == 4 <= BUDGET
    summary = json.loads((result.run_folder / "plan" / "summary.json").read_text())
    assert summary["operation"] == "rebalance" and summary["replica_moves"] == 4
    report = (result.run_folder / "plan_report.md").read_text()
    assert "# Rebalance plan" in report and "replica spread 7 → 1" in report
    assert f"budget {BUDGET} replica(s): used 4 replica move(s)" in report and "target reached" in report


@pytest.mark.parametrize("zk_via", OLD_SERVERS, indirect=True)  # its ZooKeeper steps on 3.8, 3.5 and 3.4
def test_a_binding_budget_is_spent_exactly_and_the_spread_still_shrinks(env, tmp_path: Path, zk_via) -> None:
    from cli.local_run import run_dag
    from planning.kernels.budget_rebalance import RebalanceBudget, RebalanceTarget, plan_budget_rebalance

    cluster, zk, conn_id, run_root, connect = env
    target = RebalanceTarget(1, 0.5, 1)
    write_kernel_plan(connect, tmp_path / "plan",
                      lambda snap, sizes: plan_budget_rebalance(snap, sizes, RebalanceBudget(2), target).plan,
                      THROTTLE)
    before = assignment(zk)
    result = run_dag("rebalance", conf(conn_id, run_root, max_replicas_moved=2,
                                       plan_from=str(tmp_path / "plan"), **through_proxy(zk_via)), answer="Approve")
    assert result.state == "success", result.task_states
    assert_settled(zk, result, before, {})
    assert moved_replicas(zk, before) == 2
    assert 1 < spread(counts(zk).get(b, 0) for b in RACKS) < 7


def test_dry_run_writes_nothing(env, spark_run) -> None:
    cluster, zk, conn_id, run_root, _ = env
    check_dry_run_writes_nothing("rebalance", conf(conn_id, run_root,
                                                   plan_from=str(spark_run[0].run_folder / "plan")), zk)


def test_rejection_writes_nothing(env, spark_run) -> None:
    cluster, zk, conn_id, run_root, _ = env
    check_rejection_writes_nothing("rebalance", conf(conn_id, run_root,
                                                     plan_from=str(spark_run[0].run_folder / "plan")), zk)


def test_stale_plan_is_refused(env, spark_run) -> None:
    cluster, zk, conn_id, run_root, _ = env
    plan_dir = spark_run[0].run_folder / "plan"
    check_stale_plan_refused("rebalance", conf(conn_id, run_root, plan_from=str(plan_dir)), zk, cluster, plan_dir,
                             sorted(RACKS))


def test_a_plan_made_with_another_budget_is_refused_before_any_write(env, spark_run) -> None:
    from cli.local_run import run_dag

    cluster, zk, conn_id, run_root, _ = env
    result = run_dag("rebalance", conf(conn_id, run_root, max_replicas_moved=50,
                                       plan_from=str(spark_run[0].run_folder / "plan")), answer="Approve")
    assert result.state == "failed" and result.task_states["plan"] == "failed"
    assert result.task_states["set_throttles"] == "upstream_failed"


def test_a_failure_mid_wave_keeps_then_restores_the_throttles(zk_server, tmp_path: Path, airflow_db) -> None:
    from planning.kernels.budget_rebalance import RebalanceBudget, RebalanceTarget, plan_budget_rebalance

    chroot = new_chroot(zk_server)
    cluster = start(zk_server.connect_string + chroot, RACKS, speed=40.0)   # a wave takes ~10-30 s
    zk = plain_client(zk_server, chroot)
    try:
        users = set_user_throttles(zk)
        write_kernel_plan(zk_server.connect_string + chroot, tmp_path / "plan",
                          lambda snap, sizes: plan_budget_rebalance(snap, sizes, RebalanceBudget(BUDGET),
                                                                    RebalanceTarget(1, 0.5, 1)).plan, THROTTLE)
        check_failure_mid_wave_restores_throttles(
            "rebalance", conf(zk_connection(zk_server, chroot), tmp_path / "runs",
                              plan_from=str(tmp_path / "plan")), zk, users)
    finally:
        zk.stop()
        zk.close()
        cluster.stop()
