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

The approval is assigned to Bob (``approvers``). Alice's own Approve while it waits is refused with
the four-eyes rule in words (403 naming Bob, not Airflow's bare "not a respondent"), and her try is
on the run's note. Bob's answer after the expiry is refused as late (409 "came late … ignored"),
not recorded by Airflow, and shown as late and ignored on the run's note and in the served final
report (operators/approval/answer_gate.py).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk.codecs import TopicPartition
from procedures.run_folder import RunFolder
from procedures.reports.locations import report_url
from tests.conftest import new_chroot
from tests.dags.kernel_plan import write_kernel_plan
from tests.dags.moving_runbook import zk_writes
from tests.dags.scenario import always_open_windows, audit
from tests.dags.test_real_airflow_approval_gate import RACKS, REMOVED, TOPIC, znodes
from tests.real_airflow import RealAirflow

pytestmark = [pytest.mark.airflow, pytest.mark.real_airflow]


def _refused(call) -> tuple[int, str]:
    """The HTTP status and ``detail`` of a call that must be refused (200 and "" when it was not)."""
    try:
        call()
    except urllib.error.HTTPError as exc:
        return exc.code, str(json.loads(exc.read() or b"{}").get("detail"))
    return 200, ""


def _get(url: str, token: str) -> str:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=60) as resp:
        return resp.read().decode()

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
        windows.write_text(always_open_windows("zk_expiry", f"    approval_expires_after: {EXPIRY_S}s\n"
                                                            "    approvers: [bob]\n"))
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
            own = _refused(lambda: airflow.answer(DAG_ID, run_id, "approve", "Approve", as_user="alice"))
            st = airflow.wait_run(DAG_ID, run_id, timeout=600)          # nobody else answers
            note = airflow.api("GET", f"/dags/{DAG_ID}/dagRuns/{run_id}")["note"]   # the scheduler's listener
            log = airflow.task_log(DAG_ID, run_id, "approve")
            late = _refused(lambda: airflow.answer(DAG_ID, run_id, "approve", "Approve", as_user="bob"))
            detail = airflow.api("GET", f"/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/approve/-1/hitlDetails")
            note_after = airflow.api("GET", f"/dags/{DAG_ID}/dagRuns/{run_id}")["note"]
            served = _get(f"http://127.0.0.1:{airflow.port}{report_url('', DAG_ID, run_id, 'final_report.html')}",
                          airflow.token("bob"))
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

        assert note and note.startswith(f"EXPIRED: {expired}") and "written: nothing written" in note, note
        posted = [p for p in webhook_sink.wait_for(2) if p["run_id"] == run_id]
        assert [p["event"] for p in posted][0] == "approval_requested", posted
        end = [p for p in posted if p["event"] in ("failed", "finished")][-1]
        assert expired in end["title"] and "rejected" not in end["title"], end
        assert "rejected by" not in end["text"] and "nothing written" in end["text"], end["text"]
        report = (folder.root / "final_report.md").read_text()
        assert expired in report and "rejected by" not in report, report[:2000]

        # four eyes, in words where Alice sees it, and on the run
        assert own[0] == 403 and "alice triggered this run and cannot approve it (four eyes)" in own[1], own
        assert "assigned to bob" in own[1], own
        assert "alice tried to approve their own run" in note, note
        # the late answer: refused, not recorded by Airflow, shown as late and ignored on the run and in the report
        assert late[0] == 409 and "came late: the request expired at" in late[1] and "ignores it" in late[1], late
        assert detail["responded_at"] is None and detail["chosen_options"] in (None, []), detail
        assert note_after.splitlines()[0] == note.splitlines()[0], note_after
        assert "late answer by bob (Approve)" in note_after and "ignored, nothing written" in note_after, note_after
        assert "Answers refused" in served and "late answer by bob (Approve)" in served, served[-1500:]
        refused = [json.loads(x) for x in (folder.root / "answers_refused.jsonl").read_text().splitlines()]
        assert [(r["by"], r["kind"]) for r in refused] == [("alice", "four_eyes"), ("bob", "late")], refused
    finally:
        zk.stop()
        zk.close()
        cluster.stop()
