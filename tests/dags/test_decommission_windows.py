"""A decommission that does not fit in one maintenance window: it stops before the window ends,
waits (deferred) for the next one, resumes there and finishes — never starting a wave predicted
to overrun, never writing a wave outside a window.

Through Airflow (``dag.test``) on the emulator running in real time (speed 1: a wave takes as
long as its bytes need at the throttle, so the planner's predictions are honest), with a
test-sized windows file: a 1-minute window every 2 minutes. The plan is made without Spark
(``plan_from``). ZooKeeper itself is the witness: a sampler records the creation time
(``ctime``, ZooKeeper's own clock) of every ``/admin/reassign_partitions`` node, and each must
fall inside a window; the audit log's wave writes are checked the same way.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from kafka_zk.codecs import TopicPartition
from procedures.windows.calendar import open_window
from procedures.windows.guard import resume_allowance_s
from procedures.windows.spec import load_windows_file
from tests.dags.conftest import new_chroot, plain_client, zk_connection
from tests.dags.kernel_plan import write_kernel_plan
from tests.dags.moving_runbook import zk_writes
from tests.dags.test_run_outcomes import run_note
from tests.dags.scenario import REMOVED, TOPICS, assignment, audit, start_cluster, throttle_configs
from tests.zk_helpers import ZkSampler, sampling_client

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
MIB = 1024 ** 2
UNIT = 3 * MIB                # the scenario's sizes, one "GB" of theirs = 3 MiB here
THROTTLE = 8 * MIB            # 8 MiB/s: a 40-unit partition copies in 15 s
WINDOWS = """clusters:
  {conn_id}:
    windows:
      - name: every-other-minute
        start: "*/2 * * * *"
        duration: 1m
        timezone: UTC
        runbooks: [decommission_brokers]
"""


def record_creation(ctimes: set[int]):
    """A :class:`ZkSampler` sample: adds ZooKeeper's ``ctime`` of the /admin/reassign_partitions node
    it sees (if any) to ``ctimes``."""
    def sample(zk) -> None:
        stat = zk.exists("/admin/reassign_partitions")
        if stat is not None:
            ctimes.add(stat.ctime)
    return sample


def test_waves_that_do_not_fit_wait_for_the_next_window_and_none_is_written_outside_one(
        zk_server, tmp_path: Path, monkeypatch, smtp_sink, webhook_sink) -> None:
    from cli.local_run import run_dag

    chroot = new_chroot(zk_server)
    sizes = {TopicPartition(t, p): (size // 1024 ** 3) * UNIT for t, (_, by_p) in TOPICS.items()
             for p, size in by_p.items()}
    cluster = start_cluster(zk_server.connect_string + chroot, speed=1.0, sizes=sizes)
    zk = plain_client(zk_server, chroot)
    ctimes: set[int] = set()
    sampler = ZkSampler(sampling_client(zk_server.connect_string + chroot), record_creation(ctimes),
                        name="creation-sampler")
    try:
        conn_id = zk_connection(zk_server, chroot)
        windows_path = tmp_path / "windows.yaml"
        windows_path.write_text(WINDOWS.format(conn_id=conn_id))
        monkeypatch.setenv("KAFKA_RUNBOOKS_WINDOWS_FILE", str(windows_path))
        waves = write_kernel_plan(zk_server.connect_string + chroot, tmp_path / "plan", REMOVED, sizes, THROTTLE)
        predicted = [w["predicted_seconds"] for w in
                     json.loads((tmp_path / "plan" / "waves.json").read_text())["waves"]]
        assert waves >= 3 and sum(predicted) > 60, predicted    # cannot fit in one 1-minute window
        users_before = throttle_configs(zk)
        sampler.start()
        result = run_dag("decommission_brokers", {
            "zk_conn_id": conn_id, "brokers_to_remove": REMOVED, "run_root": str(tmp_path / "runs"),
            "throttle_bytes_per_sec": THROTTLE, "max_moves_per_broker": 2, "poll_interval_s": 0.5,
            "plan_from": str(tmp_path / "plan"), "notify_conn_ids": [smtp_sink.conn_id, webhook_sink.conn_id]},
            answer="Approve")
        sampler.stop()
        assert result.state == "success", result.task_states

        # the run paused at least once, and resumed
        book = json.loads((result.run_folder / "windows.json").read_text())
        assert book["pauses"], book
        assert all(p["resumed_at"] for p in book["pauses"]), book["pauses"]
        assert all(p["throttles"] == "kept" for p in book["pauses"])

        # every wave started in a window, predicted (with the measured factor) to end before it closes
        # (or, for a wave that waited for that window's opening and was resumed late, within the
        # resume allowance after it: docs/maintenance-windows.md)
        windows = load_windows_file(windows_path).cluster(conn_id)
        starts = [d for d in book["decisions"] if d["start"]]
        assert sorted(d["wave"] for d in starts) == list(range(waves))
        for d in starts:
            at = datetime.fromisoformat(d["at"])
            window = open_window(windows, "decommission_brokers", at)
            assert window is not None, d
            allowed = timedelta(seconds=resume_allowance_s(60) if "it waited for this opening" in d["reason"] else 0)
            assert d["predicted_s"] is None or at + timedelta(seconds=d["predicted_s"]) <= window.closes + allowed, d
        refused = [d for d in book["decisions"] if not d["start"]]
        assert refused and all("does not fit" in d["reason"] or "no window" in d["reason"] for d in refused)

        # ZooKeeper's own clock: every reassignment node was created inside a window
        # (a wave may finish between two samples; a read lost to a session expiry under load is in errors)
        assert len(ctimes) >= waves - 1, (ctimes, sampler.samples, sampler.errors)
        for ctime in ctimes:
            created = datetime.fromtimestamp(ctime / 1000, tz=timezone.utc)
            assert open_window(windows, "decommission_brokers", created) is not None, created
        node_writes = [r for r in zk_writes(audit(result.run_folder)) if r["path"] == "/admin/reassign_partitions"]
        assert len([r for r in node_writes if r["actor"].endswith("/execute_waves")]) == waves
        for r in node_writes:                     # the waves, and the demotion before them
            written = datetime.fromisoformat(r["time"].replace("Z", "+00:00"))
            assert open_window(windows, "decommission_brokers", written) is not None, r["time"]

        # the cluster: drained, no throttle of ours left; people were told of the pause and the end
        assert all(REMOVED[0] not in replicas for replicas in assignment(zk).values())
        assert throttle_configs(zk) == users_before
        subjects = [m["Subject"] for m in smtp_sink.wait_for(3)]
        assert any("approval requested" in s for s in subjects), subjects
        assert any("paused until the next maintenance window" in s for s in subjects), subjects
        events = [m["event"] for m in webhook_sink.wait_for(3)]
        assert "window_paused" in events and events[-1] == "finished", events
        # the outcome names the pauses: in the finished notification, the final report and the run's note
        finished = webhook_sink.wait_for(3)[-1]
        assert "window pause before wave" in finished["text"], finished["text"]
        assert "window pause before wave" in (result.run_folder / "final_report.md").read_text()
        note = run_note(result)
        assert note is not None and note.startswith("SUCCEEDED:") and "window pause before wave" in note, note
    finally:
        sampler.close()
        zk.stop()
        zk.close()
        cluster.stop()
