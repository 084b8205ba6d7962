"""decommission_brokers with a destination broker dead for good (issue 27 item 3): a full dag.test
run on the emulator, the plan made without Spark (tests/dags/kernel_plan.py), notifications posted
to a real HTTP receiver that records when each arrives.

The destination of wave 0's largest move is killed (SIGKILL) once the wave is listed in
``/admin/reassign_partitions`` and stays dead. People must hear of it when it is seen, not when
the teardown ends: the stall notification arrives within the stall timeout of the kill and the
failure notification within a minute of the failure, both naming the broker; the teardown says
it keeps the throttles on the wave still copying (and says again when it removes them). The
operator's fix — the broker restarted once the teardown keeps the throttles — lets the wave end,
and the end state is read back with plain kazoo. Times are compared as recorded data with margins
a correct implementation meets under any load (the stall is seen within a second or two).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk.codecs import TopicPartition
from tests.dags.conftest import new_chroot, plain_client, zk_connection
from tests.dags.kernel_plan import write_kernel_plan
from tests.dags.scenario import RACKS, REMOVED, THROTTLE, TOPICS, throttle_configs

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]

STALL_TIMEOUT_S = 20.0      # above the trigger's floor: 1.5 × the largest move (400 MB) at the throttle = 15 s
SCALE = 100                 # the scenario's sizes ÷ 100: a wave copies for seconds at speed 2


def _failed_at(dag_id: str, run_id: str, task_id: str) -> float:
    """When the task failed, from Airflow's metadata DB (epoch seconds)."""
    from sqlalchemy import select

    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        end = session.scalars(select(TaskInstance.end_date).where(
            TaskInstance.dag_id == dag_id, TaskInstance.run_id == run_id, TaskInstance.task_id == task_id)).one()
    return end.timestamp()


def test_a_destination_dead_for_good_is_notified_when_seen_and_the_failure_at_once(
        zk_server, tmp_path: Path, webhook_sink) -> None:
    from cli.local_run import run_dag

    chroot = new_chroot(zk_server)
    cluster = EmulatedCluster(zk_server.connect_string + chroot, ClusterSpec(
        brokers=RACKS, speed=2.0, seed=0, log_dirs_every_s=0.2)).start()
    zk = plain_client(zk_server, chroot)
    conn_id = zk_connection(zk_server, chroot, log_dirs_source="emulator")
    times: dict[str, float] = {}
    try:
        cluster.create_topics({name: (a, {p: s // SCALE for p, s in sizes.items()}, None)
                               for name, (a, sizes) in TOPICS.items()})
        sizes = {TopicPartition(t, p): s // SCALE for t, (_, by_p) in TOPICS.items() for p, s in by_p.items()}
        write_kernel_plan(zk_server.connect_string + chroot, tmp_path / "plan", REMOVED, sizes, THROTTLE)
        wave0 = json.loads((tmp_path / "plan" / "waves.json").read_text())["waves"][0]["partitions"]
        largest = max(wave0, key=lambda p: (p.get("size") or 0, p["topic"], p["partition"]))
        dead = next(b for b in largest["replicas"] if b not in largest["current"])
        run_root = tmp_path / "runs"

        def kill_then_fix() -> None:
            """Kill the destination once wave 0 lists its move (demote's re-ordering lists the same
            partition first); restart it (the operator's fix) once the teardown keeps the throttles."""
            from kazoo.exceptions import NoNodeError

            def wave0_listed() -> bool:
                try:
                    doc = json.loads(zk.get("/admin/reassign_partitions")[0])
                except NoNodeError:
                    return False
                return any(e["topic"] == largest["topic"] and e["partition"] == largest["partition"]
                           and dead in e["replicas"] for e in doc["partitions"])   # wave 0, not demote's

            deadline = time.monotonic() + 600
            while not wave0_listed():
                if time.monotonic() > deadline:
                    return
                time.sleep(0.05)
            cluster.kill_broker(dead)
            times["killed"] = time.time()
            while not list(run_root.glob("decommission_brokers/*/throttle_janitor.json")):
                if time.monotonic() > deadline:
                    return
                time.sleep(0.1)
            times["restarted"] = time.time()
            cluster.restart_broker(dead)

        fixer = threading.Thread(target=kill_then_fix, daemon=True)
        fixer.start()
        result = run_dag("decommission_brokers", {
            "zk_conn_id": conn_id, "brokers_to_remove": REMOVED, "run_root": str(run_root),
            "throttle_bytes_per_sec": THROTTLE, "max_moves_per_broker": 2, "poll_interval_s": 0.3,
            "plan_from": str(tmp_path / "plan"), "stall_warning_s": 10, "stall_timeout_s": STALL_TIMEOUT_S,
            "notify_conn_ids": [webhook_sink.conn_id]}, answer="Approve")
        fixer.join(timeout=60)
        assert "killed" in times and "restarted" in times, times
        assert result.state == "failed" and result.task_states["execute_waves"] == "failed", result.task_states
        assert result.task_states["remove_throttles"] == "success", result.task_states

        arrivals = webhook_sink.arrivals()
        events = [(at, doc["event"]) for at, doc in arrivals]
        named = f"[{dead}] not registered"
        stall_at, stall = next((at, doc) for at, doc in arrivals if doc["event"] == "stall")
        assert named in stall["text"], stall["text"]
        assert stall_at - times["killed"] <= STALL_TIMEOUT_S, (stall_at - times["killed"], events)

        failed_at = _failed_at("decommission_brokers", result.run_id, "execute_waves")
        first_failed_at, first_failed = next((at, doc) for at, doc in arrivals if doc["event"] == "failed")
        assert named in first_failed["text"], first_failed["text"]
        assert abs(first_failed_at - failed_at) <= 60, (first_failed_at - failed_at, events)
        # told while the teardown still waited for the wave, not when it ended
        assert first_failed_at < times["restarted"], (first_failed_at - times["restarted"], events)

        kept_at, kept = next((at, doc) for at, doc in arrivals if doc["event"] == "throttles_kept")
        assert f"{largest['topic']}-{largest['partition']}" in kept["text"], kept["text"]
        removed_at = next(at for at, doc in arrivals if doc["event"] == "throttles_removed")
        assert first_failed_at <= kept_at <= removed_at and times["restarted"] <= removed_at, events
        assert [e for _, e in events][-1] == "failed", events     # the notify step's, at the very end

        folder = result.run_folder
        why = next(line for line in (folder / "final_report.md").read_text().splitlines()
                   if line.startswith("**Why:**"))
        assert named in why, why

        # end state, plain kazoo: the wave ended after the fix, the teardown removed our throttles
        assert zk.exists("/admin/reassign_partitions") is None
        assert throttle_configs(zk) == {}
    finally:
        zk.stop()
        zk.close()
        cluster.stop()
