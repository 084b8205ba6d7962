"""move_topics end to end (Airflow dag.test, Spark local once, the emulator on a real ZooKeeper).
The scenario's topics (tests/dags/scenario.py) on six brokers in three racks; ``events`` moves
onto brokers 1, 2, 3 (one per rack).

Every events replica ends on the set, replicas already there stay in place (so the moves are
exactly the replicas outside the set: the minimum), ISRs full, other topics untouched. Through
the 3.5/3.4 proxies with a kernel plan. Refused before anything is written: an unregistered
destination broker, a set smaller than a partition's replicas. The shared checks: dry run,
rejection, stale plan, throttles after a failure mid-wave. Final state read with plain kazoo.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tests.dags.conftest import new_chroot, plain_client, through_proxy, zk_connection
from tests.dags.moving_runbook import (assert_settled, check_dry_run_writes_nothing,
                                       check_failure_mid_wave_with_a_kernel_plan, check_rejection_writes_nothing,
                                       check_stale_plan_refused, emulated, set_user_throttles, start,
                                       write_kernel_plan)
from tests.dags.scenario import RACKS, THROTTLE, assignment, data_tree, write_sizes

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
DAG_ID = "move_topics"
TARGET = [1, 2, 3]


def conf(conn_id: str, run_root: Path, brokers=TARGET, **extra) -> dict:
    return {"zk_conn_id": conn_id, "spark_conn_id": "spark_local", "topics": ["events"], "brokers": list(brokers),
            "run_root": str(run_root), "throttle_bytes_per_sec": THROTTLE, "max_moves_per_broker": 2,
            "poll_interval_s": 0.3, **extra}


def outside(before: dict) -> int:
    return sum(1 for (t, _), r in before.items() if t == "events" for b in r if b not in TARGET)


@pytest.fixture(scope="module")
def spark_run(zk_server, tmp_path_factory, airflow_db):
    from cli.local_run import run_dag

    chroot = new_chroot(zk_server)
    cluster = start(zk_server.connect_string + chroot, RACKS)
    zk = plain_client(zk_server, chroot)
    run_root = tmp_path_factory.mktemp("move_topics")
    users = set_user_throttles(zk)
    before = assignment(zk)
    result = run_dag(DAG_ID, conf(zk_connection(zk_server, chroot), run_root,
                                  sizes_file=write_sizes(cluster, run_root)), answer="Approve", approver="alice.sre")
    yield result, zk, before, users
    zk.stop()
    zk.close()
    cluster.stop()


@pytest.fixture
def env(zk_server, tmp_path: Path, zk_via) -> Iterator[tuple]:
    with emulated(zk_server, RACKS, zk_via) as (cluster, zk, conn_id, connect_string):
        yield cluster, zk, conn_id, tmp_path / "runs", connect_string


def assert_moved(zk, before: dict) -> None:
    for (t, p), replicas in assignment(zk).items():
        if t != "events":
            assert replicas == before[(t, p)], (t, p)
            continue
        old = before[(t, p)]
        assert set(replicas) <= set(TARGET), (p, replicas)
        assert set(old) & set(TARGET) <= set(replicas), (p, old, replicas)     # replicas on the set stay
        assert len({RACKS[b] for b in replicas}) == len(replicas), (p, replicas)


def test_topics_end_on_the_set_with_the_fewest_moves(spark_run) -> None:
    import json

    result, zk, before, users = spark_run
    assert result.state == "success", result.task_states
    assert_settled(zk, result, before, users)
    assert_moved(zk, before)
    summary = json.loads((result.run_folder / "plan" / "summary.json").read_text())
    assert summary["operation"] == "move-topics" and summary["replica_moves"] == outside(before) > 0


@pytest.mark.parametrize("zk_via", ["3.5", "3.4"], indirect=True)   # 3.8: the Spark run above
def test_through_old_zookeeper_servers(env, tmp_path: Path, zk_via) -> None:
    from cli.local_run import run_dag
    from planning.kernels.add_and_move import plan_move_topics

    cluster, zk, conn_id, run_root, connect = env
    write_kernel_plan(connect, tmp_path / "plan", lambda snap, sizes: plan_move_topics(snap, ["events"], TARGET, sizes),
                      THROTTLE)
    before = assignment(zk)
    result = run_dag(DAG_ID, conf(conn_id, run_root, plan_from=str(tmp_path / "plan"), **through_proxy(zk_via)),
                     answer="Approve")
    assert result.state == "success", result.task_states
    assert_settled(zk, result, before, {})
    assert_moved(zk, before)


@pytest.mark.parametrize("brokers,why", [([1, 2, 9], "not registered"), ([1, 2], "cannot hold partitions with 3")])
def test_a_bad_broker_set_is_refused_before_spark_and_any_write(env, capfd, brokers, why) -> None:
    from cli.local_run import run_dag

    cluster, zk, conn_id, run_root, _ = env
    before = data_tree(zk)
    result = run_dag(DAG_ID, conf(conn_id, run_root, brokers=brokers))
    assert result.state == "failed" and result.task_states["plan"] == "failed", result.task_states
    assert why in capfd.readouterr().out
    assert data_tree(zk) == before


def test_dry_run_writes_nothing(env, spark_run) -> None:
    cluster, zk, conn_id, run_root, _ = env
    check_dry_run_writes_nothing(DAG_ID, conf(conn_id, run_root, plan_from=str(spark_run[0].run_folder / "plan")), zk)


def test_rejection_writes_nothing(env, spark_run) -> None:
    cluster, zk, conn_id, run_root, _ = env
    check_rejection_writes_nothing(DAG_ID, conf(conn_id, run_root, plan_from=str(spark_run[0].run_folder / "plan")),
                                   zk)


def test_stale_plan_is_refused(env, spark_run) -> None:
    cluster, zk, conn_id, run_root, _ = env
    plan_dir = spark_run[0].run_folder / "plan"
    check_stale_plan_refused(DAG_ID, conf(conn_id, run_root, plan_from=str(plan_dir)), zk, cluster, plan_dir,
                             sorted(RACKS))


def test_a_failure_mid_wave_keeps_then_restores_the_throttles(zk_server, tmp_path: Path, airflow_db) -> None:
    from planning.kernels.add_and_move import plan_move_topics

    check_failure_mid_wave_with_a_kernel_plan(
        zk_server, tmp_path, RACKS, DAG_ID, lambda snap, sizes: plan_move_topics(snap, ["events"], TARGET, sizes), conf)
