"""delete_topics and preferred_leader_election on a real Airflow (scheduler, triggerer, DAG
processor and API server as separate processes, LocalExecutor on SQLite), with batches that finish
before the trigger's first poll.

Both runbooks defer once per batch. On Airflow 3.3 a trigger that fires at once can resume a task
before the executor has reported the deferring attempt's exit, and the scheduler then fails the
running task ("409 TI was not in the running state"): the race ``execute_waves`` met in issue 12,
which ``dag.test()`` cannot show. Here the emulator deletes a topic and elects a leader within
milliseconds, so most batches are done before a trigger could first poll (they finish in the task,
operators/deferral.py); one deletion batch is held (a replica on a stopped broker) until
``delete_batches`` has deferred on it, then released, so its trigger finds it done at its first
poll. Each run must succeed with exactly the change asked for: the selected topics gone and no
other, every leader preferred.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from procedures.run_folder import RunFolder
from tests.conftest import new_chroot
from tests.dags.test_preferred_leader_election import leaders, restart_two_brokers, rotated
from tests.real_airflow import RealAirflow

pytestmark = [pytest.mark.airflow, pytest.mark.real_airflow]

RACKS = {1: "a", 2: "b", 3: "c"}
DAGS = ("delete_topics", "preferred_leader_election")
DOOMED = [f"old-{i:02d}" for i in range(12)]
HELD = "old-05"   # in the third batch of two


def _failures(airflow: RealAirflow, dag_id: str, run_id: str, tasks: dict) -> str:
    """The task states and the tail of every failed task's log, as the assertion's message."""
    logs = [f"--- {t} ---\n{airflow.task_log(dag_id, run_id, t)[-4000:]}"
            for t, v in tasks.items() if v["state"] in ("failed", "up_for_retry")]
    return "\n".join([json.dumps(tasks), *logs])


def isrs(zk, topics: tuple[str, ...]) -> dict[tuple[str, int], tuple[list[int], list[int]]]:
    """(topic, partition) -> (replicas, isr), read with plain kazoo."""
    out = {}
    for topic in topics:
        assignment = json.loads(zk.get(f"/brokers/topics/{topic}")[0])["partitions"]
        for p, replicas in assignment.items():
            state = json.loads(zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")[0])
            out[(topic, int(p))] = (replicas, state["isr"])
    return out


def preferred_in_isr(zk, topics: tuple[str, ...]) -> bool:
    """Every partition of ``topics`` has its preferred replica (the first) in its ISR."""
    return all(replicas[0] in isr for replicas, isr in isrs(zk, topics).values())


def test_deletion_and_election_batches_finished_before_the_first_poll_never_fail_the_run(
        zk_server, tmp_path: Path) -> None:
    from tests.dags.conftest import plain_client

    chroot = new_chroot(zk_server, prefix="/batches")
    cluster = EmulatedCluster(zk_server.connect_string + chroot, ClusterSpec(brokers=RACKS, seed=0)).start()
    zk = plain_client(zk_server, chroot)
    try:
        victim = next(b for b in (3, 2, 1) if b != cluster.controller_id())
        a, b = (x for x in (1, 2, 3) if x != victim)
        cluster.create_topics({n: ({0: [victim, a] if n == HELD else [a, b]}, None, None) for n in DOOMED}
                              | {"orders": (rotated(24), None, None), "keep": ({0: [3, 1]}, None, None)})
        cluster.kill_broker(victim)   # HELD cannot be deleted until it is back
        connections = {"zk_batches": {"conn_type": "kafka_zookeeper", "host": zk_server.connect_string,
                                      "extra": {"chroot": chroot, "connect_timeout": 10, "session_timeout": 10}}}
        with RealAirflow(tmp_path / "airflow", DAGS, connections, users=("alice", "bob")) as airflow:
            for dag_id in DAGS:
                airflow.wait_dag(dag_id)

            run_id = airflow.trigger("delete_topics", {
                "zk_conn_id": "zk_batches", "run_root": str(tmp_path / "runs"), "topic_regex": "old-.*",
                "batch_size": 2, "poll_interval_s": 0.2}, as_user="alice")
            airflow.approve_when_asked("delete_topics", run_id, as_user="bob", timeout=300)
            airflow.wait_task_state("delete_topics", run_id, "delete_batches", "deferred", 300)
            cluster.restart_broker(victim)
            st = airflow.wait_run("delete_topics", run_id, timeout=600)
            assert st.state == "success", _failures(airflow, "delete_topics", run_id, st.tasks)
            assert set(zk.get_children("/brokers/topics")) == {"orders", "keep"}
            assert zk.get_children("/admin/delete_topics") == []
            folder = RunFolder.for_run(tmp_path / "runs", "delete_topics", run_id)
            progress = json.loads((folder.root / "deletion_progress.json").read_text())["batches"]
            assert [HELD in x["topics"] for x in progress] == [False, False, True, False, False, False]
            assert all(x["state"] == "done" for x in progress)

            assert cluster.wait_idle(30)
            restart_two_brokers(cluster, zk)
            # the election can only move a leader to a preferred replica that is in the ISR: under
            # load broker 2 may still be catching up when the cluster is otherwise idle
            assert cluster.wait_until(lambda: preferred_in_isr(zk, ("orders", "keep")), 120), \
                f"a preferred replica never came back into its ISR: {isrs(zk, ('orders', 'keep'))}"
            assert any(leader != pref for leader, pref in leaders(zk, "orders").values())
            run_id = airflow.trigger("preferred_leader_election", {
                "zk_conn_id": "zk_batches", "run_root": str(tmp_path / "runs"), "topics": ["orders", "keep"],
                "max_batch_partitions": 2, "poll_interval_s": 0.2}, as_user="alice")
            airflow.approve_when_asked("preferred_leader_election", run_id, as_user="bob", timeout=300)
            st = airflow.wait_run("preferred_leader_election", run_id, timeout=600)
            assert st.state == "success", _failures(airflow, "preferred_leader_election", run_id, st.tasks)
            for topic in ("orders", "keep"):
                assert all(leader == pref for leader, pref in leaders(zk, topic).values()), leaders(zk, topic)
            assert zk.exists("/admin/preferred_replica_election") is None
            folder = RunFolder.for_run(tmp_path / "runs", "preferred_leader_election", run_id)
            progress = json.loads((folder.root / "election_progress.json").read_text())
            assert len(progress["batches"]) >= 3 and all(b["state"] == "done" for b in progress["batches"])
    finally:
        zk.stop()
        zk.close()
        cluster.stop()
