"""Marking task states is no approval: on a real Airflow, nothing is written without one.

Issue 24, finding 1: a user who may change task states marked ``guards`` and ``approve`` success
through the REST call the UI's "Mark as success" sends; nobody approved, and ``demote`` and
``set_throttles`` then wrote 45 znodes. Here the same calls are made on a real Airflow (scheduler,
triggerer, DAG processor and API server as processes; Alice triggers, the same Alice marks) for the
three writing shapes: a decommission (plan handed over with ``plan_from``, made by the planner's
kernels), delete_topics and preferred_leader_election. Each run must fail naming the missing
approval, with no znode of the cluster changed (data and modification zxid) and no write in the
run's audit log. One Airflow stack serves the three runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk.codecs import TopicPartition
from procedures.run_folder import RunFolder
from tests.conftest import new_chroot
from tests.dags.kernel_plan import write_kernel_plan
from tests.dags.test_preferred_leader_election import leaders, restart_two_brokers, rotated
from tests.real_airflow import RealAirflow

pytestmark = [pytest.mark.airflow, pytest.mark.real_airflow]

RACKS = {1: "a", 2: "b", 3: "a", 4: "b"}
REMOVED = 4
TOPIC = {p: r for p, r in enumerate([(4, 1), (2, 4), (4, 3), (1, 4), (3, 2), (4, 2)])}
DAGS = ("decommission_brokers", "delete_topics", "preferred_leader_election")


def znodes(zk, path: str = "/") -> dict[str, tuple[bytes | None, int]]:
    """Every znode of the cluster with its data and last-modified zxid (a rewrite of equal data shows)."""
    out = {}
    data, stat = zk.get(path)
    out[path] = (data, stat.mzxid)
    for child in sorted(zk.get_children(path)):
        out.update(znodes(zk, path.rstrip("/") + "/" + child))
    return out


def audited_writes(runs: Path, dag_id: str, run_id: str) -> list[dict]:
    audit = RunFolder.for_run(runs, dag_id, run_id).audit
    records = [json.loads(line) for line in audit.read_text().splitlines()] if audit.exists() else []
    return [r for r in records if not r.get("dry_run")]


def test_marking_guards_and_approve_success_writes_nothing_and_fails_naming_the_approval(zk_server, tmp_path):
    from tests.dags.conftest import plain_client

    chroot = new_chroot(zk_server, prefix="/gate")
    cluster = EmulatedCluster(zk_server.connect_string + chroot,
                              ClusterSpec(brokers=RACKS, speed=100000.0, seed=0)).start()
    zk = plain_client(zk_server, chroot)
    runs = tmp_path / "runs"
    try:
        cluster.create_topics({"t": (TOPIC, {p: 1024 * 1024 for p in TOPIC}, None),
                               "orders": (rotated(6), None, None),
                               **{f"old-{i}": ({0: [1, 2]}, None, None) for i in range(3)}})
        restart_two_brokers(cluster, zk)        # leaders off their preferred replicas: an election has work
        assert any(leader != pref for leader, pref in leaders(zk, "orders").values())
        assert write_kernel_plan(zk_server.connect_string + chroot, tmp_path / "plan", [REMOVED],
                                 {TopicPartition("t", p): 1024 * 1024 for p in TOPIC}, 100 * 1024 ** 2) >= 1
        connections = {"zk_gate": {"conn_type": "kafka_zookeeper", "host": zk_server.connect_string,
                                   "extra": {"chroot": chroot, "connect_timeout": 10, "session_timeout": 10}}}
        assert cluster.wait_idle(30)
        before = znodes(zk)
        confs = {
            "decommission_brokers": ({"brokers_to_remove": [REMOVED], "plan_from": str(tmp_path / "plan"),
                                      "throttle_bytes_per_sec": 100 * 1024 ** 2}, ("guards", "approve"), "demote"),
            "delete_topics": ({"topic_regex": "old-.*"}, ("approve",), "delete_batches"),
            "preferred_leader_election": ({"topics": ["orders"]}, ("approve",), "elect_batches"),
        }
        with RealAirflow(tmp_path / "airflow", DAGS, connections, users=("alice", "bob")) as airflow:
            for dag_id in DAGS:
                airflow.wait_dag(dag_id)
            for dag_id, (conf, marked, writer_task) in confs.items():
                run_id = airflow.trigger(dag_id, {"zk_conn_id": "zk_gate", "run_root": str(runs),
                                                  "poll_interval_s": 0.2, **conf}, as_user="alice")
                airflow.wait_task_state(dag_id, run_id, "approve", "awaiting_input", 300)
                for task_id in marked:
                    airflow.mark_success(dag_id, run_id, task_id, as_user="alice")
                st = airflow.wait_run(dag_id, run_id, timeout=600)
                log = airflow.task_log(dag_id, run_id, writer_task)
                assert st.state == "failed", (dag_id, st.tasks)
                assert st.tasks[writer_task]["state"] == "failed", (dag_id, st.tasks)
                assert "approval" in log and ("missing approval" in log or "no approval record" in log), log[-3000:]
                assert not RunFolder.for_run(runs, dag_id, run_id).approval.exists()
                assert audited_writes(runs, dag_id, run_id) == [], dag_id
                assert znodes(zk) == before, dag_id
                note = airflow.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}")["note"]    # the scheduler's listener
                assert note and note.startswith("REFUSED") and "missing approval" in note.splitlines()[0], note
                assert "written: nothing written" in note.splitlines(), note
    finally:
        zk.stop()
        zk.close()
        cluster.stop()
