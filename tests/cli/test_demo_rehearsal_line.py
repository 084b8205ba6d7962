"""The demo's line comparing the rehearsal's per-wave durations with the run's (cli/demo.py)."""

from __future__ import annotations

from cli.demo import rehearsal_fidelity, run_total_seconds, total_fidelity


def test_the_line_names_the_largest_per_wave_gap_and_the_total_gap():
    rehearsed = [{"start_s": 0.0, "end_s": 100.0}, {"start_s": 200.0, "end_s": 320.0}]
    line = rehearsal_fidelity(rehearsed, [100.0, 100.0])
    assert line == "rehearsal vs run: per-wave durations within 20.0% (largest gap wave 1), total within 10.0%"


def test_waves_that_do_not_pair_up_are_not_compared():
    line = rehearsal_fidelity([{"start_s": 0.0, "end_s": None}], [100.0])
    assert line == "rehearsal vs run: 0 rehearsed wave(s) against 1 run: not compared"


def test_the_runs_first_write_to_last_wave_done_is_its_simulated_copying_plus_its_wall_clock_waits():
    """The emulator's clock is sped up, the executor's waits are real: each is counted in its own clock."""
    from kafka_sim.engine import SimEvent
    from kafka_sim.timeline import update_detail

    def ev(t: float, wall: float, kind: str, p: int) -> SimEvent:
        detail = update_detail([1, 2], [2], [1]) if kind == "reassign_update" else "replicas=[2]"
        return SimEvent(t, kind, "t", p, None, detail, wall)
    events = [ev(0.0, 1000.2, "reassign_update", 0), ev(3600.0, 1001.0, "reassign_done", 0),      # 1 h of copying
              ev(3600.0, 1004.0, "reassign_update", 1), ev(5400.0, 1005.0, "reassign_done", 1)]   # 0.5 h
    waves = [{"moves": [{"topic": "t", "partition": 0}], "submitted_at": "1000.0", "done_at": "1003.5"},
             {"moves": [{"topic": "t", "partition": 1}], "submitted_at": "1003.8", "done_at": "1007.0"}]
    total = run_total_seconds(events, waves)
    assert total == 5400.0 + 0.2 + 3.0 + 2.0
    assert total_fidelity(total * 1.01, total).endswith("(+1.0%)")
    assert run_total_seconds(events, [dict(waves[0]), dict(waves[1], done_at=None)]) is None
