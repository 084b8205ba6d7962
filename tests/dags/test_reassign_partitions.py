"""reassign_partitions end to end (Airflow dag.test, Spark local once, the emulator on a real
ZooKeeper). The scenario's topics (tests/dags/scenario.py) on six brokers in three racks.

A hand-written JSON in Kafka's format (one RF change among its entries) runs in throttled waves
and every partition ends exactly as the JSON says, ISR full, the RF change listed. The same JSON
with each kind of mistake is refused at the plan step, before Spark and before any write
(ZooKeeper unchanged, read with plain kazoo). The shared checks: dry run, rejection, stale plan,
throttles after a failure mid-wave; and one run through the 3.5/3.4 proxies.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest

from kafka_zk.codecs import decode_reassignment_file
from tests.dags.conftest import new_chroot, plain_client, through_proxy, zk_connection
from tests.dags.moving_runbook import (assert_settled, check_dry_run_writes_nothing,
                                       check_failure_mid_wave_with_a_kernel_plan, check_rejection_writes_nothing,
                                       check_stale_plan_refused, emulated, set_user_throttles, start,
                                       write_kernel_plan)
from tests.dags.scenario import RACKS, THROTTLE, assignment, data_tree, write_sizes

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
DAG_ID = "reassign_partitions"
# orders-0 [6,1,2] -> [3,1,2]; payments-0 [6,4] -> [5,4,3] (RF 2 -> 3); events-2 [3,1,5] -> [3,1,2]
ENTRIES = [{"topic": "orders", "partition": 0, "replicas": [3, 1, 2]},
           {"topic": "payments", "partition": 0, "replicas": [5, 4, 3], "log_dirs": ["any", "any", "any"]},
           {"topic": "events", "partition": 2, "replicas": [3, 1, 2]}]
GOOD = json.dumps({"version": 1, "partitions": ENTRIES})


def conf(conn_id: str, run_root: Path, text: str = GOOD, **extra) -> dict:
    return {"zk_conn_id": conn_id, "spark_conn_id": "spark_local", "reassignment_json": text,
            "run_root": str(run_root), "throttle_bytes_per_sec": THROTTLE, "max_moves_per_broker": 2,
            "poll_interval_s": 0.3, **extra}


def with_entry(i: int, **change) -> str:
    entries = [dict(e) for e in ENTRIES]
    entries[i].update(change)
    return json.dumps({"version": 1, "partitions": entries})


@pytest.fixture(scope="module")
def spark_run(zk_server, tmp_path_factory, airflow_db):
    from cli.local_run import run_dag

    chroot = new_chroot(zk_server)
    cluster = start(zk_server.connect_string + chroot, RACKS)
    zk = plain_client(zk_server, chroot)
    run_root = tmp_path_factory.mktemp("reassign")
    users = set_user_throttles(zk)
    before = assignment(zk)
    result = run_dag(DAG_ID, conf(zk_connection(zk_server, chroot), run_root,
                                  sizes_file=write_sizes(cluster, run_root)), answer="Approve", approver="alice.sre")
    yield result, zk, before, users
    zk.stop()
    zk.close()
    cluster.stop()


@pytest.fixture(scope="module")
def shared_cluster(zk_server, tmp_path_factory, airflow_db):
    """One cluster for the refusal table (each refusal leaves it as it was)."""
    chroot = new_chroot(zk_server)
    cluster = start(zk_server.connect_string + chroot, RACKS)
    zk = plain_client(zk_server, chroot)
    yield zk, zk_connection(zk_server, chroot), tmp_path_factory.mktemp("refusals")
    zk.stop()
    zk.close()
    cluster.stop()


@pytest.fixture
def env(zk_server, tmp_path: Path, zk_via) -> Iterator[tuple]:
    with emulated(zk_server, RACKS, zk_via) as (cluster, zk, conn_id, connect_string):
        yield cluster, zk, conn_id, tmp_path / "runs", connect_string


def test_a_hand_written_json_runs_in_throttled_waves_to_exactly_its_targets(spark_run) -> None:
    result, zk, before, users = spark_run
    assert result.state == "success", result.task_states
    assert_settled(zk, result, before, users)
    after = assignment(zk)
    for e in ENTRIES:
        assert after[(e["topic"], e["partition"])] == e["replicas"], e
    assert {tp: r for tp, r in after.items() if tp not in {(e["topic"], e["partition"]) for e in ENTRIES}} == \
        {tp: r for tp, r in before.items() if tp not in {(e["topic"], e["partition"]) for e in ENTRIES}}
    assert json.loads((result.run_folder / "reassignment.json").read_text()) == json.loads(GOOD)


MISTAKES = [
    ("not json", '{"version": 1, "partitions": [', "reassignment_json"),
    ("version 2", json.dumps({"version": 2, "partitions": ENTRIES}), "version 2"),
    ("no partitions", json.dumps({"version": 1, "partitions": []}), "cannot be empty"),
    ("unknown topic", with_entry(0, topic="ordres"), "non-existent partitions: ordres-0"),
    ("unknown partition", with_entry(0, partition=60), "non-existent partitions: orders-60"),
    ("unknown broker", with_entry(0, replicas=[3, 1, 9]), "non-existent brokerIDs: 9"),
    ("duplicate replica", with_entry(0, replicas=[3, 3, 2]), "may not contain duplicate entries"),
    ("empty replicas", with_entry(0, replicas=[]), "cannot be empty"),
    ("duplicate partition", json.dumps({"version": 1, "partitions": ENTRIES + [ENTRIES[0]]}),
     "duplicate topic partitions: orders-0"),
    ("log_dirs placement", with_entry(0, log_dirs=["/data/a", "any", "any"]), "log_dirs placement is not possible"),
    ("log_dirs length", with_entry(0, log_dirs=["any"]), "different from size of log dirs"),
]


@pytest.mark.parametrize("case,text,why", MISTAKES, ids=[m[0] for m in MISTAKES])
def test_each_kind_of_mistake_is_refused_before_any_write(shared_cluster, capfd, case, text, why) -> None:
    from cli.local_run import run_dag

    zk, conn_id, root = shared_cluster
    before = data_tree(zk)
    result = run_dag(DAG_ID, conf(conn_id, root / case.replace(" ", "_"), text))
    assert result.state == "failed" and result.task_states["plan"] == "failed", result.task_states
    assert result.task_states["approve"] == "upstream_failed"
    out = capfd.readouterr().out
    assert why in out, out[-3000:]
    assert not (result.run_folder / "plan" / "plan.json").exists()
    assert data_tree(zk) == before


@pytest.mark.parametrize("zk_via", ["3.5", "3.4"], indirect=True)   # 3.8: the Spark run above
def test_through_old_zookeeper_servers(env, tmp_path: Path, zk_via) -> None:
    from cli.local_run import run_dag
    from planning.kernels.user_json import plan_user_reassignment

    cluster, zk, conn_id, run_root, connect = env
    write_kernel_plan(connect, tmp_path / "plan",
                      lambda snap, sizes: plan_user_reassignment(snap, decode_reassignment_file(GOOD), sizes), THROTTLE)
    before = assignment(zk)
    result = run_dag(DAG_ID, conf(conn_id, run_root, plan_from=str(tmp_path / "plan"), **through_proxy(zk_via)),
                     answer="Approve")
    assert result.state == "success", result.task_states
    assert_settled(zk, result, before, {})


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
    from planning.kernels.user_json import plan_user_reassignment

    check_failure_mid_wave_with_a_kernel_plan(
        zk_server, tmp_path, RACKS, DAG_ID,
        lambda snap, sizes: plan_user_reassignment(snap, decode_reassignment_file(GOOD), sizes), conf)
