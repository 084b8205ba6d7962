"""The stalled-wave excerpt: the trigger's first stall warning writes the merged state-change
entries about the wave's stuck partitions into the run folder; no broker_logs, no excerpt; a bad
location is written as the reason, never an error."""

from __future__ import annotations

import gzip
import shutil
import time
from pathlib import Path

from kafka_zk.codecs import PartitionState, TopicPartition
from kafka_sim.state_change_log import StateChangeLog
from formats.state_change_files import state_change_excerpt
from procedures.reports.state_change import excerpt_path, read_excerpts, remember_broker_logs, write_stall_excerpt
from operators.triggers.reassignment import WaveDoneTrigger
from tests.operators.test_wave_trigger import _book, _cluster, _first_event

START = 1714557600.0   # 2024-05-01 10:00:00 UTC


def _broker_logs(d: Path) -> Path:
    """Two brokers' logs in Kafka 2.4's format, broker 1's rotated file gzip-compressed."""
    log = StateChangeLog(str(d), START)
    live = {1, 2, 3}
    for i, t in enumerate((0.0, 60.0, 3600.0, 3660.0)):
        for tp in (TopicPartition("orders", 0), TopicPartition("orders", 1), TopicPartition("audit", 0)):
            st = PartitionState(1 + i % 2, i, (1, 2), 3)
            log.partition_changed(1, 3, t, tp, PartitionState(3, i, (1, 2), 3), st, i, live)
            log.leader_and_isr_sent(1, 3, t, tp, st, i, (1, 2, 3), (3,), (), live)
    log.close()
    rotated = d / "broker-1" / "state-change.log.2024-05-01-10.gz"
    with open(d / "broker-1" / "state-change.log", "rb") as src, gzip.open(rotated, "wb") as dst:
        shutil.copyfileobj(src, dst)
    (d / "broker-1" / "state-change.log").write_text("")
    return d


def test_excerpt_window_ends_at_the_newest_entry_or_surrounds_a_given_time(tmp_path: Path) -> None:
    logs = _broker_logs(tmp_path / "logs")
    ex = state_change_excerpt(str(logs), [("orders", 0)], None, 120)
    assert ex.start == "2024-05-01 10:59:00,000" and ex.end == "2024-05-01 11:01:00,000"
    assert ex.lines and all("orders-0" in line or "partitionIndex=0, controllerEpoch" in line and "orders" in line
                            for line in ex.lines)
    assert {line.split(": ", 1)[0] for line in ex.lines} == {f"{logs}/broker-1/state-change.log.2024-05-01-10.gz",
                                                            f"{logs}/broker-2/state-change.log",
                                                            f"{logs}/broker-3/state-change.log"}
    around = state_change_excerpt(f"{logs}/*/state-change.log*", [("audit", 0)], "2024-05-01 10:00:30,000", 30)
    assert around.lines and all("10:00:00,000" in line or "10:01:00,000" in line for line in around.lines)
    cut = state_change_excerpt(str(logs), [("orders", 0), ("orders", 1)], None, 7200, max_entries=3)
    assert cut.matched > 3 and len([ln for ln in cut.lines if "] TRACE [" in ln]) == 3


def test_the_first_stall_warning_writes_the_excerpt_for_the_stuck_partitions(zk, zk_conn_id, tmp_path: Path) -> None:
    logs = _broker_logs(tmp_path / "logs")
    _cluster(zk, [3, 2, 1], [1, 2], adding=[3], removing=[1])
    run_dir = _book(tmp_path)
    remember_broker_logs(run_dir, f"{logs}/*/state-change.log*", window_s=300)
    event = _first_event(WaveDoneTrigger(zk_conn_id, "r", 0, time.time() + 30, run_dir, poll_interval=0.1,
                                         stall_warning_s=0.2, stall_timeout_s=0.6))
    assert event["status"] == "stalled"
    text = excerpt_path(run_dir, 0).read_text()
    assert text.startswith("# wave 0: no progress for ") and "# stuck partitions: orders-0" in text
    body = [ln for ln in text.splitlines() if not ln.startswith("#")]
    assert body and all("orders-0" in ln or "topicName='orders', partitionIndex=0" in ln for ln in body)
    assert "audit" not in text and "orders-1" not in text
    assert read_excerpts(run_dir)[0]["wave"] == 0


def test_no_broker_logs_no_excerpt_and_a_bad_location_is_the_reason(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    remember_broker_logs(run_dir, "  ")
    assert write_stall_excerpt(run_dir, 1, ["orders-0"], "stalled") is None
    assert read_excerpts(run_dir) == []
    remember_broker_logs(run_dir, str(tmp_path / "nowhere" / "*.log"))
    path = write_stall_excerpt(run_dir, 1, ["orders-0"], "wave 1 made no progress for 900s")
    assert path is not None and "# no excerpt: broker logs" in path.read_text() and "match no file" in path.read_text()


def test_the_final_report_shows_the_excerpts(tmp_path: Path) -> None:
    from operators.reports.final import render

    logs = _broker_logs(tmp_path / "logs")
    run_dir = tmp_path / "run"
    remember_broker_logs(run_dir, str(logs))
    write_stall_excerpt(run_dir, 2, ["orders-1"], "wave 2 made no progress for 900s")
    values = {"outcome": "FAILED", "removed": [4], "run_id": "r", "dag_id": "decommission_brokers",
              "dry_run": False, "plan_hash": "h", "approval_text": "", "guards_text": "", "writes": 0,
              "planned_writes": 0, "audit_path": "", "throttles_text": "", "waves": [], "verify_text": "",
              "drained_text": "", "failures": ["execute_waves"], "charts": [], "report_path": "",
              "reasons": ["wave 2 stalled"], "reassignment_running": True, "throttles_kept_note": None,
              "controller_text": "on broker 1 (not a removed broker)",
              "what": "Decommission", "subject": "brokers 4", "subject_short": "brokers 4",
              "history": [], "refused": False, "state_change_excerpts": read_excerpts(run_dir), "dead_lines": []}
    md = render("final_report.md.j2", **values)
    assert "## What the brokers logged about stalled waves" in md and "Wave 2" in md
    assert "Changed partition orders-1 from OnlinePartition" in md and "orders-0" not in md
    html = render("final_report.html.j2", **values)
    assert "topicName=&#39;orders&#39;, partitionIndex=1" in html       # escaped, in a <pre>
