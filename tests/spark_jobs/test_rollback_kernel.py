"""The rollback kernel restores exactly what the run changed and nobody changed since: one literal
case per row of its table, and a refusal when nothing is left."""

from __future__ import annotations

import pytest

from kafka_zk.codecs import TopicPartition
from planning.model import PlanRefused
from planning.kernels.rollback import plan_rollback
from tests.spark_jobs.conftest import literal_cluster

TP = TopicPartition
RACKS = {1: "a", 2: "b", 3: "c", 4: "a"}


def test_each_case_of_the_table() -> None:
    live = literal_cluster({"t": {0: (4, 2), 1: (2, 1), 2: (3, 4), 3: (1, 2), 4: (3, 2)}}, RACKS)
    original = {TP("t", 0): (1, 2),      # the run moved it to its target (4, 2): restored
                TP("t", 1): (1, 2),      # the demotion re-ordered it: order restored
                TP("t", 2): (1, 2),      # someone moved it elsewhere since: left alone
                TP("t", 3): (1, 2),      # never reached: nothing to do
                TP("t", 9): (1, 2)}      # gone: listed
    run_targets = {TP("t", 0): (4, 2), TP("t", 1): (2, 4), TP("t", 2): (1, 4), TP("t", 3): (4, 2),
                   TP("t", 9): (1, 3)}
    plan = plan_rollback(live, original, run_targets, seed=0, source="runs/x/plan")
    assert dict(plan.target) == {TP("t", 0): (1, 2), TP("t", 1): (1, 2)}
    notes = " ".join(plan.notes)
    assert "t-2: now [3, 4], the run set [1, 4], was [1, 2]" in notes
    assert "1 partition(s) already have their recorded assignment" in notes and "no longer exist: t-9" in notes
    assert plan.params["left_alone"] == "1" and plan.params["restored"] == "2"


def test_without_run_targets_every_differing_entry_is_restored() -> None:
    live = literal_cluster({"t": {0: (4, 2), 1: (1, 2)}}, RACKS)
    plan = plan_rollback(live, {TP("t", 0): (1, 2), TP("t", 1): (1, 2)}, None)
    assert dict(plan.target) == {TP("t", 0): (1, 2)}


def test_nothing_to_restore_is_refused_with_the_reasons() -> None:
    live = literal_cluster({"t": {0: (1, 2)}}, RACKS)
    with pytest.raises(PlanRefused, match="nothing to roll back: 1 partition.s. already have their recorded"):
        plan_rollback(live, {TP("t", 0): (1, 2)}, {TP("t", 0): (4, 2)})
