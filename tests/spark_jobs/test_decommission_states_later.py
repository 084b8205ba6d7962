"""A decommission planned before the partition states arrive, their leaders applied after, is
the plan made from a snapshot that already held them (planning.kernels.decommission.with_leaders:
what lets the plan job run this kernel while the states are still being read)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_zk.codecs import PartitionState
from kafka_zk.snapshot import with_states
from planning.kernels.decommission import plan_decommission, with_leaders
from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes


def _stateless(snap):
    return with_states(snap, {p.tp: None for p in snap.partitions()})


@settings(max_examples=60, deadline=None)
@given(st.integers(6, 30), st.integers(0, 4), st.integers(1, 3), st.integers(1, 25), st.integers(0, 10_000),
       st.booleans(), st.floats(0, 1))
def test_leaders_applied_after_the_kernel_give_the_plan_of_a_snapshot_with_states(
        brokers, racks, rf, partitions, seed, sized, missing) -> None:
    rng = random.Random(seed)
    snap = _stateless(synthetic_cluster(brokers, racks, 3, partitions, rf, seed=seed))
    removed = rng.sample(sorted(snap.brokers), rng.randint(1, max(1, min(brokers - rf, brokers // 3))))
    sizes = synthetic_sizes(snap, seed=seed) if sized else None
    states = {}
    for p in snap.partitions():
        if rng.random() < missing / 3:
            states[p.tp] = None                 # no state znode
        else:                                   # any replica, a removed one, or no leader (-1)
            leader = rng.choice([*p.replicas, -1, *removed])
            states[p.tp] = PartitionState(leader, 1, tuple(p.replicas), 1)
    whole = plan_decommission(with_states(snap, states), removed, sizes, seed)
    later = with_leaders(plan_decommission(snap, removed, sizes, seed), states)
    assert later == whole
    assert [m.leader for m in later.moves] == [m.leader for m in whole.moves]
