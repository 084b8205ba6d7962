"""An answer given before the approve attempt is parked is kept: one request, one answer, the run goes on.

Issue 36: a Reject given 7 s after the request (load ~45) was lost to Airflow 3.3's scheduler race
and the approve retry asked again (3 ``approval_requested`` mails for one run). Here the answer is
made to come before the attempt is parked, every time: the ``approval_requested`` notification goes
to a webhook receiver that answers (Bob, through the REST API, as a chat bot would) before it
replies, and the approve step announces the request only once Airflow holds it, just before it
parks. Airflow then resumes the task at the park (the answer is already there) while the executor
has not yet reported the parked attempt's exit — the race (operators/approval/retry.py). Whether
the scheduler then fails the attempt is up to its timing; either way the answer must be kept.

On a real Airflow (scheduler, triggerer, DAG processor and API server as processes), for a
decommission (plan handed over with ``plan_from``) with Approve and then one with Reject: the bot
answered while the approve task was still running (before the park); exactly one
``approval_requested`` notification and one answer per run; ``approval.json`` records Bob's answer;
Approve drains the broker, Reject skips every writing step and writes nothing. The approve task's
tries are printed (more than one: the race struck and the retry used the recorded answer).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk.codecs import TopicPartition
from procedures.run_folder import RunFolder
from tests.conftest import new_chroot
from tests.dags.kernel_plan import write_kernel_plan
from tests.dags.scenario import assignment, throttle_configs
from tests.dags.test_real_airflow_approval_gate import RACKS, REMOVED, TOPIC, znodes
from tests.real_airflow import RealAirflow

pytestmark = [pytest.mark.airflow, pytest.mark.real_airflow]

DAG_ID = "decommission_brokers"
BOT_CONN = "notify_bot"


class _Bot(BaseHTTPRequestHandler):
    """Answers each ``approval_requested`` it receives before replying (see module docstring)."""

    def do_POST(self):  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        server = self.server
        server.received.append(body)
        if body.get("event") == "approval_requested" and body.get("run_id") in server.answers:
            run_id = body["run_id"]
            seen = server.airflow.state(DAG_ID, run_id).tasks["approve"]
            try:
                server.airflow.answer(DAG_ID, run_id, "approve", server.answers[run_id], as_user="bob")
                server.answered.append({"run_id": run_id, "state_before": seen["state"], "try": seen["try_number"]})
            except Exception as exc:                         # kept for the assertion message
                server.answered.append({"run_id": run_id, "error": repr(exc)})
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_an_answer_given_before_the_attempt_is_parked_is_kept(zk_server, tmp_path) -> None:
    from tests.dags.conftest import plain_client

    chroot = new_chroot(zk_server, prefix="/answered")
    cluster = EmulatedCluster(zk_server.connect_string + chroot,
                              ClusterSpec(brokers=RACKS, speed=100000.0, seed=0)).start()
    zk = plain_client(zk_server, chroot)
    runs = tmp_path / "runs"
    bot = ThreadingHTTPServer(("127.0.0.1", 0), _Bot)
    bot.received, bot.answered, bot.answers, bot.airflow = [], [], {}, None
    threading.Thread(target=bot.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        cluster.create_topics({"t": (TOPIC, {p: 1024 * 1024 for p in TOPIC}, None)})
        assert write_kernel_plan(zk_server.connect_string + chroot, tmp_path / "plan", [REMOVED],
                                 {TopicPartition("t", p): 1024 * 1024 for p in TOPIC}, 100 * 1024 ** 2) >= 1
        connections = {"zk_answered": {"conn_type": "kafka_zookeeper", "host": zk_server.connect_string,
                                       "extra": {"chroot": chroot, "connect_timeout": 10, "session_timeout": 10}},
                       BOT_CONN: {"conn_type": "http", "host": "127.0.0.1", "port": bot.server_port,
                                  "schema": "http", "extra": {"endpoint": "/hooks/kafka"}}}
        assert cluster.wait_idle(30)
        results = {}
        with RealAirflow(tmp_path / "airflow", (DAG_ID,), connections, users=("alice", "bob")) as airflow:
            bot.airflow = airflow
            airflow.wait_dag(DAG_ID)
            for option in ("Reject", "Approve"):             # Reject first: the cluster is unchanged for it
                before = znodes(zk)
                conf = {"zk_conn_id": "zk_answered", "run_root": str(runs), "rehearse": "off",
                        "brokers_to_remove": [REMOVED], "plan_from": str(tmp_path / "plan"),
                        "throttle_bytes_per_sec": 100 * 1024 ** 2, "poll_interval_s": 0.2,
                        "notify_conn_ids": [BOT_CONN]}
                run_id = f"answered_{option.lower()}"
                bot.answers[run_id] = option
                airflow.api("POST", f"/dags/{DAG_ID}/dagRuns", {"dag_run_id": run_id, "logical_date": None,
                                                                "conf": conf}, as_user="alice")
                st = airflow.wait_run(DAG_ID, run_id, timeout=900)
                results[option] = (run_id, st, before)
                print(f"{option}: approve task tries {st.tasks['approve']['try_number']}, "
                      f"bot answers {[a for a in bot.answered if a['run_id'] == run_id]}")
                failed = {t: airflow.task_log(DAG_ID, run_id, t)[-3000:]
                          for t, v in st.tasks.items() if v["state"] in ("failed", "up_for_retry")}
                assert st.tasks["approve"]["state"] == "success", (st.tasks, failed)
                if option == "Reject":
                    after = znodes(zk)
                    results[option] = (run_id, st, before, after)
        for option, (run_id, st, before, *after) in results.items():
            answers = [a for a in bot.answered if a["run_id"] == run_id]
            requests = [b for b in bot.received if b.get("run_id") == run_id and b.get("event") == "approval_requested"]
            assert len(requests) == 1, [b.get("event") for b in bot.received if b.get("run_id") == run_id]
            assert len(answers) == 1 and "error" not in answers[0], answers
            assert answers[0]["state_before"] == "running", answers     # answered before the attempt was parked
            record = json.loads(RunFolder.for_run(runs, DAG_ID, run_id).approval.read_text())
            assert record["by"] == "bob" and record["decision"] == {"Approve": "approved", "Reject": "rejected"}[option]
            if option == "Approve":
                assert st.state == "success", st.tasks
                assert not any(REMOVED in r for r in assignment(zk).values())
                assert zk.exists("/admin/reassign_partitions") is None and throttle_configs(zk) == {}
            else:
                assert st.tasks["guards"]["state"] == "skipped", st.tasks
                assert after[0] == before                         # nothing written
    finally:
        bot.shutdown()
        bot.server_close()
        zk.stop()
        zk.close()
        cluster.stop()
