"""rolling_restart behind the maintenance windows: a broker is not started on when its predicted time
does not fit in what is left of the open window; the roll waits (deferred), says so, and restarts it
in the next window.

Through Airflow (``dag.test``) on the emulator (6 brokers / 3 racks, Kafka 2.4.1's restart timing) with
test-sized daily windows computed from the wall clock, as tests/dags/test_batch_windows.py does for
the other batch runbooks; people are told through a real webhook receiver; when each broker's action
ran is read from the progress file and judged with the project's own window calendar.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from procedures.restart.gates import registration_czxid
from procedures.windows.calendar import open_window
from procedures.windows.spec import load_windows_file
from tests.dags.conftest import new_chroot, plain_client, zk_connection
from tests.dags.test_batch_windows import daily, minute_floor, wait_until, windows_file
from tests.rolling_restart_env import restart_action, start_roll_cluster

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]


def test_a_broker_whose_restart_would_overrun_the_window_waits_for_the_next_one(
        zk_server, tmp_path, monkeypatch, webhook_sink) -> None:
    from cli.local_run import run_dag

    chroot = new_chroot(zk_server)
    connect = zk_server.connect_string + chroot
    with start_roll_cluster(connect):
        zk = plain_client(zk_server, chroot)
        conn_id = zk_connection(zk_server, chroot)
        try:
            before = {b: registration_czxid(zk, b) for b in (1, 2)}
            # window A is open when the run starts but has less than the predicted 150 s per broker left
            # (it lasts 2 minutes, the run starts in its first 15 s); window B, a minute after A closes, fits
            now = datetime.now(timezone.utc)
            a_opens = minute_floor(now) if now.second <= 15 else minute_floor(now) + timedelta(minutes=1)
            b_opens = a_opens + timedelta(minutes=3)
            path = windows_file(tmp_path / "windows.yaml", conn_id, daily("short", a_opens, 2, "rolling_restart"),
                                daily("long", b_opens, 10, "rolling_restart"))
            monkeypatch.setenv("KAFKA_RUNBOOKS_WINDOWS_FILE", str(path))
            wait_until(a_opens)
            result = run_dag("rolling_restart", {
                "zk_conn_id": conn_id, "run_root": str(tmp_path / "runs"), "brokers": [1, 2],
                "action": restart_action(connect), "predicted_batch_s": 150, "poll_interval_s": 0.1,
                "notify_conn_ids": [webhook_sink.conn_id]}, answer="Approve", approver="carol.sre")
            assert result.state == "success", result.task_states
            book = json.loads((result.run_folder / "windows.json").read_text())
            first = book["decisions"][0]
            assert not first["start"] and "does not fit" in first["reason"] and "window short" in first["reason"]
            assert book["pauses"][0]["resume_window"] == "long" and book["pauses"][0]["resumed_at"], book["pauses"]
            # each broker's action ran inside window B, none in what was left of A
            window = load_windows_file(path).cluster(conn_id)
            batches = json.loads((result.run_folder / "restart_progress.json").read_text())["batches"]
            started = [datetime.fromtimestamp(b["submitted_at"], timezone.utc) for b in batches]
            assert all(t >= b_opens and open_window(window, "rolling_restart", t).window.name == "long"
                       for t in started), started
            assert all(registration_czxid(zk, b) > before[b] for b in (1, 2))
            events = [m["event"] for m in webhook_sink.wait_for(2)]
            assert "window_paused" in events and events[-1] == "finished", events
        finally:
            zk.stop()
            zk.close()
