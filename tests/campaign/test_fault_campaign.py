"""The fault campaign's short profile (CI): one seeded run per fault kind, each a real
decommission DAG run under that fault, checked with plain kazoo: no replica lost, no throttle
left after the janitor, no half-written node, no wave ever unthrottled, and the end state the
fault calls for (:data:`tests.campaign.scenario.EXPECTED`). The long profile (≥ 50 seeds, figures
in BENCHMARKS.md) is ``bench/bench_fault_campaign.py``; a failure prints the seed and the command
that reruns it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.campaign.runner import repro, run_one
from tests.campaign.scenario import FAULTS, draw

#: one seed per fault kind (the kind forced; the cluster, sizes and timing are the seed's): the
#: smallest draws (one topic, two partitions, 2–4 moves) of seeds 1–400, so the profile stays cheap
SHORT_PROFILE = {"none": 269, "kill_restart": 183, "controller_move": 32, "session_expiry": 200,
                 "stall_resume": 213, "zk_blip": 232, "kill_for_good": 188, "fail_append": 36,
                 "topic_deleted": 2, "zk_outage_6": 269, "zk_outage_30": 269, "verify_restart": 269}


def test_the_short_profile_covers_every_fault() -> None:
    assert set(SHORT_PROFILE) == set(FAULTS)


def test_draw_is_a_function_of_the_seed_alone() -> None:
    assert draw(123) == draw(123)
    assert draw(123, "zk_blip").brokers == draw(123).brokers
    assert {draw(s).fault for s in range(200)} == set(FAULTS)
    with pytest.raises(ValueError, match="unknown fault 'meteor': use one of none"):
        draw(1, "meteor")


@pytest.mark.airflow
@pytest.mark.usefixtures("airflow_db")
@pytest.mark.parametrize("fault", FAULTS)
def test_a_seeded_run_under_each_fault_keeps_the_invariants_and_ends_as_the_fault_calls_for(
        fault: str, zk_server, tmp_path: Path) -> None:
    sc = draw(SHORT_PROFILE[fault], fault)
    outcome = run_one(sc, zk_server.host, zk_server.port, tmp_path)
    context = (f"{sc.describe()}\n{outcome.line()}\ntask states: {outcome.task_states}\n"
               f"end state: {outcome.end_state_problems}\nrepro: {repro(sc.seed, fault)}")
    assert outcome.fault_injected or fault == "none", f"the fault never landed ({outcome.fault_note})\n{context}"
    assert outcome.invariant_problems == [], context
    assert outcome.observed == outcome.expected and outcome.end_state_problems == [], context
