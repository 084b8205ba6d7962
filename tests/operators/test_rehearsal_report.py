"""The rehearsal report's headline and markdown, which plan hashes count as rehearsed
(``require_rehearsal``), and the report read back from ``rehearsal.json`` as the rehearse step
reads what its child process wrote: pure, from literal reports."""

from __future__ import annotations

from dataclasses import replace

from operators.approval.step import rehearsed_hashes
import pytest

from procedures.rehearsal.report import (DiskPeak, RehearsalReport, RehearsalReportError, WaveLine, read_report,
                                        render_markdown)

GiB = 1024 ** 3


def _report(**extra) -> RehearsalReport:
    waves = tuple(WaveLine(i, 10, 50 * GiB, 2, 20 * GiB, 1800.0, i * 2000.0, i * 2000.0 + 1900.0) for i in range(8))
    base = dict(plan_hash="ab" * 32, runbook="decommission_brokers", cluster="prod", start_at="2026-11-27T01:00:00+00:00",
                throttle_bytes_per_s=100 * 1024 ** 2, waves=waves, elapsed_s=4.2 * 3600, copying_s=8 * 1900.0,
                pauses=(), overran=(), disks=(DiskPeak(1, 70 * GiB, 10.0, 100 * GiB, 85.0),
                                              DiskPeak(2, 81 * GiB, 3000.0, 100 * GiB, 85.0)),
                disk_samples=40, elections={"elected": 12, "batches": 1, "not_eligible": [], "seconds": 3.0},
                problems=(), seeded="6 brokers", not_copied=(), speed=3600.0, wall_s=20.0, finished=True)
    base.update(extra)
    return RehearsalReport(**base)


def test_the_headline_says_waves_hours_pauses_the_fullest_disk_and_problems() -> None:
    assert _report().headline() == ("rehearsed: 8 waves, 4.2 h, no window pause, peak disk broker 2 at 81 %, "
                                    "0 problems")
    paused = _report(pauses=({"before_wave": 3, "at": "x", "reason": "r"}, {"before_wave": 6, "at": "y", "reason": "r"}),
                     problems=("WaveStalled: wave 7 made no progress",))
    assert paused.headline() == ("rehearsed: 8 waves, 4.2 h, 2 window pauses (before wave 3, 6), peak disk broker 2 "
                                 "at 81 %, 1 problem")
    assert not paused.passed
    stalled = _report(waves=_report().waves[:5] + tuple(replace(w, end_s=None) for w in _report().waves[5:]),
                      finished=False)
    assert stalled.headline().startswith("rehearsed: 5 of 8 waves done, ") and not stalled.passed
    unknown = _report(disks=(DiskPeak(4, 3 * GiB, 0.0, None, None),))
    assert "peak disk broker 4 3.0 GiB (capacity unknown)" in unknown.headline()


def test_the_markdown_has_every_section() -> None:
    text = render_markdown(_report(overran=({"wave": 2, "window": "night", "closed": "c", "finished": "f"},)))
    for heading in ("## Timeline per wave", "## Disks", "## Maintenance windows", "## Elections at the end",
                    "## Problems"):
        assert heading in text
    assert "wave 2 would still be copying when window night closes at c" in text
    assert "moved 12 leadership(s) back to their preferred replica in 1 batch(es)" in text
    assert "| 2 | 81.0 GiB |" in text and "81.0 %" in text


def test_only_passed_rehearsals_count_for_require_rehearsal(tmp_path) -> None:
    dag = "decommission_brokers"
    passed, failed = _report(plan_hash="aa" * 32), _report(plan_hash="bb" * 32, problems=("x",))
    passed.save(tmp_path / dag / "run1" / "rehearsal")
    failed.save(tmp_path / dag / "run2" / "rehearsal")
    _report(plan_hash="cc" * 32).save(tmp_path / "rebalance" / "run3" / "rehearsal")      # another runbook
    (tmp_path / dag / "run4" / "rehearsal").mkdir(parents=True)
    (tmp_path / dag / "run4" / "rehearsal" / "rehearsal.json").write_text("{not json")
    assert rehearsed_hashes(tmp_path, dag) == frozenset({"aa" * 32})


def test_a_short_rehearsal_without_sizes_says_minutes_and_that_the_disk_was_not_measured() -> None:
    short = _report(elapsed_s=150.0, disks=(DiskPeak(1, 0, 0.0, None, None),))
    assert short.headline().startswith("rehearsed: 8 waves, 2.5 min, no window pause, disk not measured, ")


def test_a_saved_report_reads_back_equal_with_the_same_headline(tmp_path) -> None:
    paused = _report(pauses=({"before_wave": 3, "at": "x", "reason": "r"},), problems=("WaveStalled: wave 7",),
                     waves=(WaveLine(0, 3, GiB, None, 0, None, None, None),), notes=("stalled once",),
                     timings_s={"seed": 1.5}, finished=False)
    for report in (_report(), paused):
        report.save(tmp_path / report.plan_hash[:4])
        back = read_report(tmp_path / report.plan_hash[:4])
        assert back == report and back.headline() == report.headline() and back.passed == report.passed


def test_a_missing_or_foreign_report_is_refused_naming_the_file(tmp_path) -> None:
    with pytest.raises(RehearsalReportError, match="rehearsal.json is missing or unreadable"):
        read_report(tmp_path)
    (tmp_path / "rehearsal.json").write_text('{"plan_hash": "x"}')
    with pytest.raises(RehearsalReportError, match="is not a rehearsal report"):
        read_report(tmp_path)


def test_rehearse_auto_covers_the_measured_100k_plan_and_refuses_beyond_the_bound() -> None:
    """rehearse=auto's bound is BENCHMARKS' measured one: the 100,000-partition plan (5,526 moves in
    one wave) is rehearsed; a plan above 6,000 moves is not, and the reason names rehearse=on."""
    from operators.rehearsal.step import should_rehearse

    assert should_rehearse("auto", 100_000, 5_526) == (True, "")
    wanted, why = should_rehearse("auto", 100_000, 6_001)
    assert not wanted and "6,000" in why and "rehearse=on" in why
    assert should_rehearse("on", 100_000, 6_001) == (True, "")
