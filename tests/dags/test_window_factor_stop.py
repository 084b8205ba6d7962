"""A wave that the run's own measurements say no window can hold stops the run, naming it.

The guards check the plan's predictions against the longest window before any write. A run then
corrects each next wave's prediction by the factor its finished waves measured (actual over
predicted); when the corrected figure is longer than every window, waiting for an opening would
wait forever (each opening deferring to the next, as a rehearsal was seen doing). Here the plan
is made from sizes ten times smaller than the emulated partitions hold, so wave 0 takes ~10x its
prediction and a later wave no 1-minute window can hold is refused before anything of it is
written. Real Airflow (``dag.test``), the emulator in real time (speed 1), rehearsal off.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_zk.codecs import TopicPartition
from tests.dags.conftest import new_chroot, plain_client, zk_connection
from tests.dags.kernel_plan import write_kernel_plan
from tests.dags.moving_runbook import zk_writes
from tests.dags.scenario import REMOVED, TOPICS, audit, start_cluster, throttle_configs

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
MIB = 1024 ** 2
UNIT = 12 * MIB               # one "GB" of the scenario's sizes: a 40-unit partition copies in 60 s
THROTTLE = 8 * MIB
UNDERSTATED = 10              # the plan believes every partition is this many times smaller
WINDOWS = """clusters:
  {conn_id}:
    windows:
      - name: every-minute
        start: "* * * * *"
        duration: 1m
        timezone: UTC
        runbooks: [decommission_brokers]
"""


def test_a_wave_slower_than_every_window_by_the_runs_own_measure_stops_the_run_naming_it(
        zk_server, tmp_path: Path, monkeypatch) -> None:
    from cli.local_run import run_dag

    chroot = new_chroot(zk_server)
    real = {TopicPartition(t, p): (size // 1024 ** 3) * UNIT for t, (_, by_p) in TOPICS.items()
            for p, size in by_p.items()}
    cluster = start_cluster(zk_server.connect_string + chroot, speed=1.0, sizes=real)
    zk = plain_client(zk_server, chroot)
    try:
        conn_id = zk_connection(zk_server, chroot)
        windows_path = tmp_path / "windows.yaml"
        windows_path.write_text(WINDOWS.format(conn_id=conn_id))
        monkeypatch.setenv("KAFKA_RUNBOOKS_WINDOWS_FILE", str(windows_path))
        waves = write_kernel_plan(zk_server.connect_string + chroot, tmp_path / "plan", REMOVED,
                                  {tp: size // UNDERSTATED for tp, size in real.items()}, THROTTLE)
        predicted = [w["predicted_seconds"] for w in
                     json.loads((tmp_path / "plan" / "waves.json").read_text())["waves"]]
        assert waves >= 2 and max(predicted) < 20, predicted              # the plan fits any window
        assert max(p * UNDERSTATED for p in predicted[1:]) > 60, predicted  # the truth does not
        users_before = throttle_configs(zk)
        result = run_dag("decommission_brokers", {
            "zk_conn_id": conn_id, "brokers_to_remove": REMOVED, "run_root": str(tmp_path / "runs"),
            "throttle_bytes_per_sec": THROTTLE, "max_moves_per_broker": 2, "poll_interval_s": 0.5,
            "plan_from": str(tmp_path / "plan"), "rehearse": "off"}, answer="Approve")
        assert result.state == "failed" and result.task_states["execute_waves"] == "failed", result.task_states

        book = json.loads((result.run_folder / "waves.json").read_text())
        done = [w["id"] for w in book["waves"] if w["status"] == "done"]
        stopped = min(w["id"] for w in book["waves"] if w["status"] != "done")
        assert done and stopped >= 1, book
        text = (result.run_folder / "final_report.md").read_text()
        assert f"wave {stopped} is now predicted to take" in text and "longer than the longest window" in text, text
        assert "Lengthen the window" in text, text
        # nothing of the refused wave was written: the node was written once per finished wave only
        submitted = [r for r in zk_writes(audit(result.run_folder))
                     if r["path"] == "/admin/reassign_partitions" and r["actor"].endswith("/execute_waves")]
        assert len(submitted) == len(done), submitted
        assert throttle_configs(zk) == users_before                       # the teardown still ran
    finally:
        zk.stop()
        zk.close()
        cluster.stop()
