"""The batch runbooks behind the maintenance windows, like a decommission: a ``delete_topics`` run
triggered outside its window waits (deferred) for it and says so, and a ``preferred_leader_election``
batch predicted to overrun the open window is not started but waits for the next window. A
single-change runbook (``topic_changes``) waits before its first write, and not when it writes nothing.

Through Airflow (``dag.test``) on the emulator with a real ZooKeeper, with test-sized windows
computed from the wall clock (daily windows opening at a minute the test picks). People are told
through a real webhook receiver. What was written when is read from the run's audit log (each
write is audited before it is made) and judged against the windows file with the project's own
calendar (:func:`procedures.windows.calendar.open_window`).
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk.audit import AuditLog
from procedures.windows.calendar import open_window
from procedures.windows.spec import load_windows_file
from tests.dags.conftest import new_chroot, plain_client, zk_connection

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
RACKS = {1: "a", 2: "b", 3: "c"}


def daily(name: str, opens: datetime, minutes: int, runbook: str) -> str:
    return (f"      - name: {name}\n        start: \"{opens.minute} {opens.hour} * * *\"\n"
            f"        duration: {minutes}m\n        timezone: UTC\n        runbooks: [{runbook}]\n")


def windows_file(path: Path, conn_id: str, *windows: str) -> Path:
    path.write_text(f"clusters:\n  {conn_id}:\n    windows:\n" + "".join(windows))
    return path


def minute_floor(t: datetime) -> datetime:
    return t.replace(second=0, microsecond=0)


def wait_until(moment: datetime, bound_s: float = 90) -> None:
    """Sleep until the wall clock reaches ``moment`` (the test's windows are wall-clock ones); a moment
    further than ``bound_s`` away is a mistake in the test's set-up, refused rather than waited for."""
    ahead = (moment - datetime.now(timezone.utc)).total_seconds()
    if ahead > bound_s:
        raise ValueError(f"{moment} is {ahead:.0f}s away (more than {bound_s}s): fix the test's windows")
    while datetime.now(timezone.utc) < moment:
        time.sleep(max(0.05, min(1.0, (moment - datetime.now(timezone.utc)).total_seconds())))


def at(record) -> datetime:
    return datetime.fromisoformat(record.time.replace("Z", "+00:00"))


@pytest.fixture
def cluster(zk_server):
    chroot = new_chroot(zk_server)
    cluster = EmulatedCluster(zk_server.connect_string + chroot, ClusterSpec(brokers=RACKS, seed=0)).start()
    zk = plain_client(zk_server, chroot)
    yield cluster, zk_connection(zk_server, chroot), zk
    zk.stop()
    zk.close()
    cluster.stop()


def test_delete_topics_outside_its_window_waits_deferred_notifies_and_deletes_inside_the_next_one(
        cluster, tmp_path, monkeypatch, webhook_sink) -> None:
    from cli.local_run import run_dag

    emulator, conn_id, zk = cluster
    for i in range(4):
        emulator.create_topic(f"tmp-{i}", {0: [1, 2, 3], 1: [2, 3, 1]})
    # a daily window opening at the second minute boundary from now: the run starts outside it
    opens = minute_floor(datetime.now(timezone.utc)) + timedelta(minutes=2)
    path = windows_file(tmp_path / "windows.yaml", conn_id, daily("soon", opens, 2, "delete_topics"))
    monkeypatch.setenv("KAFKA_RUNBOOKS_WINDOWS_FILE", str(path))
    result = run_dag("delete_topics", {
        "zk_conn_id": conn_id, "run_root": str(tmp_path / "runs"), "topic_regex": "tmp-.*", "batch_size": 2,
        "batch_timeout_s": 60, "poll_interval_s": 0.2, "notify_conn_ids": [webhook_sink.conn_id]},
        answer="Approve", approver="bob.sre")
    assert result.state == "success", result.task_states
    assert not {f"tmp-{i}" for i in range(4)} & set(zk.get_children("/brokers/topics"))

    book = json.loads((result.run_folder / "windows.json").read_text())
    [pause] = book["pauses"]
    assert pause["before_wave"] == 0 and "no window admitting delete_topics is open" in pause["reason"], pause
    assert pause["what"] == "batch 1/2" and pause["throttles"] is None, pause     # no "wave 0", no throttles
    assert pause["resumes_at"] == opens.isoformat(timespec="seconds") and pause["resumed_at"], pause
    # nothing was written before the window opened, every marker inside it
    window = load_windows_file(path).cluster(conn_id)
    markers = [r for r in AuditLog.read(result.run_folder / "audit.jsonl") if r.path.startswith("/admin/delete_topics/")]
    assert len(markers) == 4 and all(open_window(window, "delete_topics", at(r)) is not None for r in markers), \
        [r.time for r in markers]
    assert min(at(r) for r in markers) >= opens
    # people were told: approval requested, waiting for the window, finished
    events = [m["event"] for m in webhook_sink.wait_for(3)]
    assert events[:2] == ["approval_requested", "window_paused"] and events[-1] == "finished", events
    paused = next(m for m in webhook_sink.wait_for(3) if m["event"] == "window_paused")
    assert opens.isoformat(timespec="seconds") in paused["text"], paused


def test_an_election_batch_that_would_overrun_the_open_window_is_not_started_but_waits_for_the_next(
        cluster, tmp_path, monkeypatch, webhook_sink) -> None:
    from cli.local_run import run_dag

    emulator, conn_id, zk = cluster
    emulator.create_topic("orders", {p: [1 + p % 3, 1 + (p + 1) % 3, 1 + (p + 2) % 3] for p in range(6)})
    for b in (1, 2):                                 # leadership moves away from brokers 1 and 2
        emulator.kill_broker(b)
        assert emulator.wait_until(lambda: zk.exists("/controller") is not None, 30)
        emulator.restart_broker(b)
        assert emulator.wait_idle(30)
    # window A is open when the run starts but is shorter (2 minutes) than the batch's predicted 130 s,
    # so the batch never fits in it however fast the run reaches it; window B, a minute after A closes,
    # lasts 3 minutes and fits it
    now = datetime.now(timezone.utc)
    a_opens = minute_floor(now) if now.second <= 15 else minute_floor(now) + timedelta(minutes=1)
    b_opens = a_opens + timedelta(minutes=3)
    path = windows_file(tmp_path / "windows.yaml", conn_id,
                        daily("short", a_opens, 2, "preferred_leader_election"),
                        daily("long", b_opens, 3, "preferred_leader_election"))
    monkeypatch.setenv("KAFKA_RUNBOOKS_WINDOWS_FILE", str(path))
    wait_until(a_opens)
    result = run_dag("preferred_leader_election", {
        "zk_conn_id": conn_id, "run_root": str(tmp_path / "runs"), "batch_timeout_s": 130, "poll_interval_s": 0.1,
        "notify_conn_ids": [webhook_sink.conn_id]}, answer="Approve", approver="carol.sre")
    assert result.state == "success", result.task_states

    book = json.loads((result.run_folder / "windows.json").read_text())
    first, *rest = book["decisions"]
    assert not first["start"] and first["predicted_s"] == 130.0, first
    assert "does not fit" in first["reason"] and "window short" in first["reason"], first
    assert book["pauses"][0]["resume_window"] == "long" and book["pauses"][0]["resumed_at"], book["pauses"]
    started = [d for d in rest if d["start"]]
    assert started and all("window long" in d["reason"] for d in started), rest
    # the one election node was written inside window B, never in what was left of A
    window = load_windows_file(path).cluster(conn_id)
    writes = [r for r in AuditLog.read(result.run_folder / "audit.jsonl")
              if r.op == "create" and r.path == "/admin/preferred_replica_election"]
    assert writes and all(at(r) >= b_opens for r in writes), [r.time for r in writes]
    assert all(open_window(window, "preferred_leader_election", at(r)).window.name == "long" for r in writes)
    progress = json.loads((result.run_folder / "election_progress.json").read_text())["batches"]
    assert all(b["state"] == "done" for b in progress), progress
    events = [m["event"] for m in webhook_sink.wait_for(3)]
    assert "window_paused" in events and events[-1] == "finished", events


def test_topic_changes_waits_for_its_window_before_applying_and_not_when_the_diff_writes_nothing(
        cluster, tmp_path, monkeypatch, webhook_sink) -> None:
    from cli.local_run import run_dag

    emulator, conn_id, zk = cluster
    opens = minute_floor(datetime.now(timezone.utc)) + timedelta(minutes=2)
    path = windows_file(tmp_path / "windows.yaml", conn_id, daily("soon", opens, 2, "topic_changes"))
    monkeypatch.setenv("KAFKA_RUNBOOKS_WINDOWS_FILE", str(path))
    spec = "topics:\n  payments:\n    partitions: 3\n    replication_factor: 2\n"
    conf = {"zk_conn_id": conn_id, "run_root": str(tmp_path / "runs"), "spec": spec, "verify_timeout_s": 60,
            "notify_conn_ids": [webhook_sink.conn_id]}
    result = run_dag("topic_changes", conf, answer="Approve", approver="bob.sre")
    assert result.state == "success", result.task_states
    [pause] = json.loads((result.run_folder / "windows.json").read_text())["pauses"]
    assert pause["resumes_at"] == opens.isoformat(timespec="seconds") and pause["resumed_at"], pause
    creates = [r for r in AuditLog.read(result.run_folder / "audit.jsonl") if r.path == "/brokers/topics/payments"]
    assert creates and all(at(r) >= opens for r in creates), [r.time for r in creates]
    assert "payments" in zk.get_children("/brokers/topics")
    events = [m["event"] for m in webhook_sink.wait_for(3)]
    assert events == ["approval_requested", "window_paused", "finished"], events

    # the same spec again writes nothing: no window is waited for (the only window now opens in 12 h)
    path.write_text(path.read_text().replace(f"{opens.minute} {opens.hour} * * *",
                                             f"{opens.minute} {(opens.hour + 12) % 24} * * *"))
    again = run_dag("topic_changes", conf, answer="Approve", approver="bob.sre")
    assert again.state == "success", again.task_states
    assert not (again.run_folder / "windows.json").exists()
    assert again.task_states["window"] == "success"


def test_a_batch_that_fits_its_window_only_at_the_opening_waits_once_then_starts_instead_of_deferring_forever(
        cluster, tmp_path, monkeypatch, webhook_sink) -> None:
    """A 1-minute window every minute and a batch predicted to take the whole minute (its timeout,
    before any batch finished): it fits only if it starts the very second a window opens. The run
    reaches it mid-window, so it waits for the next opening; resumed there a moment late it would
    again not fit what is left, and before the resume allowance it deferred from opening to opening
    forever (pytest-timeout ends that). Now it waits once and starts, within the allowance."""
    from cli.local_run import run_dag
    from procedures.windows.guard import resume_allowance_s

    emulator, conn_id, zk = cluster
    emulator.create_topic("tmp-0", {0: [1, 2, 3]})
    path = windows_file(tmp_path / "windows.yaml", conn_id,
                        '      - name: every-minute\n        start: "* * * * *"\n        duration: 1m\n'
                        '        timezone: UTC\n        runbooks: [delete_topics]\n')
    monkeypatch.setenv("KAFKA_RUNBOOKS_WINDOWS_FILE", str(path))
    result = run_dag("delete_topics", {
        "zk_conn_id": conn_id, "run_root": str(tmp_path / "runs"), "topic_regex": "tmp-.*", "batch_size": 10,
        "batch_timeout_s": 60, "poll_interval_s": 0.2}, answer="Approve", approver="bob.sre")
    assert result.state == "success", result.task_states
    assert "tmp-0" not in zk.get_children("/brokers/topics")

    book = json.loads((result.run_folder / "windows.json").read_text())
    [pause] = book["pauses"]                                      # waited once, not at every opening
    assert pause["before_wave"] == 0 and "does not fit" in pause["reason"] and pause["resumed_at"], pause
    first, second = book["decisions"]
    assert not first["start"] and first["predicted_s"] == 60.0, first
    assert second["start"] and "it waited for this opening" in second["reason"], second
    assert f"resume allowance {resume_allowance_s(60):.0f}s" in second["reason"], second
    # the marker was written in the window the batch waited for, after its opening
    opened = datetime.fromisoformat(pause["resumes_at"])
    [marker] = [r for r in AuditLog.read(result.run_folder / "audit.jsonl") if r.path.startswith("/admin/delete_topics/")]
    assert opened <= at(marker) < opened + timedelta(minutes=1), (marker.time, pause)
