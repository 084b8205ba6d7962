"""decommission_brokers with a follower that cannot append (issue 11): a full dag.test run on the
emulator, the plan made without Spark (tests/dags/kernel_plan.py).

One new replica of wave 0 fails every fetch (the emulator's append fault, as after the topic's
max.message.bytes was lowered below a batch already written). The task log's stall warning
names the partition and the likely cause with an ETA of "unknown", execute_waves fails as
stalled, the stuck-reassignment health check classifies the same partition while it is stuck;
once the fault ends (max.message.bytes raised back) the wave finishes, the teardown removes the
throttles, and ZooKeeper is read back with plain kazoo.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk.codecs import TopicPartition
from tests.dags.conftest import new_chroot, plain_client
from tests.dags.kernel_plan import write_kernel_plan
from tests.dags.scenario import RACKS, REMOVED, THROTTLE, TOPICS, assignment, config, read, throttle_configs
from tests.zk_helpers import set_config_by_hand

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]


def test_a_follower_that_cannot_append_is_named_in_the_stall_warning_and_classified_stuck(
        zk_server, tmp_path: Path, capfd: pytest.CaptureFixture, webhook_sink) -> None:
    from kafka_zk.health import HealthThresholds, STUCK_REASSIGNMENT, check_health, read_znode_ages
    from kafka_zk.snapshot import read_snapshot
    from cli.local_run import run_dag

    chroot = new_chroot(zk_server)
    cluster = EmulatedCluster(zk_server.connect_string + chroot, ClusterSpec(
        brokers=RACKS, speed=3600.0, seed=0, log_dirs_every_s=0.2)).start()
    zk = plain_client(zk_server, chroot)
    conn_id = f"zk_{chroot.strip('/')}"
    os.environ[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps({
        "conn_type": "kafka_zookeeper", "host": zk_server.connect_string,
        "extra": {"chroot": chroot, "connect_timeout": 10, "session_timeout": 10, "log_dirs_source": "emulator"}})
    stuck: dict = {}
    try:
        cluster.create_topics({name: (a, sizes, None) for name, (a, sizes) in TOPICS.items()})
        sizes = {TopicPartition(t, p): s for t, (_, by_p) in TOPICS.items() for p, s in by_p.items()}
        write_kernel_plan(zk_server.connect_string + chroot, tmp_path / "plan", REMOVED, sizes, THROTTLE)
        first = json.loads((tmp_path / "plan" / "waves.json").read_text())["waves"][0]["partitions"][0]
        topic, partition = first["topic"], first["partition"]
        broker = next(b for b in first["replicas"] if b not in first["current"])
        name = f"{topic}-{partition}"
        set_config_by_hand(zk, f"topics/{topic}", {"max.message.bytes": "1024"})   # lowered after the data
        cluster.fail_append(topic, partition, broker)

        def classify_then_release() -> None:
            """Once execute_waves has failed: what the stuck-reassignment check says, then the
            operator raises max.message.bytes back (the follower appends again)."""
            from sqlalchemy import select

            from airflow.models.taskinstance import TaskInstance
            from airflow.utils.session import create_session

            deadline = time.monotonic() + 240
            try:
                while time.monotonic() < deadline:
                    with create_session() as session:
                        states = session.scalars(select(TaskInstance.state).where(
                            TaskInstance.dag_id == "decommission_brokers", TaskInstance.task_id == "execute_waves",
                            TaskInstance.run_id.like("manual__%"), TaskInstance.state == "failed",
                            TaskInstance.start_date >= started)).all()
                    if states:
                        snap = read_snapshot(zk)
                        _, stat = zk.get("/admin/reassign_partitions")
                        report = check_health(snap, read_znode_ages(zk, snap, now_ms=stat.mtime + 10_000),
                                              HealthThresholds(stuck_reassignment_s=5))
                        stuck["findings"] = list(report.of(STUCK_REASSIGNMENT))
                        return
                    time.sleep(0.3)
            finally:
                set_config_by_hand(zk, f"topics/{topic}", {"max.message.bytes": "1048588"})
                cluster.fail_append(topic, partition, broker, failing=False)

        from datetime import datetime, timezone
        started = datetime.now(timezone.utc)
        releaser = threading.Thread(target=classify_then_release, daemon=True)
        releaser.start()
        result = run_dag("decommission_brokers", {
            "zk_conn_id": conn_id, "brokers_to_remove": REMOVED, "run_root": str(tmp_path / "runs"),
            "throttle_bytes_per_sec": THROTTLE, "max_moves_per_broker": 2, "poll_interval_s": 0.3,
            "plan_from": str(tmp_path / "plan"), "stall_warning_s": 2, "stall_timeout_s": 6, "rehearse": "off",
            "notify_conn_ids": [webhook_sink.conn_id]}, answer="Approve")
        releaser.join(timeout=30)
        log = capfd.readouterr().out
        assert result.state == "failed" and result.task_states["execute_waves"] == "failed", result.task_states
        assert result.task_states["remove_throttles"] == "success"

        warnings = [line for line in log.splitlines() if "wave 0: no progress for" in line]
        assert warnings, "no stall warning in the task log"
        warning = warnings[0]
        assert "ETA unknown" in warning and "judged from follower log sizes" in warning
        assert f"{name}: follower(s) on broker(s) [{broker}] up but not in the ISR" in warning
        assert "a fetch failure, check their server.log" in warning
        assert f"topic {topic} has max.message.bytes=1024, below the brokers' message.max.bytes=1000012" in warning
        progress = [line for line in log.splitlines() if "wave 0: " in line and "partitions, overall" in line]
        # the wave never finished while waited on: none claims 0 s; judged from log sizes once the
        # emulator's log-dirs output lists the new replicas (a poll before that, seen under load,
        # judges from ISR joins)
        assert any("(from follower log sizes)" in line for line in progress), progress[:3]
        assert all("ETA unknown" in line for line in progress), [line for line in progress if "ETA unknown" not in line]
        stalled = [line for line in log.splitlines() if "WaveStalled" in line and "made no progress" in line]
        assert stalled and name in stalled[0] and "ETA unknown" in stalled[0], stalled[:1]
        report = (result.run_folder / "final_report.md").read_text()
        why = next(line for line in report.splitlines() if line.startswith("**Why:**"))
        assert "wave 0 stalled: wave 0 made no progress for" in why and f"{name}: follower(s) on broker(s)" in why

        # the stall reached people: the webhook got the trigger's stall notification, then the failure
        events = webhook_sink.wait_for(3)
        stall = next(e for e in events if e["event"] == "stall")
        assert name in stall["text"] and "max.message.bytes=1024" in stall["text"], stall["text"]
        assert [e["event"] for e in events][-1] == "failed"

        [finding] = [f for f in stuck["findings"] if TopicPartition(topic, partition) in f.partitions]
        assert f"broker(s) {broker} not catching up (not in the ISR) while their broker is up" in finding.cause
        assert f"topic {topic} has max.message.bytes=1024" in finding.cause

        # end state, plain kazoo: the wave finished after the fault ended, the teardown ran after it
        assert zk.exists("/admin/reassign_partitions") is None
        assert assignment(zk)[(topic, partition)] == first["replicas"]
        state = read(zk, f"/brokers/topics/{topic}/partitions/{partition}/state")
        assert sorted(state["isr"]) == sorted(first["replicas"])
        assert throttle_configs(zk) == {}
        assert config(zk, "topics", topic)["max.message.bytes"] == "1048588"
    finally:
        zk.stop()
        zk.close()
        cluster.stop()
