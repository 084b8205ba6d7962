"""cluster_health's proposals on a real Airflow (scheduler, triggerer, DAG processor, API server as
processes): the health run proposes, a person approves, nothing is proposed twice, a healed anomaly's
waiting proposal is cancelled.

Issue 37's acceptance (the second test): a broker killed; after the grace, one health run proposes its
decommission, bob approves, every replica is re-created, and a later health run proposes nothing new;
a second broker killed, proposed, and back before anyone approved: its proposal is cancelled.
Then the machinery on a skew (the first test): the emulated cluster (3 brokers) gets a topic whose
replicas all sit on brokers 1 and 2: a skew beyond rebalance's targets. A health run (``skew_persist_s=0``) proposes a ``rebalance`` run as the
``proposer`` account through the REST API; that run plans, rehearses (its approval body carries the
rehearsal's headline) and waits in Required actions, triggered by ``proposer`` (so the four-eyes
rule refuses it as approver). A second health run proposes nothing new; bob approves; the run
succeeds; a third health run finds nothing to propose; the approval request was notified once (a
webhook). Then a second skew is planted and proposed; the proposer answering its approval is refused
(four eyes) and nothing is written; the cooldown keeps the next health run from asking again; with
no cooldown the next one proposes again, and that skew is healed (the topic deleted) while its run
waits for approval: the next health run ends that run with a note saying why. Each test runs one
Airflow stack.
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from procedures.run_folder import RunFolder
from tests.conftest import new_chroot
from tests.dags.moving_runbook import zk_writes
from tests.dags.scenario import assignment, audit
from tests.notify_servers import WebhookSink
from tests.real_airflow import RealAirflow

pytestmark = [pytest.mark.airflow, pytest.mark.real_airflow]

RACKS = {1: "a", 2: "b", 3: "c"}
DAGS = ("cluster_health", "rebalance")
CONN = "zk_prop"


def health(airflow: RealAirflow, runs: Path, **params) -> dict:
    """Trigger one health run as alice (``params`` over the defaults), wait for it, return its health.json."""
    run_id = airflow.trigger("cluster_health", {"zk_conn_id": CONN, "run_root": str(runs), "skew_persist_s": 0,
                                                "fail_on_severity": "critical", **params}, as_user="alice")
    st = airflow.wait_run("cluster_health", run_id, timeout=600)
    assert st.state == "success", st.tasks
    doc = json.loads((RunFolder.for_run(runs, "cluster_health", run_id).root / "health.json").read_text())
    doc["_run_id"] = run_id
    return doc


def rebalance_runs(airflow: RealAirflow) -> list[dict]:
    return airflow.api("GET", "/dags/rebalance/dagRuns?limit=100")["dag_runs"]


def test_a_skew_is_proposed_once_approved_by_a_person_and_a_healed_one_is_cancelled(zk_server, tmp_path):
    from tests.dags.conftest import plain_client

    chroot = new_chroot(zk_server, prefix="/proposals")
    cluster = EmulatedCluster(zk_server.connect_string + chroot,
                              ClusterSpec(brokers=RACKS, speed=100000.0, seed=0)).start()
    zk = plain_client(zk_server, chroot)
    runs = tmp_path / "runs"
    hook = WebhookSink("notify_prop").__enter__()     # the approval requests the proposed runs notify
    try:
        cluster.create_topics({"orders": ({p: [1 + p % 3, 1 + (p + 1) % 3] for p in range(6)}, None, None),
                               "skewed": ({p: [1 + p % 2, 2 - p % 2] for p in range(6)}, None, None)})
        assert cluster.wait_idle(30)
        connections = {CONN: {"conn_type": "kafka_zookeeper", "host": zk_server.connect_string,
                              "extra": {"chroot": chroot, "connect_timeout": 10, "session_timeout": 10}},
                       "spark_default": {"conn_type": "spark", "host": "local[2]"}}
        connections["notify_prop"] = json.loads(os.environ["AIRFLOW_CONN_NOTIFY_PROP"])
        stack = RealAirflow(tmp_path / "airflow", DAGS, connections, users=("proposer", "alice", "bob"),
                            extra_env={"KAFKA_HEALTH_INTERVAL_MINUTES": "1440"})
        stack.env["AIRFLOW_CONN_AIRFLOW_API"] = json.dumps({
            "conn_type": "http", "host": "127.0.0.1", "port": stack.port, "login": "proposer",
            "password": stack.passwords["proposer"]})
        with stack as airflow:
            for dag_id in DAGS:
                airflow.wait_dag(dag_id)

            first = health(airflow, runs, notify_conn_ids=["notify_prop"])
            assert [a["key"] for a in first["anomalies"]] == ["skew:brokers"]
            (proposed,) = first["proposals"]["proposed"]
            run_id = proposed["run_id"]
            assert proposed["runbook"] == "rebalance" and run_id.startswith("proposal__skew__brokers__")
            report = (RunFolder.for_run(runs, "cluster_health", first["_run_id"]).root / "health_report.md").read_text()
            assert f"[`{run_id}`](" in report and f"/dags/rebalance/runs/{run_id}" in report

            airflow.wait_task_state("rebalance", run_id, "approve", "awaiting_input", 900)
            run = airflow.api("GET", f"/dags/rebalance/dagRuns/{run_id}")
            assert run["triggering_user_name"] == "proposer"
            assert run["note"].startswith(f"proposed by cluster_health run {first['_run_id']} for skew:brokers")
            assert run["conf"]["rehearse"] == "on" and run["conf"]["zk_conn_id"] == CONN
            body = airflow.api("GET", f"/dags/rebalance/dagRuns/{run_id}/taskInstances/approve/-1/hitlDetails")["body"]
            assert "rehearsed:" in body and "proposer triggered this run and cannot approve it" in body
            request = json.loads((RunFolder.for_run(runs, "rebalance", run_id).root / "approval_request.json").read_text())
            assert request["triggered_by"] == "proposer"        # the four-eyes rule refuses it as approver

            second = health(airflow, runs, notify_conn_ids=["notify_prop"])
            assert second["proposals"]["proposed"] == [] and [p["run_id"] for p in second["proposals"]["open"]] == [run_id]
            assert len(rebalance_runs(airflow)) == 1
            asked = [m for m in hook.wait_for(1) if m["event"] == "approval_requested"]
            assert [m["run_id"] for m in asked] == [run_id]          # notified once, by the proposed run

            airflow.approve_when_asked("rebalance", run_id, as_user="bob", timeout=300)
            assert airflow.wait_run("rebalance", run_id, timeout=900).state == "success"
            third = health(airflow, runs)
            assert third["anomalies"] == [] and third["proposals"]["proposed"] == [] == third["proposals"]["cancelled"]
            assert len(rebalance_runs(airflow)) == 1

            # a second skew: the proposer cannot approve its own proposal
            cluster.create_topic("burst", {p: [1 + p % 2, 2 - p % 2] for p in range(8)})
            assert cluster.wait_idle(30)
            fourth = health(airflow, runs)
            (refused,) = fourth["proposals"]["proposed"]
            airflow.wait_task_state("rebalance", refused["run_id"], "approve", "awaiting_input", 900)
            airflow.approve_when_asked("rebalance", refused["run_id"], as_user="proposer", timeout=300)
            st = airflow.wait_run("rebalance", refused["run_id"], timeout=600)
            assert st.state == "failed" and st.tasks["approve"]["state"] == "failed", st.tasks
            record = json.loads(RunFolder.for_run(runs, "rebalance", refused["run_id"]).approval.read_text())
            assert record["decision"] == "rejected" and "four-eyes" in record["note"], record
            assert zk_writes(audit(RunFolder.for_run(runs, "rebalance", refused["run_id"]).root)) == []
            cooling = health(airflow, runs)
            assert cooling["proposals"]["proposed"] == [] and "cooldown" in cooling["proposals"]["waiting"][0]["why"]

            # proposed again with no cooldown, then healed while its run waits for approval
            fourth = health(airflow, runs, proposal_cooldown_s=0)
            (again,) = fourth["proposals"]["proposed"]
            airflow.wait_task_state("rebalance", again["run_id"], "approve", "awaiting_input", 900)
            zk.create("/admin/delete_topics/burst", b"")
            assert cluster.wait_until(lambda: zk.exists("/brokers/topics/burst") is None, 60)
            fifth = health(airflow, runs)
            (cancelled,) = fifth["proposals"]["cancelled"]
            assert cancelled["run_id"] == again["run_id"]
            st = airflow.wait_run("rebalance", again["run_id"], timeout=600)
            assert st.state == "failed" and st.tasks["approve"]["state"] == "failed", st.tasks
            assert st.tasks["guards"]["state"] == "upstream_failed", st.tasks
            note = airflow.api("GET", f"/dags/rebalance/dagRuns/{again['run_id']}")["note"]
            assert f"cancelled by cluster_health run {fifth['_run_id']}" in note and "nothing was written" in note
            assert not RunFolder.for_run(runs, "rebalance", again["run_id"]).approval.exists()
            assert len(rebalance_runs(airflow)) == 3
    finally:
        hook.__exit__(None, None, None)
        zk.stop()
        zk.close()
        cluster.stop()


def test_a_broker_down_past_its_grace_is_proposed_for_decommission_and_approved_by_a_person(zk_server, tmp_path):
    """Issue 37's acceptance: kill a broker and wait; within the grace plus one health run a
    decommission of it waits in Required actions with its plan and rehearsal headline; bob approves;
    it succeeds (every replica re-created, none left on the dead broker); a later health run proposes
    nothing new."""
    from tests.dags.conftest import plain_client

    chroot = new_chroot(zk_server, prefix="/proposals_dead")
    brokers = {1: "a", 2: "b", 3: "c", 4: "a"}
    cluster = EmulatedCluster(zk_server.connect_string + chroot,
                              ClusterSpec(brokers=brokers, speed=100000.0, seed=0)).start()
    zk = plain_client(zk_server, chroot)
    runs = tmp_path / "runs"
    dead, grace = 4, 20
    try:
        cluster.create_topics({"orders": ({p: [1 + p % 4, 1 + (p + 1) % 4] for p in range(8)},
                                          {p: 10 ** 6 for p in range(8)}, None)})
        assert cluster.wait_idle(30)
        connections = {CONN: {"conn_type": "kafka_zookeeper", "host": zk_server.connect_string,
                              "extra": {"chroot": chroot, "connect_timeout": 10, "session_timeout": 10}},
                       "spark_default": {"conn_type": "spark", "host": "local[2]"}}
        stack = RealAirflow(tmp_path / "airflow", ("cluster_health", "decommission_brokers"), connections,
                            users=("proposer", "alice", "bob"), extra_env={"KAFKA_HEALTH_INTERVAL_MINUTES": "1440"})
        stack.env["AIRFLOW_CONN_AIRFLOW_API"] = json.dumps({
            "conn_type": "http", "host": "127.0.0.1", "port": stack.port, "login": "proposer",
            "password": stack.passwords["proposer"]})
        with stack as airflow:
            for dag_id in ("cluster_health", "decommission_brokers"):
                airflow.wait_dag(dag_id)
            cluster.kill_broker(dead)
            assert cluster.wait_until(lambda: zk.exists(f"/brokers/ids/{dead}") is None, 30)

            def health_run() -> dict:
                return health(airflow, runs, broker_down_grace_s=grace, skew_persist_s=3600)

            first = health_run()
            assert [a["key"] for a in first["anomalies"]] == [f"broker_down:broker {dead}"]
            assert first["proposals"]["proposed"] == [] and "seen since" in first["proposals"]["waiting"][0]["why"]
            # the grace counts from the first health run that saw it down: the next run after it proposes
            seen = datetime.fromisoformat(first["proposals"]["waiting"][0]["first_seen"])
            time.sleep(max(0.0, (seen - datetime.now(timezone.utc)).total_seconds() + grace) + 1)
            second = health_run()
            (proposed,) = second["proposals"]["proposed"]
            run_id = proposed["run_id"]
            assert proposed["runbook"] == "decommission_brokers"
            airflow.wait_task_state("decommission_brokers", run_id, "approve", "awaiting_input", 900)
            run = airflow.api("GET", f"/dags/decommission_brokers/dagRuns/{run_id}")
            assert run["triggering_user_name"] == "proposer" and run["conf"]["brokers_to_remove"] == [dead]
            body = airflow.api("GET", f"/dags/decommission_brokers/dagRuns/{run_id}/taskInstances/approve/-1/"
                                      "hitlDetails")["body"]
            assert "rehearsed:" in body and f"broker {dead} is down" in body

            airflow.approve_when_asked("decommission_brokers", run_id, as_user="bob", timeout=300)
            assert airflow.wait_run("decommission_brokers", run_id, timeout=900).state == "success"
            held = [p for p, r in assignment(zk).items() if dead in r]
            assert held == []
            third = health_run()
            assert not [a for a in third["anomalies"] if a["kind"] == "broker_down"], third["anomalies"]
            assert third["proposals"]["proposed"] == []
            assert len(airflow.api("GET", "/dags/decommission_brokers/dagRuns?limit=100")["dag_runs"]) == 1

            # a broker that comes back while its decommission waits: the proposal is cancelled
            cluster.kill_broker(3)
            assert cluster.wait_until(lambda: zk.exists("/brokers/ids/3") is None, 30)
            seen = health_run()
            seen_at = datetime.fromisoformat(seen["proposals"]["waiting"][0]["first_seen"])
            time.sleep(max(0.0, (seen_at - datetime.now(timezone.utc)).total_seconds() + grace) + 1)
            (back,) = health_run()["proposals"]["proposed"]
            assert back["key"] == "broker_down:broker 3"
            airflow.wait_task_state("decommission_brokers", back["run_id"], "approve", "awaiting_input", 900)
            cluster.restart_broker(3)
            assert cluster.wait_until(lambda: zk.exists("/brokers/ids/3") is not None, 30)
            healed = health_run()
            assert [c["run_id"] for c in healed["proposals"]["cancelled"]] == [back["run_id"]]
            st = airflow.wait_run("decommission_brokers", back["run_id"], timeout=600)
            assert st.state == "failed" and st.tasks["approve"]["state"] == "failed", st.tasks
            note = airflow.api("GET", f"/dags/decommission_brokers/dagRuns/{back['run_id']}")["note"]
            assert "cancelled by cluster_health run" in note and "broker_down:broker 3" in note
            assert zk_writes(audit(RunFolder.for_run(runs, "decommission_brokers", back["run_id"]).root)) == []
    finally:
        zk.stop()
        zk.close()
        cluster.stop()
