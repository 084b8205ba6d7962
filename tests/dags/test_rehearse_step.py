"""The ``rehearse`` step of the data-moving runbooks, end to end: real Airflow (dag.test), real
ZooKeeper, the emulator as the real cluster and as its rehearsed copy (a fresh chroot of the same
server, tests/dags/conftest.py). The plan is made once by the plan job in the driver and handed
to the runs through ``plan_from``, so no Spark starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_sim.timeline import wave_spans
from kafka_zk.snapshot import read_snapshot
from formats.snapshot_file import write_snapshot
from spark_jobs import plan_job
from tests.dags.conftest import new_chroot, plain_client, zk_connection
from tests.dags.scenario import REMOVED, THROTTLE, start_cluster, write_sizes
from tests.zk_helpers import tree

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]

#: The real (emulated) run copies at 150x real time, not the scenario's 3600x: its clock runs while a
#: loaded machine delivers ZooKeeper watches and schedules threads (the rehearsal's clock stands
#: still while the tool works), and at 3600x a 45 ms delay is 160 simulated seconds, a quarter of a
#: 650 s wave. At 150x a 200 ms delay is 30 s (<5 %); the run's copying takes ~35 s of wall time.
REAL_SPEED = 150.0


@pytest.fixture
def env(zk_server, tmp_path):
    chroot = new_chroot(zk_server)
    cluster = start_cluster(zk_server.connect_string + chroot, speed=REAL_SPEED)
    zk = plain_client(zk_server, chroot)
    sizes = write_sizes(cluster, tmp_path)
    write_snapshot(read_snapshot(zk), str(tmp_path / "snapshot.jsonl"))
    plan_job.execute(plan_job.parse_args([
        "--snapshot", str(tmp_path / "snapshot.jsonl"), "--op", "decommission", "--brokers", ",".join(map(str, REMOVED)),
        "--sizes", sizes, "--out", str(tmp_path / "plan"), "--engine", "driver", "--throttle", str(THROTTLE),
        "--max-moves-per-broker", "2"]), None)
    conf = {"zk_conn_id": zk_connection(zk_server, chroot), "spark_conn_id": "spark_local",
            "brokers_to_remove": REMOVED, "run_root": str(tmp_path / "runs"), "throttle_bytes_per_sec": THROTTLE,
            "max_moves_per_broker": 2, "poll_interval_s": 0.3, "sizes_file": sizes,
            "plan_from": str(tmp_path / "plan"), "rehearse": "on"}
    yield cluster, zk, conf
    zk.stop()
    zk.close()
    cluster.stop()


def approval_body(dag_id: str, run_id: str) -> str:
    from sqlalchemy import select

    from airflow.models.hitl import HITLDetail
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        ti = session.scalar(select(TaskInstance).where(TaskInstance.dag_id == dag_id, TaskInstance.run_id == run_id,
                                                       TaskInstance.task_id == "approve"))
        return session.get(HITLDetail, ti.id).body


def test_the_rehearsal_timeline_is_within_10_percent_of_the_real_run_and_the_approval_shows_it(env) -> None:
    from cli.local_run import run_dag

    cluster, zk, conf = env
    result = run_dag("decommission_brokers", conf, answer="Approve", approver="alice.sre")
    assert result.state == "success", result.task_states
    folder = result.run_folder
    rehearsal = json.loads((folder / "rehearsal" / "rehearsal.json").read_text())
    assert rehearsal["passed"] is True, rehearsal["problems"]
    assert rehearsal["headline"] in approval_body("decommission_brokers", result.run_id)
    assert (folder / "rehearsal_report.md").read_text().startswith("# Rehearsal of plan")
    assert "<h1>Rehearsal of plan" in (folder / "rehearsal_report.html").read_text()     # the page the link opens
    waves = json.loads((folder / "waves.json").read_text())["waves"]
    real = wave_spans(cluster.history(), [[(m["topic"], m["partition"]) for m in w["moves"]] for w in waves])
    rehearsed = [w["end_s"] - w["start_s"] for w in rehearsal["waves"]]
    assert len(rehearsed) == len(real) >= 2
    for ours, theirs in zip(rehearsed, real):
        assert ours == pytest.approx(theirs.seconds, rel=0.10), (rehearsed, [s.seconds for s in real])
    assert sum(rehearsed) == pytest.approx(sum(s.seconds for s in real), rel=0.10)


def test_a_rehearsed_then_rejected_run_changes_nothing_in_the_real_clusters_zookeeper(env) -> None:
    from cli.local_run import run_dag

    _, zk, conf = env
    before = tree(zk)
    result = run_dag("decommission_brokers", conf, answer="Reject")
    assert result.task_states["rehearse"] == "success" and result.task_states["execute_waves"] == "skipped"
    assert json.loads((result.run_folder / "rehearsal" / "rehearsal.json").read_text())["passed"] is True
    assert tree(zk) == before
