"""A rehearsal's time between waves is the run's, modelled once (planning/wave_time.py): it sees
each wave end when it ends (the emulator's clock stops at the controller deleting the node) and then
waits what the run's executor takes to see it done and write the next, at the run's poll interval.
Its headline total (first write to last wave done) is then the plan's estimate, within 10 %: it used
to wait for its own 30 s poll (~11 s a wave; +23 % against a real 2.4.1 run, issue 38). Same cluster
and plan as tests/operators/test_rehearsal.py."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from cli.rehearsal_run import rehearse
from planning.wave_time import REASSIGN_REACTION_S, WaveCosts
from tests.operators.test_rehearsal import MiB, _input, real  # noqa: F401 - the fixture


def test_the_rehearsal_waits_the_modelled_gaps_and_its_total_is_the_plans_estimate(real, zk_server):  # noqa: F811
    plan = real.plan("plan", throttle=100 * MiB)
    estimate = json.loads((plan / "summary.json").read_text())["estimate"]
    for poll in (5.0, 30.0):
        report = rehearse(replace(_input(real, plan, poll_interval_s=poll), out_dir=str(real.root / f"r{poll:g}")),
                          zookeeper=zk_server.connect_string)
        assert report.passed, report.problems
        costs = WaveCosts(poll_s=poll)
        waves = report.waves
        assert len(waves) == estimate["waves"] > 1
        for a, b in zip(waves, waves[1:]):      # a wave's end to the next one's first move: the gap + the reaction
            span = a.seconds + REASSIGN_REACTION_S
            assert b.start_s - a.end_s == pytest.approx(costs.gap(span) + REASSIGN_REACTION_S, abs=0.5), \
                [(w.start_s, w.end_s) for w in waves]
        if poll == 5.0:                          # the plan's estimate is at the executor's default poll
            assert report.elapsed_s == pytest.approx(estimate["total_s"], rel=0.10), (report.elapsed_s, estimate)
            # simulated seconds on the rehearsal's own clock (deterministic), not wall time
            simulated_between_waves_s = report.elapsed_s - report.copying_s
            assert simulated_between_waves_s < 60.0     # 8 waves: ~4 s between each, not ~11 s
