"""The live progress page's figures from a run folder (issue 24, finding 5), the demo's console lines
built from the same figures, and the approval's readable expiry."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from cli.demo_progress import progress_lines
from kafka_zk.codecs import TopicPartition
from procedures.run_folder import RunFolder
from operators.approval.step import expiry_text
from procedures.live_progress import render_progress_page, run_progress
from procedures.waves.poll_record import record_poll
from procedures.waves.book import FROM_LOG_SIZES, WaveBook, WaveMove, WaveProgress, WaveSpec

MiB = 1024 ** 2


def _folder(tmp_path: Path, size: int) -> RunFolder:
    """Three waves of two partitions: 0 done in 100 s (predicted 80 s), 1 copying since t=1000, 2 pending."""
    folder = RunFolder(tmp_path / "run").ensure()
    moves = [WaveMove(TopicPartition("t", p), (1, 2), (3, 2), size) for p in range(6)]
    waves = (WaveSpec(0, tuple(moves[0:2]), "done", 800.0, 900.0), WaveSpec(1, tuple(moves[2:4]), "submitted", 1000.0),
             WaveSpec(2, tuple(moves[4:6])))
    WaveBook("h" * 64, waves).save(folder.wave_progress)
    folder.plan_dir.mkdir(parents=True, exist_ok=True)
    folder.write_json(folder.plan_dir / "waves.json", {"version": 1, "waves": [
        {"index": i, "predicted_seconds": 80.0, "partitions": []} for i in range(3)]})
    return folder


def test_the_page_shows_each_wave_with_rates_and_etas_from_the_run_folder(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 100 * MiB)
    assert run_progress(folder, now=1010.0).waves[1].eta_s == 90.0     # no poll yet: predicted x factor - spent
    record_poll(folder.root, WaveProgress(1, 1, 2, 50 * MiB, 200 * MiB, (), FROM_LOG_SIZES), 2.5 * MiB, 0.0,
                4 * MiB, now=1060.0)
    p = run_progress(folder, now=1060.0)
    done, copying, pending = p.waves
    assert (done.status, copying.status, pending.status) == ("done", "copying", "pending")
    assert done.measured_rate == 2 * MiB and done.predicted_rate == 2.5 * MiB and p.factor == 1.25
    assert copying.done == 1 and copying.fraction == 0.75 and copying.throttle_bps == 4 * MiB
    assert copying.eta_s == 20.0                                      # 50 MiB at the measured 2.5 MiB/s
    assert p.eta_s == 20.0 + 100.0                                    # + the pending wave's 80 s x 1.25
    assert p.partitions == (3, 6)
    page = render_progress_page(folder, "decommission_brokers", "r1", active=True, now=1061.0)
    assert '<meta http-equiv="refresh" content="5">' in page and "<b>3/6</b> partitions moved" in page
    assert "150.0 MiB / 200.0 MiB" in page and "2.5 MiB/s → 2.5 MiB/s" in page and "from follower log sizes" in page
    assert "run ETA <b>2 min 00 s</b>" in page and "1.25× their prediction" in page
    assert "refresh" not in render_progress_page(folder, "decommission_brokers", "r1", active=False, now=1061.0)


def test_without_sizes_progress_counts_partitions_and_never_says_remaining_of_0_b(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 0)
    record_poll(folder.root, WaveProgress(1, 1, 2, 38 * MiB, 0, ()), 0.0, 0.0, None, now=1060.0)
    p = run_progress(folder, now=1060.0)
    assert not p.sized and p.waves[1].bytes_remaining is None and p.waves[1].fraction == 0.5
    page = render_progress_page(folder, "decommission_brokers", "r1", active=True, now=1061.0)
    assert "Sizes unknown (no sizes_file)" in page and "of 0 B" not in page and "0 B" not in page


def test_the_log_line_without_planned_sizes_never_says_remaining_of_0_b() -> None:
    from procedures.waves.book import progress_line

    measured = progress_line(WaveProgress(0, 0, 2, 38 * MiB + 100 * 1024, 0, (), FROM_LOG_SIZES), 0, 2, 10.0, MiB)
    assert "38.1 MiB remaining (the plan had no sizes)" in measured and "of 0 B" not in measured
    unknown = progress_line(WaveProgress(0, 1, 2, 0, 0, ()), 1, 2, 10.0, 0)
    assert "sizes unknown" in unknown and "0 B" not in unknown.split(",")[2]


def test_a_stall_and_its_cause_are_on_the_page(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 100 * MiB)
    record_poll(folder.root, WaveProgress(1, 0, 2, 200 * MiB, 200 * MiB, ()), 0.0, 95.0, 4 * MiB, now=1100.0,
                stalled=True, causes="broker 3 is not registered under /brokers/ids")
    page = render_progress_page(folder, "decommission_brokers", "r1", active=True, now=1100.0)
    assert "Stalled — wave 1: no progress for 95s: broker 3 is not registered under /brokers/ids" in page


def test_before_the_first_wave_the_page_says_so(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run").ensure()
    assert "No wave or batch has started yet" in render_progress_page(folder, "d", "r", active=True)


def test_the_demo_prints_a_line_when_a_wave_starts_progresses_and_ends(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 100 * MiB)
    first = run_progress(folder, now=1010.0)
    assert progress_lines(None, first, rhythm_due=False) == [
        "wave 1/3 done (2/6 partitions moved in all)", "wave 2/3 started: 2 partitions, 200.0 MiB to copy"]
    record_poll(folder.root, WaveProgress(1, 1, 2, 50 * MiB, 200 * MiB, (), FROM_LOG_SIZES), 2.5 * MiB, 0.0,
                4 * MiB, now=1060.0)
    [line] = progress_lines(first, run_progress(folder, now=1060.0), rhythm_due=True)
    assert line == ("wave 2/3: 1/2 partitions, 150.0 MiB of 200.0 MiB copied, 2.5 MiB/s, ETA wave 20 s, "
                    "run 2 min 00 s")
    assert progress_lines(first, run_progress(folder, now=1060.0), rhythm_due=False) == []


def test_the_approval_expiry_reads_as_a_time_and_a_duration() -> None:
    now = datetime(2026, 11, 26, 9, 15, tzinfo=timezone.utc)
    assert expiry_text(now, timedelta(hours=12)) == "expires at 21:15 UTC, in 12 h"
    assert expiry_text(now, timedelta(hours=18)) == "expires at 03:15 UTC on Fri 27 Nov, in 18 h"
    assert expiry_text(now, timedelta(minutes=45)) == "expires at 10:00 UTC, in 45 min"
    assert expiry_text(now, timedelta(hours=1, minutes=30)) == "expires at 10:45 UTC, in 1.5 h"
