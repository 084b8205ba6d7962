"""decommission_brokers on a real Airflow (scheduler, triggerer, DAG processor and API server as
separate processes, LocalExecutor on SQLite), with waves that finish before the trigger's first poll.

The race this pins (issue 12, finding 1): a deferral whose trigger fires at once resumes the task
before the executor has reported the deferring attempt's exit; the scheduler then sees "finished
with state success" for a task instance that is running again and fails it ("409 TI was not in
the running state" on the worker). ``dag.test()`` cannot show it. Each run here has one wave per
moved partition (a handful of tiny partitions on a fast clock), each finished within
milliseconds of its submission; in the second run one wave is held (its new replica stalled in
the emulator) until ``execute_waves`` has deferred on it, then released, so the trigger finds it
finished at its first poll. Every run must succeed with the cluster drained. Before the fix
the first run failed at its fourth wave.

The plan is made without Spark (the planner's kernels and artifact writer) and handed over with
``plan_from``. Alice triggers each run and Bob approves it through the REST API (four eyes: the
person who triggered cannot approve).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from tests.conftest import new_chroot
from tests.dags.kernel_plan import write_kernel_plan
from tests.dags.scenario import assignment, data_tree, states, throttle_configs
from tests.real_airflow import RealAirflow

pytestmark = [pytest.mark.airflow, pytest.mark.real_airflow]

RACKS = {1: "a", 2: "b", 3: "a", 4: "b"}
REMOVED = 4
TOPIC = {p: r for p, r in enumerate([(4, 1), (2, 4), (4, 3), (1, 4), (3, 2), (4, 2)])}
RUNS = 2


def make_plan(connect_string: str, out: Path) -> int:
    from kafka_zk.codecs import TopicPartition

    return write_kernel_plan(connect_string, out, [REMOVED], {TopicPartition("t", p): 1024 * 1024 for p in TOPIC},
                             100 * 1024 ** 2, max_moves_per_broker=1)


def test_waves_finished_before_the_first_poll_never_fail_the_run(zk_server, tmp_path: Path) -> None:
    from tests.dags.conftest import plain_client

    clusters, connections = [], {}
    try:
        for i in range(RUNS):
            chroot = new_chroot(zk_server, prefix="/race")
            cluster = EmulatedCluster(zk_server.connect_string + chroot,
                                      ClusterSpec(brokers=RACKS, speed=100000.0, seed=i)).start()
            clusters.append((cluster, plain_client(zk_server, chroot), tmp_path / f"plan{i}"))
            cluster.create_topics({"t": (TOPIC, {p: 1024 * 1024 for p in TOPIC}, None)})
            assert make_plan(zk_server.connect_string + chroot, tmp_path / f"plan{i}") >= 3
            connections[f"zk_race{i}"] = {"conn_type": "kafka_zookeeper", "host": zk_server.connect_string,
                                          "extra": {"chroot": chroot, "connect_timeout": 10, "session_timeout": 10}}
        with RealAirflow(tmp_path / "airflow", ("decommission_brokers",), connections,
                         users=("alice", "bob")) as airflow:
            airflow.wait_dag("decommission_brokers")
            for i, (cluster, zk, plan_dir) in enumerate(clusters):
                held = []
                if i == 1:
                    wave = json.loads((plan_dir / "waves.json").read_text())["waves"][1]
                    held = [(p["topic"], p["partition"], b) for p in wave["partitions"]
                            for b in p["replicas"] if b not in p["current"]]
                    for topic, partition, broker in held:
                        cluster.stall_replica(topic, partition, broker)
                run_id = airflow.trigger("decommission_brokers", {
                    "zk_conn_id": f"zk_race{i}", "brokers_to_remove": [REMOVED],
                    "run_root": str(tmp_path / "runs"), "plan_from": str(plan_dir),
                    "poll_interval_s": 0.2, "throttle_bytes_per_sec": 100 * 1024 ** 2}, as_user="alice")
                airflow.approve_when_asked("decommission_brokers", run_id, as_user="bob", timeout=300)
                if held:
                    airflow.wait_task_state("decommission_brokers", run_id, "execute_waves", "deferred", 300)
                    for topic, partition, broker in held:
                        cluster.stall_replica(topic, partition, broker, stalled=False)
                st = airflow.wait_run("decommission_brokers", run_id, timeout=600)
                failed = {t: airflow.task_log("decommission_brokers", run_id, t)[-2000:]
                          for t, v in st.tasks.items() if v["state"] in ("failed", "up_for_retry")}
                assert st.state == "success", (st.tasks, failed)
                assert not any(REMOVED in r for r in assignment(zk).values())
                assert all(s["leader"] != REMOVED for s in states(zk).values())
                assert zk.exists("/admin/reassign_partitions") is None and throttle_configs(zk) == {}

            # four eyes on the real thing: Alice triggers and answers her own approval; it is refused and
            # nothing is written (the plan is stale by now, but no step after the approval runs)
            cluster, zk, plan_dir = clusters[0]
            before = data_tree(zk)
            run_id = airflow.trigger("decommission_brokers", {
                "zk_conn_id": "zk_race0", "brokers_to_remove": [REMOVED], "run_root": str(tmp_path / "runs"),
                "plan_from": str(plan_dir)}, as_user="alice")
            airflow.approve_when_asked("decommission_brokers", run_id, as_user="alice", timeout=300)
            st = airflow.wait_run("decommission_brokers", run_id, timeout=600)
            assert st.state == "failed" and st.tasks["approve"]["state"] == "failed", st.tasks
            assert st.tasks["guards"]["state"] == "upstream_failed", st.tasks
            from procedures.run_folder import RunFolder
            folder = RunFolder.for_run(tmp_path / "runs", "decommission_brokers", run_id)
            record = json.loads(folder.approval.read_text())
            assert record["decision"] == "rejected" and record["by"] == "alice" and "four-eyes" in record["note"]
            assert data_tree(zk) == before
    finally:
        for cluster, zk, _ in clusters:
            zk.stop()
            zk.close()
            cluster.stop()
