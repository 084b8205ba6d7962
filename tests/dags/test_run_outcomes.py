"""A run says how it ended: on the DAG run's note and in the notification, in the same words (both
rendered from the run's outcome contract, :mod:`procedures.outcome`).

Through Airflow (``dag.test``) on the emulator, with decommission_brokers (plan handed over with
``plan_from``, made by the planner's kernels) and a real webhook receiver as the notification
channel: a plan rejected by a person, an approval left to expire, and a run with
``outside_window=true``; and a trigger with a conf key that is not a Param, refused by the first
task before any work.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk.codecs import TopicPartition
from tests.dags.conftest import new_chroot, plain_client, zk_connection
from tests.dags.kernel_plan import write_kernel_plan
from tests.dags.moving_runbook import zk_writes
from tests.dags.scenario import always_open_windows, audit, data_tree

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
DAG_ID = "decommission_brokers"
TOPIC = {p: r for p, r in enumerate([(4, 1), (2, 4), (4, 3), (1, 4)])}


@pytest.fixture(scope="module")
def env(zk_server, tmp_path_factory):
    root = tmp_path_factory.mktemp("outcomes")
    chroot = new_chroot(zk_server)
    cluster = EmulatedCluster(zk_server.connect_string + chroot,
                              ClusterSpec(brokers={1: "a", 2: "b", 3: "a", 4: "b"}, speed=100000.0, seed=0)).start()
    zk = plain_client(zk_server, chroot)
    cluster.create_topics({"t": (TOPIC, {p: 1024 * 1024 for p in TOPIC}, None)})
    write_kernel_plan(zk_server.connect_string + chroot, root / "plan", [4],
                      {TopicPartition("t", p): 1024 * 1024 for p in TOPIC}, 100 * 1024 ** 2)
    yield cluster, zk, zk_connection(zk_server, chroot), root
    zk.stop()
    zk.close()
    cluster.stop()


def run(env, webhook_sink, answer: str | None = "Reject", answer_delay: float = 0.0, **conf):
    from cli.local_run import run_dag

    cluster, zk, conn_id, root = env
    assert cluster.wait_idle(30)
    return run_dag(DAG_ID, {"zk_conn_id": conn_id, "run_root": str(root / f"r{time.monotonic_ns()}"),
                            "brokers_to_remove": [4], "plan_from": str(root / "plan"), "poll_interval_s": 0.2,
                            "throttle_bytes_per_sec": 100 * 1024 ** 2, "notify_conn_ids": [webhook_sink.conn_id],
                            **conf}, answer=answer, approver="carol.sre", answer_delay=answer_delay)


def run_note(result) -> str | None:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        return session.scalar(select(DagRun).where(DagRun.dag_id == DAG_ID, DagRun.run_id == result.run_id)).note


def finished(webhook_sink, result) -> dict:
    """The last "finished"/"failed" notification of the run, as the webhook received it."""
    posted = [p for p in webhook_sink.wait_for(1) if p["run_id"] == result.run_id]
    return [p for p in posted if p["event"] in ("finished", "failed")][-1]


def test_a_rejected_run_says_who_rejected_it_and_that_nothing_was_written(env, webhook_sink) -> None:
    _, zk, _, _ = env
    before = data_tree(zk)
    result = run(env, webhook_sink, answer="Reject")
    assert result.state == "failed", result.task_states
    note = run_note(result)
    assert note is not None and note.startswith("REJECTED: rejected by carol.sre at "), note
    assert note.splitlines()[1] == "written: nothing written", note
    message = finished(webhook_sink, result)
    assert "rejected by carol.sre at" in message["title"] and "unknown" not in message["title"], message
    assert "Written: nothing written" in message["text"], message["text"]
    assert zk_writes(audit(result.run_folder)) == [] and data_tree(zk) == before


def test_an_approval_answered_after_it_expired_says_expired_not_rejected_by_unknown(env, webhook_sink, monkeypatch, tmp_path) -> None:
    _, zk, conn_id, _ = env
    windows = tmp_path / "windows.yaml"
    windows.write_text(always_open_windows(conn_id, "    approval_expires_after: 10s\n"))
    monkeypatch.setenv("KAFKA_RUNBOOKS_WINDOWS_FILE", str(windows))
    before = data_tree(zk)
    result = run(env, webhook_sink, answer="Approve", answer_delay=14)     # after the 10 s expiry
    assert result.state == "failed", result.task_states
    request = json.loads((result.run_folder / "approval_request.json").read_text())
    note = run_note(result)
    assert note is not None and note.startswith(f"EXPIRED: approval expired at {request['expires_at']}"), note
    assert note.splitlines()[1] == "written: nothing written", note
    message = finished(webhook_sink, result)
    assert "approval expired at" in message["title"], message
    assert "rejected by unknown" not in message["text"] and "rejected" not in message["title"], message
    assert zk_writes(audit(result.run_folder)) == [] and data_tree(zk) == before


@pytest.mark.parametrize("key", ["skip_approval", "PRE_APPROVED", "brokers_to_removed"])
def test_a_conf_key_that_is_no_param_fails_the_first_task_before_any_work(env, webhook_sink, key, capfd) -> None:
    _, zk, _, _ = env
    before = data_tree(zk)
    result = run(env, webhook_sink, answer=None, **{key: True})
    assert result.state == "failed", result.task_states
    assert result.task_states["snapshot"] == "failed", result.task_states
    assert all(s in ("upstream_failed", "skipped", "failed") for t, s in result.task_states.items()
               if t not in ("final_report", "notify", "remove_throttles")), result.task_states
    out = capfd.readouterr().out
    assert f"unknown conf key(s) for {DAG_ID}: '{key}'" in out, out[-3000:]
    if key == "brokers_to_removed":
        assert "did you mean 'brokers_to_remove'?" in out
    else:
        assert "no trigger-time way to skip the approval" in out
    assert not (result.run_folder / "snapshot.jsonl").exists()
    assert data_tree(zk) == before
    note = run_note(result).splitlines()         # the outcome contract: refused, the key, nothing written
    assert note[0].startswith(f"REFUSED: snapshot: unknown conf key(s) for {DAG_ID}: '{key}'"), note
    assert note[1] == "written: nothing written", note


def test_a_run_outside_the_windows_says_so_on_the_run_in_the_report_and_in_the_notification(
        env, webhook_sink) -> None:
    result = run(env, webhook_sink, answer="Approve", outside_window=True)
    assert result.state == "success", result.task_states
    note = run_note(result)
    assert note is not None and note.startswith("SUCCEEDED:"), note
    assert "outside_window=true" in note, note
    assert "outside_window=true" in (result.run_folder / "final_report.md").read_text()
    message = finished(webhook_sink, result)
    assert message["event"] == "finished" and "outside_window=true" in message["text"], message["text"]


@pytest.mark.parametrize("typed,cli_text", [("-1", "-1"), ("04", "04"), ("4,4", "4,4"), ([4, 1, 4], "4,1,4")])
def test_a_broker_id_the_cli_refuses_fails_the_first_task_with_the_clis_text(env, webhook_sink, typed, cli_text,
                                                                              capfd, tmp_path) -> None:
    """Issue 26: ``-1``, ``04``, ``4,4`` and a repeated id, as brokers_to_remove, are refused by the
    run's first task with the words ``kafka-runbook plan decommission --brokers`` prints for them."""
    from cli.main import main

    (tmp_path / "snapshot.jsonl").write_text("{}\n")
    assert main(["plan", "decommission", f"--brokers={cli_text}", "--snapshot", str(tmp_path / "snapshot.jsonl"),
                 "--out", str(tmp_path / "out")]) == 1
    cli_error = capfd.readouterr().err.strip()
    assert cli_error.startswith("Error: --brokers: "), cli_error
    _, zk, _, _ = env
    before = data_tree(zk)
    result = run(env, webhook_sink, answer=None, brokers_to_remove=typed)
    assert result.state == "failed" and result.task_states["snapshot"] == "failed", result.task_states
    out = capfd.readouterr().out
    assert "brokers_to_remove: " + cli_error.removeprefix("Error: --brokers: ") in out, out[-3000:]
    assert not (result.run_folder / "snapshot.jsonl").exists()
    assert data_tree(zk) == before
