"""change_replication_factor end to end (Airflow dag.test, Spark local once, the emulator on a real
ZooKeeper). The scenario's topics (tests/dags/scenario.py) on six brokers in three racks:
``payments`` has RF 2, ``orders`` RF 3.

RF 2 → 3 (Spark): every payments partition gains one replica in a rack it lacked, at the end of
its list (preferred leader unchanged), the ISR is full at the end, other topics untouched.
RF 3 → 2 (kernel plan, through ZooKeeper 3.8 and the 3.5/3.4 proxies): one replica dropped per
orders partition, preferred leaders unchanged, ISR full. Refusals before anything is written:
an RF above the brokers, lowering below a topic's min.insync.replicas. The shared checks: dry
run, rejection, stale plan, throttles after a failure mid-wave. Final state read with plain kazoo.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tests.dags.conftest import OLD_SERVERS, new_chroot, plain_client, through_proxy, zk_connection
from tests.dags.moving_runbook import (assert_settled, check_dry_run_writes_nothing,
                                       check_failure_mid_wave_with_a_kernel_plan, check_rejection_writes_nothing,
                                       check_stale_plan_refused, emulated, set_user_throttles, start,
                                       write_kernel_plan)
from tests.dags.scenario import RACKS, THROTTLE, assignment, data_tree, write_sizes
from tests.zk_helpers import set_config_by_hand

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
DAG_ID = "change_replication_factor"


def conf(conn_id: str, run_root: Path, topics: list[str], rf: int, **extra) -> dict:
    return {"zk_conn_id": conn_id, "spark_conn_id": "spark_local", "topics": topics, "replication_factor": rf,
            "run_root": str(run_root), "throttle_bytes_per_sec": THROTTLE, "max_moves_per_broker": 2,
            "poll_interval_s": 0.3, **extra}


def topic_assignment(zk, topic: str) -> dict[int, list[int]]:
    return {p: r for (t, p), r in assignment(zk).items() if t == topic}


@pytest.fixture(scope="module")
def spark_run(zk_server, tmp_path_factory, airflow_db):
    """Spark plans RF 2 → 3 for payments, a second person approves, the waves run."""
    from cli.local_run import run_dag

    chroot = new_chroot(zk_server)
    cluster = start(zk_server.connect_string + chroot, RACKS)
    zk = plain_client(zk_server, chroot)
    run_root = tmp_path_factory.mktemp("change_rf")
    users = set_user_throttles(zk)
    before = assignment(zk)
    result = run_dag(DAG_ID, conf(zk_connection(zk_server, chroot), run_root, ["payments"], 3,
                                  sizes_file=write_sizes(cluster, run_root)), answer="Approve", approver="alice.sre")
    yield result, zk, before, users
    zk.stop()
    zk.close()
    cluster.stop()


@pytest.fixture
def env(zk_server, tmp_path: Path, zk_via) -> Iterator[tuple]:
    with emulated(zk_server, RACKS, zk_via) as (cluster, zk, conn_id, connect_string):
        yield cluster, zk, conn_id, tmp_path / "runs", connect_string


def test_raising_rf_two_to_three_adds_a_replica_in_the_missing_rack_and_keeps_the_preferred_leader(
        spark_run) -> None:
    result, zk, before, users = spark_run
    assert result.state == "success", result.task_states
    assert_settled(zk, result, before, users)                 # targets reached, every ISR full, leaders preferred
    for p, replicas in topic_assignment(zk, "payments").items():
        old = before[("payments", p)]
        assert len(replicas) == 3 and replicas[:2] == old, (p, old, replicas)
        assert RACKS[replicas[2]] not in {RACKS[b] for b in old}, (p, old, replicas)   # a rack it lacked
    assert {tp: r for tp, r in assignment(zk).items() if tp[0] != "payments"} == \
        {tp: r for tp, r in before.items() if tp[0] != "payments"}
    assert "Change replication factor plan" in (result.run_folder / "plan_report.md").read_text()


@pytest.mark.parametrize("zk_via", OLD_SERVERS, indirect=True)  # its ZooKeeper steps on 3.8, 3.5 and 3.4
def test_lowering_rf_three_to_two_keeps_the_preferred_leaders_and_full_isrs(env, tmp_path: Path, zk_via) -> None:
    from cli.local_run import run_dag
    from planning.kernels.replication import plan_change_replication_factor

    cluster, zk, conn_id, run_root, connect = env
    write_kernel_plan(connect, tmp_path / "plan",
                      lambda snap, sizes: plan_change_replication_factor(snap, ["orders"], 2, sizes), THROTTLE)
    before = assignment(zk)
    result = run_dag(DAG_ID, conf(conn_id, run_root, ["orders"], 2, plan_from=str(tmp_path / "plan"),
                                  **through_proxy(zk_via)), answer="Approve")
    assert result.state == "success", result.task_states
    assert_settled(zk, result, before, {})
    for p, replicas in topic_assignment(zk, "orders").items():
        old = before[("orders", p)]
        assert len(replicas) == 2 and set(replicas) < set(old) and replicas[0] == old[0], (p, old, replicas)


def test_an_rf_above_the_brokers_is_refused_before_spark_and_any_write(env) -> None:
    from cli.local_run import run_dag

    cluster, zk, conn_id, run_root, _ = env
    before = data_tree(zk)
    result = run_dag(DAG_ID, conf(conn_id, run_root, ["payments"], 7))
    assert result.state == "failed" and result.task_states["plan"] == "failed", result.task_states
    assert not (result.run_folder / "plan" / "plan.json").exists()
    assert data_tree(zk) == before


def test_lowering_below_min_insync_replicas_is_refused_before_any_write(env, capfd) -> None:
    from cli.local_run import run_dag

    cluster, zk, conn_id, run_root, _ = env
    set_config_by_hand(zk, "topics/orders", {"min.insync.replicas": "3"})
    before = data_tree(zk)
    result = run_dag(DAG_ID, conf(conn_id, run_root, ["orders"], 2))
    assert result.state == "failed" and result.task_states["plan"] == "failed", result.task_states
    assert "below min.insync.replicas of orders (min.insync.replicas=3)" in capfd.readouterr().out
    assert data_tree(zk) == before


def test_dry_run_writes_nothing(env, spark_run) -> None:
    cluster, zk, conn_id, run_root, _ = env
    check_dry_run_writes_nothing(DAG_ID, conf(conn_id, run_root, ["payments"], 3,
                                              plan_from=str(spark_run[0].run_folder / "plan")), zk)


def test_rejection_writes_nothing(env, spark_run) -> None:
    cluster, zk, conn_id, run_root, _ = env
    check_rejection_writes_nothing(DAG_ID, conf(conn_id, run_root, ["payments"], 3,
                                                plan_from=str(spark_run[0].run_folder / "plan")), zk)


def test_stale_plan_is_refused(env, spark_run) -> None:
    cluster, zk, conn_id, run_root, _ = env
    plan_dir = spark_run[0].run_folder / "plan"
    check_stale_plan_refused(DAG_ID, conf(conn_id, run_root, ["payments"], 3, plan_from=str(plan_dir)), zk, cluster,
                             plan_dir, sorted(RACKS))


def test_a_failure_mid_wave_keeps_then_restores_the_throttles(zk_server, tmp_path: Path, airflow_db) -> None:
    from planning.kernels.replication import plan_change_replication_factor

    check_failure_mid_wave_with_a_kernel_plan(
        zk_server, tmp_path, RACKS, DAG_ID, lambda snap, sizes: plan_change_replication_factor(snap, ["payments"], 3, sizes),
        lambda conn_id, run_root, **extra: conf(conn_id, run_root, ["payments"], 3, **extra))
