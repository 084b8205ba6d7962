"""The note and the notification say how a run ended, for the runbooks that said it worst (issue 36).

Through Airflow (``dag.test``), on a real ZooKeeper (and the emulator for the roll), with a real
webhook receiver as the notification channel:

* a run refused at its first task for a conf key that is no Param (topic_changes, which had no
  note at all): the note says REFUSED, names the key and the step, and that nothing was written;
  the notification says the same and links the final report once, by URL, never a worker path;
* a rolling restart whose broker never comes back (the roll had no note, and its notification
  said "FAILED at roll"): the note and the notification name the broker and the gate it stopped
  at, and how to resume; the final report is the contract's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.dags.conftest import new_chroot, plain_client, zk_connection
from tests.dags.scenario import data_tree

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]


def run_note(dag_id: str, run_id: str) -> str | None:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        return session.scalar(select(DagRun).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id)).note


def last_outcome_message(webhook_sink, run_id: str) -> dict:
    posted = [p for p in webhook_sink.wait_for(1) if p["run_id"] == run_id]
    return [p for p in posted if p["event"] in ("finished", "failed")][-1]


def test_a_conf_key_that_is_no_param_ends_refused_with_the_key_named_on_the_note_and_the_message(
        zk_server, webhook_sink, tmp_path: Path) -> None:
    from cli.local_run import run_dag

    chroot = new_chroot(zk_server)
    zk = plain_client(zk_server, chroot)
    try:
        before = data_tree(zk)
        run_root = tmp_path / "runs"
        result = run_dag("topic_changes", {"zk_conn_id": zk_connection(zk_server, chroot), "run_root": str(run_root),
                                           "spec": "topics: {}\n", "notify_conn_ids": [webhook_sink.conn_id],
                                           "skip_approval": True}, answer=None)
        assert result.state == "failed", result.task_states
        note = run_note("topic_changes", result.run_id)
        assert note is not None, "no note on a run refused at its first task"
        lines = note.splitlines()
        assert lines[0].startswith("REFUSED: diff: unknown conf key(s) for topic_changes: 'skip_approval'"), note
        assert lines[1] == "written: nothing written", note
        assert lines[2].startswith("next: Fix the cause above and trigger a new run"), note
        message = last_outcome_message(webhook_sink, result.run_id)
        assert message["event"] == "failed" and message["title"].startswith(
            "Topic changes: REFUSED — diff: unknown conf key(s) for topic_changes: 'skip_approval'"), message
        assert "'skip_approval'" in message["text"] and "nothing written" in message["text"], message["text"]
        assert message["text"].count("final_report.html") == 1 and message["link"].endswith("/final_report.html")
        assert str(run_root) not in message["text"] and str(run_root) not in json.dumps(message["link"])
        outcome = json.loads((result.run_folder / "outcome.json").read_text())
        assert (outcome["kind"], outcome["written"]) == ("refused", 0)
        assert (result.run_folder / "final_report.html").read_text().count("skip_approval") >= 1
        assert data_tree(zk) == before
    finally:
        zk.stop()
        zk.close()


def test_a_roll_stopped_at_a_broker_names_the_broker_and_the_gate_on_the_note_and_the_message(
        zk_server, webhook_sink, tmp_path: Path) -> None:
    from cli.local_run import run_dag
    from tests.rolling_restart_env import restart_action, start_roll_cluster
    from procedures.restart.plan import plan_roll
    from kafka_zk.snapshot import read_snapshot

    chroot = new_chroot(zk_server)
    connect = zk_server.connect_string + chroot
    with start_roll_cluster(connect) as _cluster:
        zk = plain_client(zk_server, chroot)
        try:
            first = plan_roll(read_snapshot(zk, with_configs=False), "all", [], "broker", "x {broker}").brokers[0]
            stop_only = restart_action(connect).replace(" restart {broker}", " shutdown-broker {broker}")
            result = run_dag("rolling_restart", {"zk_conn_id": zk_connection(zk_server, chroot),
                                                 "run_root": str(tmp_path / "runs"), "action": stop_only,
                                                 "poll_interval_s": 0.1, "register_timeout_s": 5,
                                                 "notify_conn_ids": [webhook_sink.conn_id]}, answer="Approve")
        finally:
            zk.stop()
            zk.close()
    assert result.state == "failed" and result.task_states["roll"] == "failed", result.task_states
    note = run_note("rolling_restart", result.run_id)
    assert note is not None, "no note on a stopped roll"
    first_line = note.splitlines()[0]
    assert first_line.startswith("STOPPED: ") and f"broker {first}" in first_line and "registration" in first_line, note
    assert "next: To resume the roll, clear its roll task" in note, note
    message = last_outcome_message(webhook_sink, result.run_id)
    assert message["event"] == "failed" and f": STOPPED — broker {first}" in message["title"], message
    assert f"broker {first}" in message["text"] and "registration" in message["text"], message["text"]
    assert "FAILED at roll" not in message["text"] and message["text"].count("final_report.html") == 1
    report = (result.run_folder / "final_report.html").read_text()
    assert f"broker {first}" in report and "Timeline per batch" in report
    assert (result.run_folder / "plan_report.html").is_file()
