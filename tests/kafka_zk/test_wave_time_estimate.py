"""The one model of a run's non-copying time (planning/wave_time.py), against real Kafka 2.4.1:
the recorded trajectories' per-wave fixed cost (tests/vectors/real_kafka_2_4_1/) and the two real runs
issue 38 timed (first write to last wave done): its estimate is within 10 % of each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_zk.errors import InvalidInput
from planning.wave_time import WaveCosts, estimate, history_pairs, measured_costs

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "real_kafka_2_4_1"
MiB = 1024 ** 2


def _node_lifetime(name: str) -> float:
    """Seconds from the tool creating /admin/reassign_partitions to the controller deleting it."""
    doc = json.loads((VECTORS / name).read_text())
    times = {}
    for w in doc["zk_writes"]:
        for op in w.get("ops") or [w]:
            if op.get("path") == "/admin/reassign_partitions" and op.get("op") in ("create", "delete"):
                times.setdefault(op["op"], w["t_rel"])
    return times["delete"] - times["create"]


def test_a_wave_with_nothing_to_copy_costs_what_the_recorded_2_4_1_controller_took():
    recorded = _node_lifetime("b-i.json")                    # tb1-0 [0,1] -> [2,3], no data: 1.0 s
    assert WaveCosts().span(0.0) == pytest.approx(recorded, rel=0.10)


def test_the_add_brokers_run_on_real_2_4_1_9_waves_1_7_s_of_copying_took_47_s():
    """Each tiny wave is seen done at the executor's first inline poll after it ends (5 s)."""
    got = estimate([1.7 / 9] * 9)
    assert got.total_s == pytest.approx(47.0, rel=0.10), got
    assert got.copy_s == pytest.approx(1.7) and got.fixed_s == pytest.approx(9 * 0.98)
    assert "1.7 s copying at the throttle" in got.text() and "(9 waves)" in got.text()


def test_the_decommission_on_real_2_4_1_6_waves_277_mb_at_1_mib_s_took_283_s():
    """Waves longer than the inline wait: seen on the trigger's polls (half a poll late on average) and
    resumed by Airflow, 1-8 s between waves on the real run."""
    got = estimate([277e6 / 6 / MiB] * 6)
    assert got.total_s == pytest.approx(283.0, rel=0.10), got
    gaps = [WaveCosts().gap(WaveCosts().span(277e6 / 6 / MiB))] * 5
    assert all(1.0 <= g <= 8.0 for g in gaps)


def test_the_rehearsals_old_30_s_poll_would_have_said_plus_23_percent():
    """What issue 38 saw: the rehearsal waited ~11 s between waves (its 30 s poll): 349 s for 283 s."""
    old = estimate([277e6 / 6 / MiB] * 6, WaveCosts(poll_s=30.0, resume_s=0.0, submit_s=0.0))
    new = estimate([277e6 / 6 / MiB] * 6)
    assert old.total_s > new.total_s and abs(new.total_s - 283.0) < abs(old.total_s - 283.0)


def test_a_runs_own_history_replaces_the_calibrated_time_between_waves():
    waves = [{"submitted_at": "100.0", "done_at": "160.0"}, {"submitted_at": "160.5", "done_at": "230.0"},
             {"submitted_at": "231.5", "done_at": None}]
    costs = measured_costs(history_pairs(waves))
    assert costs.between_s == pytest.approx(1.0)                 # median of 0.5 and 1.5
    assert "measured on this run's 2 gaps" in costs.source
    assert measured_costs(history_pairs(waves[:1])) == WaveCosts()      # no gap yet: the defaults
    assert costs.gap(60.0) == pytest.approx(2.5 + costs.resume_s + 1.0)   # half a poll, the resume, this run's own


def test_a_short_wave_is_seen_at_the_first_poll_after_its_end():
    costs = WaveCosts(poll_s=5.0)
    assert costs.detection(1.2) == pytest.approx(3.8)
    assert costs.detection(10.0) == pytest.approx(0.0)
    assert costs.detection(100.0) == pytest.approx(2.5 + costs.resume_s)


@pytest.mark.parametrize("field", ["fixed_s", "poll_s", "resume_s", "submit_s", "inline_wait_s"])
def test_a_negative_or_infinite_figure_is_refused(field):
    with pytest.raises(InvalidInput, match=field):
        WaveCosts(**{field: -1.0})
    with pytest.raises(InvalidInput, match=field):
        WaveCosts(**{field: float("inf")})
