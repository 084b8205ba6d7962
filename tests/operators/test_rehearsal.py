"""Rehearsals: the executor's own code runs the exact plan on an emulated copy seeded from the
run's snapshot and sizes (operators/rehearsal/). A real ZooKeeper (the copy on a fresh chroot of
it), the emulator on both sides, the plan made by the plan job in the driver (no Spark)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_sim.seed import broker_racks, partition_sizes, topic_layout
from kafka_zk.snapshot import read_snapshot
from formats.snapshot_file import write_snapshot
from cli.rehearsal_run import RehearsalInput, rehearse
from procedures.windows.spec import parse_windows_text
from spark_jobs import plan_job
from tests.zk_helpers import tree

GiB, MiB = 1024 ** 3, 1024 ** 2
START = datetime(2026, 11, 27, 0, 0, tzinfo=timezone.utc)


@dataclass
class Files:
    root: Path
    snapshot: Path
    sizes: Path

    def plan(self, name: str, throttle: int, moves: int = 6) -> Path:
        out = self.root / name
        plan_job.execute(plan_job.parse_args([
            "--snapshot", str(self.snapshot), "--op", "decommission", "--brokers", "4,5", "--sizes", str(self.sizes),
            "--out", str(out), "--engine", "driver", "--throttle", str(throttle),
            "--max-moves-per-broker", str(moves)]), None)
        return out


@pytest.fixture
def real(zk_connect, zk, tmp_path):
    """The 'real' cluster (emulated): 6 brokers in 3 racks, 72 partitions of 2 GiB, RF 3."""
    racks = broker_racks(6, 3)
    layout = topic_layout(racks, 6, 12, 3, seed=5)
    sizes = partition_sizes(layout, "fixed", 2 * GiB, seed=5)
    with EmulatedCluster(zk_connect, ClusterSpec(brokers=racks, speed=3600.0)) as cluster:
        cluster.create_topics({t: (layout[t], sizes[t], None) for t in layout})
        (tmp_path / "log-dirs.json").write_text(cluster.log_dirs_json())
        write_snapshot(read_snapshot(zk), str(tmp_path / "snapshot.jsonl"))
        yield Files(tmp_path, tmp_path / "snapshot.jsonl", tmp_path / "log-dirs.json")


def _input(files: Files, plan: Path, **extra) -> RehearsalInput:
    return RehearsalInput(snapshot=str(files.snapshot), sizes=str(files.sizes), plan_dir=str(plan),
                          out_dir=str(files.root / f"rehearsal-{plan.name}"), cluster="prod", start_at=START, **extra)


def _copies(zk_server) -> list[str]:
    """The rehearsal copies' chroots on the shared server."""
    client = KazooClient(hosts=zk_server.connect_string, timeout=10)
    client.start(timeout=10)
    try:
        return sorted(c for c in client.get_children("/") if c.startswith("kafka-rehearsal-"))
    finally:
        client.stop()
        client.close()


def test_a_rehearsal_runs_every_wave_of_the_exact_plan_and_writes_nothing_to_the_real_cluster(real, zk, zk_server):
    plan = real.plan("plan", throttle=100 * MiB)
    summary = json.loads((plan / "summary.json").read_text())
    before = tree(zk)
    copies_before = _copies(zk_server)
    report = rehearse(_input(real, plan), zookeeper=zk_server.connect_string)
    assert tree(zk) == before                                  # the real cluster's ZooKeeper: 0 changes
    assert _copies(zk_server) == copies_before                 # its copy removed: 0 znodes left behind
    assert report.plan_hash == summary["plan_hash"] and report.passed, report.problems
    assert len(report.waves) == summary["waves"] > 1
    assert all(w.end_s is not None and w.end_s > w.start_s for w in report.waves)
    assert [w.id for w in report.waves] == list(range(len(report.waves)))
    assert report.waves[0].start_s < report.waves[-1].end_s
    assert re.fullmatch(rf"rehearsed: {len(report.waves)} waves, \d+\.\d (h|min), no window pause, peak disk broker "
                        r"\d \d+\.\d GiB \(capacity unknown\), 0 problems", report.headline()), report.headline()
    for line in report.waves:                                 # the throttle bounds every wave from below
        assert line.seconds >= line.busiest_bytes / (100 * MiB) * 0.99
    out = Path(report_dir := real.root / "rehearsal-plan")
    saved = json.loads((out / "rehearsal.json").read_text())
    assert saved["passed"] is True and saved["headline"] == report.headline()
    assert "## Timeline per wave" in (out / "rehearsal.md").read_text()
    audit = [json.loads(line) for line in (report_dir / "audit.jsonl").read_text().splitlines()]
    assert audit and all(r["actor"].startswith("kafka-runbook rehearse") for r in audit)
    assert {d.broker for d in report.disks} == set(range(6))


def test_the_timeline_is_the_same_at_x3600_and_x200000_simulated_speed(real, zk_server):
    """Simulated time runs only while the trigger sleeps, to its exact wake-up, and the emulator hears
    every write before it runs (procedures/rehearsal/executor.py): at ×200,000 a wall millisecond is
    200 simulated seconds, so any host-dependent delay left would show here as minutes."""
    plan = real.plan("plan", throttle=100 * MiB)
    base = _input(real, plan, demote=(4, 5))          # the demote step too: it polls on simulated time
    slow = rehearse(replace(base, speed=3600.0, out_dir=str(real.root / "slow")), zookeeper=zk_server.connect_string)
    fast = rehearse(replace(base, speed=200_000.0, out_dir=str(real.root / "fast")), zookeeper=zk_server.connect_string)
    assert slow.passed and fast.passed, (slow.problems, fast.problems)
    assert slow.elections["seconds"] == pytest.approx(fast.elections["seconds"], abs=1.0)
    spans = lambda report: [(w.start_s, w.end_s) for w in report.waves]
    assert len(spans(slow)) > 1
    for (s0, e0), (s1, e1) in zip(spans(slow), spans(fast), strict=True):
        assert s1 == pytest.approx(s0, abs=1.0) and e1 == pytest.approx(e0, abs=1.0), (spans(slow), spans(fast))


def test_a_plan_that_would_overfill_a_disk_mid_move_is_reported(real, zk_server):
    plan = real.plan("plan", throttle=100 * MiB)            # planned without the disks
    capacity = real.root / "capacity.json"
    capacity.write_text(json.dumps({"brokers": {str(b): 90 * GiB for b in range(6)}}))   # 72 GiB each before
    report = rehearse(_input(real, plan, capacity=str(capacity), stall_timeout_s=1800.0),
                      zookeeper=zk_server.connect_string)
    assert not report.passed
    full = [d for d in report.disks if d.pct is not None and d.pct > 99.0]
    assert full, report.disks
    text = " ".join(report.problems)
    assert f"broker {full[0].broker}'s disk reached" in text and "a full disk stops its followers fetching" in text
    assert "WaveStalled" in text
    assert "problems" in report.headline() and f"peak disk broker {report.peak().broker} at 100 %" in report.headline()


def test_a_wave_that_would_run_into_a_windows_close_is_reported_as_a_pause(real, zk_server):
    plan = real.plan("plan", throttle=10 * MiB)              # ~20 min per wave
    windows = parse_windows_text("clusters:\n  prod:\n    windows:\n      - name: hourly\n"
                                 "        start: \"0 * * * *\"\n        duration: 30m\n        timezone: UTC\n"
                                 "        runbooks: ['*']\n")
    report = rehearse(_input(real, plan, windows=windows), zookeeper=zk_server.connect_string)
    assert report.passed, report.problems
    assert report.pauses and report.pauses[0]["before_wave"] == 1
    assert report.pauses[0]["resumes_at"] == "2026-11-27T01:00:00+00:00"
    assert "1 window pause (before wave 1)" in report.headline() or "window pauses (before wave 1," in report.headline()
    starts = [START.timestamp() + w.start_s for w in report.waves]
    assert starts[1] >= datetime(2026, 11, 27, 1, 0, tzinfo=timezone.utc).timestamp()
    assert "would wait until hourly opens at 2026-11-27T01:00:00+00:00" in (real.root / "rehearsal-plan" /
                                                                             "rehearsal.md").read_text()
