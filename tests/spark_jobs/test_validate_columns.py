"""The columnar plan check only ever says "valid" when the per-move checker finds nothing.

:func:`planning.kernels.validate_columns.surely_valid` lets large plans skip the per-move
checker; it must never accept a plan that checker would refuse. Random decommission and
add-brokers plans (whole snapshots, and the slice + baseline the plan job plans on), each also
broken in one of the ways the rules forbid, are checked both ways. Planner output on an even
cluster is shown valid by it (else it would save nothing), and :func:`validate_plan` still
names the violations of a broken large plan.
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from planning.model import Move, Plan, PlanInvalid, PlanRefused
from spark_jobs.direct_input import input_from_snapshot
from planning.kernels import validate
from planning.kernels.decommission import plan_decommission
from planning.kernels.add_and_move import plan_add_brokers
from planning.kernels.validate import plan_violations, validate_plan
from planning.kernels.validate_columns import surely_valid
from spark_jobs.selection import Selection
from spark_jobs.synthetic import synthetic_cluster

BREAKS = ("none", "target_broker", "leader_order", "drop_move", "current", "target_map", "extra_move",
          "duplicate", "shorter", "onto_removed", "unknown_broker")


def _broken(plan: Plan, snap, how: str, rng: random.Random) -> Plan:
    moves = list(plan.moves)
    if how == "none" or not moves:
        return plan
    k = rng.randrange(len(moves))
    m = moves[k]
    brokers = sorted(snap.brokers)
    target = list(m.target)
    i = rng.randrange(len(target))
    if how == "target_broker":
        target[i] = rng.choice(brokers)
    elif how == "leader_order":
        rng.shuffle(target)
    elif how == "drop_move":
        moves.pop(k)
        return dataclasses.replace(plan, moves=tuple(moves), target={x.tp: x.target for x in moves})
    elif how == "current":
        moves[k] = dataclasses.replace(m, current=tuple(reversed(m.current)))
        return dataclasses.replace(plan, moves=tuple(moves))
    elif how == "target_map":
        return dataclasses.replace(plan, target={**plan.target, m.tp: tuple(reversed(m.target))})
    elif how == "extra_move":
        moved = {x.tp for x in moves}
        free = [p for p in snap.partitions() if p.tp not in moved and len(p.replicas) > 1]
        if not free:
            return plan
        p = rng.choice(free)
        new = Move(p.tp, p.replicas, tuple(reversed(p.replicas)))
        moves = sorted(moves + [new], key=lambda x: x.tp)
        return dataclasses.replace(plan, moves=tuple(moves), target={x.tp: x.target for x in moves})
    elif how == "duplicate" and len(target) > 1:
        target[i] = target[i - 1]
    elif how == "shorter" and len(target) > 1:
        target.pop(i)
    elif how == "onto_removed" and plan.removed:
        target[i] = rng.choice(sorted(plan.removed))
    elif how == "unknown_broker":
        target[i] = 10_000 + i
    moves[k] = dataclasses.replace(m, target=tuple(target))
    return dataclasses.replace(plan, moves=tuple(moves), target={x.tp: x.target for x in moves})


@st.composite
def cases(draw):
    brokers = draw(st.integers(4, 40))
    racks = draw(st.integers(0, min(5, brokers)))
    rf = draw(st.integers(1, 3))
    snap = synthetic_cluster(brokers, racks, draw(st.integers(1, 4)), draw(st.integers(1, 25)), rf,
                             seed=draw(st.integers(0, 10_000)))
    ids = sorted(snap.brokers)
    op = draw(st.sampled_from(["decommission", "add-brokers"]))
    n = draw(st.integers(1, max(1, min(brokers - rf, brokers // 3))))
    chosen = draw(st.lists(st.sampled_from(ids), min_size=n, max_size=n, unique=True))
    return snap, op, chosen, draw(st.booleans()), draw(st.sampled_from(BREAKS)), draw(st.integers(0, 1000))


@settings(max_examples=300, deadline=None)
@given(cases())
def test_a_plan_shown_valid_by_the_arrays_has_no_violation(case) -> None:
    snap, op, chosen, sliced, how, seed = case
    baseline = None
    if op == "decommission":
        if sliced:          # what the plan job plans on: the touched partitions plus a baseline
            data = input_from_snapshot(snap, None, Selection.on_brokers(chosen))
            snap, baseline = data.snapshot, data.baseline
        plan = plan_decommission(snap, chosen, None, seed, baseline)
        removed = chosen
    else:
        try:
            plan = plan_add_brokers(snap, chosen, None, seed)
        except PlanRefused:
            assume(False)
        removed = []
    broken = _broken(plan, snap, how, random.Random(seed))
    found = plan_violations(snap, broken, removed, None, baseline)
    if surely_valid(snap, broken, removed, baseline):
        assert found == [], (how, found)


def test_planner_output_on_an_even_cluster_is_shown_valid() -> None:
    snap = synthetic_cluster(30, 3, 10, 200, 3, seed=5)
    data = input_from_snapshot(snap, None, Selection.on_brokers([0, 10, 20]))
    plan = plan_decommission(data.snapshot, [0, 10, 20], None, 0, data.baseline)
    assert len(plan.moves) > 100
    assert surely_valid(data.snapshot, plan, [0, 10, 20], data.baseline)
    whole = plan_decommission(snap, [0, 10, 20], None, 0)
    assert surely_valid(snap, whole, [0, 10, 20])


def test_a_broken_large_plan_is_still_refused_with_the_per_move_messages(monkeypatch) -> None:
    monkeypatch.setattr(validate, "COLUMNAR_MIN_MOVES", 1)
    snap = synthetic_cluster(30, 3, 10, 200, 3, seed=5)
    plan = plan_decommission(snap, [0, 10, 20], None, 0)
    validate_plan(snap, plan, [0, 10, 20])                       # valid: the arrays say so, nothing raised
    broken = _broken(plan, snap, "onto_removed", random.Random(1))
    with pytest.raises(PlanInvalid) as err:
        validate_plan(snap, broken, [0, 10, 20])
    assert err.value.violations == plan_violations(snap, broken, [0, 10, 20])
    assert any("keeps removed broker" in v for v in err.value.violations)
