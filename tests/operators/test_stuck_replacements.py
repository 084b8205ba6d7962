"""The stuck runbook's rewrite targets come from the plan job (issue 26: operators import no
planner): ``plan_job --op replace-dead-targets`` on the diagnosis' snapshot, read back through the
hash-checked plan folder, gives choose_fixes exactly what the planners' one placer gives in
process — the same fixes, and the placer's own refusal when a partition can neither be reverted
nor given a registered broker. The job runs as the child process the runbook launches."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kafka_zk.admin.stuck import diagnose
from kafka_zk.admin.stuck_fixes import choose_fixes
from kafka_zk.codecs import ReassignmentEntry, ReassignmentRequest, TopicPartition
from kafka_zk.errors import InvalidInput
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
from procedures.run_folder import RunFolder
from operators.runbooks.stuck_targets import REPLACEMENTS, plan_replacement_targets
from planning.kernels.placement import replacement_targets
from planning.kernels.stuck_rewrite import plan_replacements

RACKS = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b"}


def _snap(isr=(1, 2), brokers=(1, 2, 4, 5)) -> ClusterSnapshot:
    """t-0 moving [1, 2] → [1, 3] and t-1 moving [2, 1] → [3, 2] (broker 3 dead); u-0 idle."""
    parts = {0: Partition("t", 0, (1, 3, 2), adding=(3,), removing=(2,), leader=1, leader_epoch=2, isr=tuple(isr),
                          controller_epoch=1),
             1: Partition("t", 1, (3, 2, 1), adding=(3,), removing=(1,), leader=2, leader_epoch=2, isr=(2, 1),
                          controller_epoch=1)}
    idle = {0: Partition("u", 0, (4, 5), leader=4, leader_epoch=0, isr=(4, 5), controller_epoch=1)}
    return ClusterSnapshot({b: Broker(b, RACKS[b], "127.0.0.1", 9092) for b in brokers},
                           {"t": Topic("t", parts, {}), "u": Topic("u", idle, {})},
                           reassignment=ReassignmentRequest((ReassignmentEntry("t", 0, (1, 3)),
                                                             ReassignmentEntry("t", 1, (3, 2)))),
                           controller_id=1)


def _via_job(tmp_path: Path, snap: ClusterSnapshot):
    folder = RunFolder(tmp_path / "run").ensure()
    return folder, plan_replacement_targets(folder, snap, logging.getLogger("test"))


@pytest.mark.parametrize("isr,brokers", [((1, 2), (1, 2, 4, 5)), ((1,), (1, 2, 4, 5)), ((1,), (1, 4, 5))],
                         ids=["revert", "rewrite", "original-dead"])
def test_the_plan_jobs_targets_give_the_same_fixes_as_the_placer_in_process(tmp_path: Path, isr, brokers) -> None:
    snap = _snap(isr, brokers)
    folder, planned = _via_job(tmp_path, snap)
    stuck = diagnose(snap)
    assert choose_fixes(snap, stuck, replacement_targets=planned) == \
        choose_fixes(snap, stuck, replacement_targets=replacement_targets)
    assert (folder.root / REPLACEMENTS / "plan.sha256").is_file() and folder.snapshot.is_file()


def test_a_partition_no_broker_can_take_is_a_note_and_raises_the_placers_refusal_only_when_needed(
        tmp_path: Path) -> None:
    snap = _snap(isr=(1,), brokers=(1,))
    plan = plan_replacements(snap)
    assert plan.target == {} and [n.split(":")[0] for n in plan.notes] == ["t-0", "t-1"]
    _, planned = _via_job(tmp_path, snap)
    with pytest.raises(InvalidInput, match="t-0: no registered broker can replace broker 3") as raised:
        choose_fixes(snap, diagnose(snap), replacement_targets=planned)
    with pytest.raises(InvalidInput) as in_process:
        choose_fixes(snap, diagnose(snap), replacement_targets=replacement_targets)
    assert str(raised.value) == str(in_process.value)


def test_each_dead_target_partition_is_placed_on_the_cluster_as_it_is() -> None:
    snap = _snap(isr=(1,))
    plan = plan_replacements(snap)
    expected = {s.tp: replacement_targets(snap, [s])[s.tp] for s in diagnose(snap)}
    assert dict(plan.target) == expected and set(expected) == {TopicPartition("t", 0), TopicPartition("t", 1)}
    assert [m.current for m in plan.moves] == [(1, 3, 2), (3, 2, 1)] and not plan.notes


def test_a_retiring_broker_is_never_put_in_place_of_a_dead_one(tmp_path: Path) -> None:
    """Every planner leaves the retiring brokers out (issue 39), the stuck runbook's placer too: with
    4 and 5 retiring (a decommission approved, 4 still holding u-0), a rewrite places 2 in place of the
    dead 3 — not the emptier 4 or 5 — and the diagnosis is not refused for the replica 4 holds."""
    import json

    snap = _snap(isr=(1,), brokers=(1, 2, 4, 5))
    folder = RunFolder(tmp_path / "run").ensure()
    folder.write_json(folder.root / "retiring.json", {"file": "f", "cluster_id": "c", "brokers": {
        str(b): {"since": "2026-12-01T00:00:00Z", "by": "decommission_brokers run r1", "why": "approved",
                 "stage": "approved" if b == 4 else "drained", "run_folder": "/runs/r1"} for b in (4, 5)}})
    planned = plan_replacement_targets(folder, snap, logging.getLogger("test"))
    [fix] = [f for f in choose_fixes(snap, diagnose(snap), replacement_targets=planned) if f.tp == TopicPartition("t", 0)]
    assert fix.chosen == "rewrite" and fix.target == (1, 2), fix
    brokers = [json.loads(x)["id"] for x in (folder.root / "plan_input.jsonl").read_text().splitlines()
               if json.loads(x)["kind"] == "broker"]
    assert brokers == [1, 2]
