"""An approval nobody answers expires: on a real Airflow, the run fails saying so, with nothing written.

Airflow 3.3 parks the approve task in AWAITING_INPUT; only the scheduler's timeout sweep
(``check_awaiting_input_timeouts``) resolves a request nobody answered (``dag.test()`` never does), so
this runs on the real scheduler: API server, scheduler, DAG processor and triggerer as processes.
A decommission (plan handed over with ``plan_from``, made by the planner's kernels) on the emulator,
its cluster given ``approval_expires_after: 10s`` in the windows file, notifications to a real webhook
receiver. Alice triggers; nobody answers. The run must fail at ``approve``, with no znode of the
cluster changed (data and modification zxid) and no ZooKeeper write in the run's audit log (its one line is the expired decision); ``approval.json``
records the expiry; the run's note, the "failed"/"finished" notification and the final report say
"approval expired at <the request's expiry>", never "rejected".
"""

from __future__ import annotations

import json
import os

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk.codecs import TopicPartition
from procedures.run_folder import RunFolder
from tests.conftest import new_chroot
from tests.dags.kernel_plan import write_kernel_plan
from tests.dags.moving_runbook import zk_writes
from tests.dags.scenario import always_open_windows, audit
from tests.dags.test_real_airflow_approval_gate import RACKS, REMOVED, TOPIC, znodes
from tests.real_airflow import RealAirflow

pytestmark = [pytest.mark.airflow, pytest.mark.real_airflow]

DAG_ID = "decommission_brokers"
EXPIRY_S = 10


def test_an_approval_nobody_answers_expires_and_the_run_says_so_with_nothing_written(zk_server, tmp_path,
                                                                                        webhook_sink) -> None:
    from tests.dags.conftest import plain_client

    chroot = new_chroot(zk_server, prefix="/expiry")
    cluster = EmulatedCluster(zk_server.connect_string + chroot,
                              ClusterSpec(brokers=RACKS, speed=100000.0, seed=0)).start()
    zk = plain_client(zk_server, chroot)
    runs = tmp_path / "runs"
    try:
        cluster.create_topics({"t": (TOPIC, {p: 1024 * 1024 for p in TOPIC}, None)})
        assert write_kernel_plan(zk_server.connect_string + chroot, tmp_path / "plan", [REMOVED],
                                 {TopicPartition("t", p): 1024 * 1024 for p in TOPIC}, 100 * 1024 ** 2) >= 1
        windows = tmp_path / "windows.yaml"
        windows.write_text(always_open_windows("zk_expiry", f"    approval_expires_after: {EXPIRY_S}s\n"))
        connections = {"zk_expiry": {"conn_type": "kafka_zookeeper", "host": zk_server.connect_string,
                                     "extra": {"chroot": chroot, "connect_timeout": 10, "session_timeout": 10}},
                       webhook_sink.conn_id: json.loads(os.environ[f"AIRFLOW_CONN_{webhook_sink.conn_id.upper()}"])}
        assert cluster.wait_idle(30)
        before = znodes(zk)
        with RealAirflow(tmp_path / "airflow", (DAG_ID,), connections, users=("alice", "bob"),
                         extra_env={"KAFKA_RUNBOOKS_WINDOWS_FILE": str(windows)}) as airflow:
            airflow.wait_dag(DAG_ID)
            run_id = airflow.trigger(DAG_ID, {"zk_conn_id": "zk_expiry", "run_root": str(runs), "rehearse": "off",
                                              "brokers_to_remove": [REMOVED], "plan_from": str(tmp_path / "plan"),
                                              "throttle_bytes_per_sec": 100 * 1024 ** 2, "poll_interval_s": 0.2,
                                              "notify_conn_ids": [webhook_sink.conn_id]}, as_user="alice")
            airflow.wait_task_state(DAG_ID, run_id, "approve", "awaiting_input", 600)
            st = airflow.wait_run(DAG_ID, run_id, timeout=600)          # nobody answers
            note = airflow.api("GET", f"/dags/{DAG_ID}/dagRuns/{run_id}")["note"]   # the scheduler's listener
            log = airflow.task_log(DAG_ID, run_id, "approve")
        folder = RunFolder.for_run(runs, DAG_ID, run_id)
        request = json.loads((folder.root / "approval_request.json").read_text())
        record = json.loads(folder.approval.read_text())
        expired = f"approval expired at {request['expires_at']}"

        assert st.state == "failed" and st.tasks["approve"]["state"] == "failed", st.tasks
        assert st.tasks["approve"]["try_number"] == 1, st.tasks            # an expiry is not retried
        assert all(st.tasks[t]["state"] in ("upstream_failed", "skipped") for t in
                   ("guards", "demote", "set_throttles", "execute_waves")), st.tasks
        assert "nobody answered before the approval expired" in log, log[-3000:]
        assert record["decision"] == "rejected" and record["expired"] and record["by"] is None, record
        assert request["expiry_s"] == EXPIRY_S

        assert [r["op"] for r in audit(folder.root)] == ["reject"]          # the decision, no znode write
        assert zk_writes(audit(folder.root)) == []
        assert znodes(zk) == before

        assert note and note.startswith(expired) and note.splitlines()[0].endswith(": nothing written"), note
        posted = [p for p in webhook_sink.wait_for(2) if p["run_id"] == run_id]
        assert [p["event"] for p in posted][0] == "approval_requested", posted
        end = [p for p in posted if p["event"] in ("failed", "finished")][-1]
        assert expired in end["title"] and "rejected" not in end["title"], end
        assert "rejected by" not in end["text"] and "Nothing was written to ZooKeeper." in end["text"], end["text"]
        report = (folder.root / "final_report.md").read_text()
        assert expired in report and "rejected by" not in report, report[:2000]
    finally:
        zk.stop()
        zk.close()
        cluster.stop()
