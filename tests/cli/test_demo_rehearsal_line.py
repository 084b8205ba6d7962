"""The demo's line comparing the rehearsal's per-wave durations with the run's (cli/demo.py)."""

from __future__ import annotations

from cli.demo import rehearsal_fidelity


def test_the_line_names_the_largest_per_wave_gap_and_the_total_gap():
    rehearsed = [{"start_s": 0.0, "end_s": 100.0}, {"start_s": 200.0, "end_s": 320.0}]
    line = rehearsal_fidelity(rehearsed, [100.0, 100.0])
    assert line == "rehearsal vs run: per-wave durations within 20.0% (largest gap wave 1), total within 10.0%"


def test_waves_that_do_not_pair_up_are_not_compared():
    line = rehearsal_fidelity([{"start_s": 0.0, "end_s": None}], [100.0])
    assert line == "rehearsal vs run: 0 rehearsed wave(s) against 1 run: not compared"
