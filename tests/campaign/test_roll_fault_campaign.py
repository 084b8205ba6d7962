"""The rolling_restart fault campaign's short profile (CI): one seeded roll per fault kind, each a real
rolling_restart DAG run under that fault, judged with plain kazoo and the emulator's record: every
broker restarted exactly once, no partition offline in any sample, no admin node left, replica
orders restored, and the end state the fault calls for (:data:`tests.campaign.roll_scenario.EXPECTED`).
The long profile (≥ 20 seeds, figures in BENCHMARKS.md) is
``bench/bench_fault_campaign.py --runbook rolling_restart``; a failure prints the seed and the command
that reruns it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.campaign.roll_runner import repro, run_one
from tests.campaign.roll_scenario import FAULTS, draw

#: one seed per fault kind but ``none`` (the roll's end-to-end tests run it): the smallest draws
#: (3 brokers, few partitions) of seeds 1-200, so the profile stays cheap
SHORT_PROFILE = {"zk_outage_6": 2, "zk_outage_30": 2, "task_killed": 2, "broker_not_back": 2}


def test_draw_is_a_function_of_the_seed_alone() -> None:
    assert draw(123) == draw(123)
    assert draw(123, "task_killed").brokers == draw(123).brokers
    assert {draw(s).fault for s in range(50)} == set(FAULTS)
    with pytest.raises(ValueError, match="unknown fault 'meteor': use one of none"):
        draw(1, "meteor")


@pytest.mark.airflow
@pytest.mark.usefixtures("airflow_db")
@pytest.mark.parametrize("fault", sorted(SHORT_PROFILE))
def test_a_seeded_roll_under_each_fault_restarts_every_broker_once_and_ends_as_the_fault_calls_for(
        fault: str, zk_server, tmp_path: Path) -> None:
    sc = draw(SHORT_PROFILE[fault], fault)
    outcome = run_one(sc, zk_server.host, zk_server.port, tmp_path)
    context = (f"{sc.describe()}\n{outcome.line()}\ntask states: {outcome.task_states}\n"
               f"end state: {outcome.end_state_problems}\nrepro: {repro(sc.seed, fault)}")
    assert outcome.fault_injected, f"the fault never landed ({outcome.fault_note})\n{context}"
    assert outcome.invariant_problems == [], context
    assert outcome.observed == outcome.expected and outcome.end_state_problems == [], context
