"""The decommission, delete and election runbooks end to end on a ZooKeeper that requires SASL.

Real Airflow (``dag.test()``), the emulator's brokers and controller logged in as the broker
principal with ``set_acl``, the runbooks' connection logged in as the same principal (as Kafka's
admin tools run with the brokers' JAAS identity). Read back with plain kazoo: the runbook did its
job, every admin node we created was acted on and deleted by the emulated controller, and every
node in the cluster carries the ACLs Kafka 2.4 sets. Then the known secret is looked for in every
run folder, the Airflow home (task logs, the metadata DB with rendered templates and XComs) and
everything the runs logged or printed: it must be nowhere.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk.audit import AuditLog
from tests.dags.scenario import REMOVED, THROTTLE, TOPICS, assignment, states, throttle_configs, write_sizes
from tests.secured.conftest import (BROKER, BROKER_SECRET, JAAS_CLIENT, all_acls, expected_acls,
                                    new_secured_chroot, sasl_client, secured_connection)

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
SECRETS = (BROKER_SECRET, JAAS_CLIENT.strip())
RACKS6 = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}


@pytest.fixture(scope="module")
def run_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("secured_runs")


@pytest.fixture
def secured_env(secured_zk, caplog, capfd):
    """(cluster, connection id, plain kazoo as the broker principal), then checks the logs."""
    caplog.set_level(logging.DEBUG)
    clusters = []

    def make(brokers: dict[int, str], **spec) -> tuple:
        chroot = new_secured_chroot(secured_zk)
        hosts = secured_zk.connect_string + chroot
        cluster = EmulatedCluster(hosts, ClusterSpec(brokers=brokers, seed=0, **spec), credentials=BROKER).start()
        zk = sasl_client(hosts)
        clusters.append((cluster, zk))
        return cluster, secured_connection(secured_zk, chroot), zk
    yield make
    for cluster, zk in clusters:
        zk.stop()
        zk.close()
        cluster.stop()
    out = capfd.readouterr()
    assert_no_secret({"log records": caplog.text, "stdout": out.out, "stderr": out.err})


def assert_no_secret(texts: dict[str, str]) -> None:
    for where, text in texts.items():
        for secret in SECRETS:
            assert secret not in text, f"a secret leaked into {where}"


def assert_kafka_acls_everywhere(zk, run_folder: Path, admin_paths: tuple[str, ...]) -> None:
    """Every node carries Kafka 2.4's ACLs; every admin request node we created is gone (the
    controller, logged in as the same principal, acted on it and deleted it)."""
    found = all_acls(zk)
    found.pop("/")  # the chroot, created by the fixture
    assert found == {p: expected_acls(p) for p in found}
    created = [r.path for r in AuditLog.read(run_folder / "audit.jsonl") if r.op == "create" and not r.dry_run]
    admin = [p for p in created if p.startswith(admin_paths)]
    assert admin, "the run should have created admin request nodes"
    assert all(zk.exists(p) is None for p in admin), [p for p in admin if zk.exists(p) is not None]
    assert all(p in found for p in created if not p.startswith(admin_paths + ("/config/changes/",)))


def run(dag_id: str, conf: dict, answer: str = "Approve"):
    from cli.local_run import run_dag

    return run_dag(dag_id, conf, answer=answer, approver="sec.sre")


def test_delete_topics_on_a_secured_cluster(secured_env, run_root):
    cluster, conn_id, zk = secured_env({1: "a", 2: "b", 3: "c"})
    cluster.create_topics({f"old-{i}": ({0: [1, 2], 1: [2, 3]}, None, {"retention.ms": "1000"}) for i in range(6)}
                          | {"keep": ({0: [3, 1]}, None, None)})
    result = run("delete_topics", {"zk_conn_id": conn_id, "run_root": str(run_root), "poll_interval_s": 0.2,
                                   "topic_regex": "old-.*", "batch_size": 4, "pause_between_batches_s": 0.1})
    assert result.state == "success", result.task_states
    assert set(zk.get_children("/brokers/topics")) == {"keep"}
    assert zk.get_children("/admin/delete_topics") == []
    assert_kafka_acls_everywhere(zk, result.run_folder, ("/admin/delete_topics/",))


def test_preferred_leader_election_on_a_secured_cluster(secured_env, run_root):
    cluster, conn_id, zk = secured_env({1: "a", 2: "b", 3: "c"})
    cluster.create_topics({"orders": ({p: [1 + p % 3, 1 + (p + 1) % 3, 1 + (p + 2) % 3] for p in range(9)},
                                      None, None)})
    for b in (1, 2):
        cluster.kill_broker(b)
        assert cluster.wait_until(lambda: zk.exists("/controller") is not None, 30)
        cluster.restart_broker(b)
        assert cluster.wait_idle(30)
    assert any(st["leader"] != assignment(zk)[tp][0] for tp, st in states(zk).items())
    result = run("preferred_leader_election", {"zk_conn_id": conn_id, "run_root": str(run_root),
                                               "poll_interval_s": 0.1, "max_batch_partitions": 3,
                                               "pause_between_batches_s": 0.1})
    assert result.state == "success", result.task_states
    assert all(st["leader"] == assignment(zk)[tp][0] for tp, st in states(zk).items())
    assert_kafka_acls_everywhere(zk, result.run_folder, ("/admin/preferred_replica_election",))


def test_decommission_on_a_secured_cluster(secured_env, run_root):
    cluster, conn_id, zk = secured_env(RACKS6, speed=3600.0)
    cluster.create_topics({name: (a, sizes, None) for name, (a, sizes) in TOPICS.items()})
    result = run("decommission_brokers", {
        "zk_conn_id": conn_id, "spark_conn_id": "spark_local", "brokers_to_remove": REMOVED,
        "run_root": str(run_root), "throttle_bytes_per_sec": THROTTLE, "max_moves_per_broker": 2,
        "poll_interval_s": 0.3, "sizes_file": write_sizes(cluster, run_root)})
    assert result.state == "success", result.task_states
    for tp, replicas in assignment(zk).items():
        assert not set(replicas) & set(REMOVED), (tp, replicas)
    assert all(st["leader"] not in REMOVED for st in states(zk).values())
    assert zk.exists("/admin/reassign_partitions") is None and throttle_configs(zk) == {}
    assert_kafka_acls_everywhere(zk, result.run_folder, ("/admin/reassign_partitions",
                                                         "/admin/preferred_replica_election"))


def test_the_known_secret_is_in_no_run_folder_report_log_or_airflow_file(run_root, secured_zk):
    from tests.airflow_env import configure_env

    # the check sees a secret where one must be: the server's own JAAS file
    assert BROKER_SECRET.encode() in (secured_zk.data_dir / "jaas.conf").read_bytes()
    roots = [run_root, configure_env()]
    checked = 0
    for root in roots:
        for path in Path(root).rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                checked += 1
                for secret in SECRETS:
                    assert secret.encode() not in data, f"a secret leaked into {path}"
    reports = list(run_root.rglob("final_report.*"))
    assert reports and checked > 10  # the runs above (all three when the module runs whole)
