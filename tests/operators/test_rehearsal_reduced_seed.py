"""A reduced seed (only the plan's partitions in the copy, the rest as each broker's disk baseline:
cli/rehearsal_run.py "Scale") rehearses the same timeline and disk peaks as a full seed. Same
cluster and plan as tests/operators/test_rehearsal.py (6 brokers, 72 partitions of 2 GiB, the
decommission of brokers 4 and 5), once seeded whole and once reduced."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.operators.test_rehearsal import GiB, MiB, _input, real  # noqa: F401 - the fixture

# two rehearsals of one plan on the same seed differ by simulated seconds per wave (the clock
# runs while the engine waits for the tool: at ×3600 a wall millisecond is 3.6 s, 10 % of these
# ~100 s waves), so these run at ×300; the disk samples are taken at the polls
TIMELINE_REL = 0.05
SPEED = 300.0


def _both(real, zk_server, plan, **extra):  # noqa: F811 - the fixture
    full = _input(real, plan, speed=SPEED, **extra)
    reduced = _input(real, plan, speed=SPEED, full_seed_max_partitions=0, **extra)
    reduced = dataclasses.replace(reduced, out_dir=reduced.out_dir + "-reduced")
    from cli.rehearsal_run import rehearse

    return (rehearse(full, zookeeper=zk_server.connect_string),
            rehearse(reduced, zookeeper=zk_server.connect_string))


def test_a_reduced_seed_rehearses_the_same_waves_and_disk_peaks_as_a_full_one(real, zk_server):  # noqa: F811
    plan = real.plan("plan", throttle=100 * MiB)
    capacity = real.root / "capacity.json"
    capacity.write_text(json.dumps({"brokers": {str(b): 200 * GiB for b in range(6)}}))
    full, reduced = _both(real, zk_server, plan, capacity=str(capacity))
    left_out = [n for n in reduced.not_copied if "partitions the plan does not touch" in n]
    assert left_out and not any("partitions the plan does not touch" in n for n in full.not_copied)
    assert full.passed and reduced.passed, (full.problems, reduced.problems)
    assert len(full.waves) == len(reduced.waves) > 1
    for ours, theirs in zip(reduced.waves, full.waves):
        assert ours.seconds == pytest.approx(theirs.seconds, rel=TIMELINE_REL), (reduced.waves, full.waves)
        assert ours.start_s == pytest.approx(theirs.start_s, rel=TIMELINE_REL, abs=60.0)
    assert reduced.copying_s == pytest.approx(full.copying_s, rel=TIMELINE_REL)
    assert [d.broker for d in reduced.disks] == [d.broker for d in full.disks]
    for ours, theirs in zip(reduced.disks, full.disks):
        assert ours.peak_bytes == pytest.approx(theirs.peak_bytes, rel=0.02), (reduced.disks, full.disks)
        assert ours.pct == pytest.approx(theirs.pct, abs=1.0)
    untouched = int(left_out[0].split()[0].replace(",", ""))
    assert 0 < untouched < 72


def test_a_reduced_seed_still_reports_a_disk_the_plan_overfills(real, zk_server):  # noqa: F811
    plan = real.plan("plan", throttle=100 * MiB)
    capacity = real.root / "capacity.json"
    capacity.write_text(json.dumps({"brokers": {str(b): 90 * GiB for b in range(6)}}))   # 72 GiB each before
    full, reduced = _both(real, zk_server, plan, capacity=str(capacity), stall_timeout_s=1800.0)
    assert not full.passed and not reduced.passed
    overfilled = {d.broker for d in full.disks if d.pct is not None and d.pct > 99.0}
    assert overfilled and overfilled == {d.broker for d in reduced.disks if d.pct is not None and d.pct > 99.0}
    assert "a full disk stops its followers fetching" in " ".join(reduced.problems)
