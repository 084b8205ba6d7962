"""The summary's sums over arrays (planning.kernels.move_columns) equal the plain per-move sums.

Large plans take the bounds, the loads after the moves and the disk walk from numpy arrays;
each is compared here with the Python computation small plans still use, on planner output
(sized, packed under random limits) and on arbitrary moves (no destinations, zero sizes,
replicas in any order, odd broker ids).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_zk.codecs import TopicPartition
from planning.model import Move
from planning.kernels import capacity, waves as waves_mod
from planning.kernels.decommission import plan_decommission
from planning.kernels.loads import Loads, cluster_loads, moved_loads
from planning.kernels.move_columns import (MoveColumns, disk_walk, fixed_batches_busiest_sum, in_out_largest,
                                             moved_loads_columns)
from planning.kernels.waves import WaveLimits, pack_waves
from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes

ids = st.sampled_from([0, 1, 2, 3, 5, 8, 13, 1000, 10**6])
moves_st = st.dictionaries(
    st.builds(TopicPartition, st.sampled_from(["a", "b", "é"]), st.integers(0, 50)),
    st.tuples(st.lists(ids, min_size=1, max_size=4, unique=True), st.lists(ids, min_size=1, max_size=4, unique=True),
              st.integers(0, 10**12), st.one_of(st.none(), ids)),
    max_size=40)


def _moves(drawn) -> list[Move]:
    return sorted((Move(tp, tuple(c), tuple(t), size, leader) for tp, (c, t, size, leader) in drawn.items()),
                  key=lambda m: m.tp)


def _check_sums(moves: list[Move], before: Loads) -> None:
    assert in_out_largest(MoveColumns.of(moves)) == waves_mod._in_out_largest(moves)
    for batch in (1, 3, 10):
        assert fixed_batches_busiest_sum(moves, batch) == waves_mod._fixed_batches_busiest_sum(moves, batch)
    got, want = moved_loads_columns(before, moves), moved_loads(before, moves)
    assert (got.replicas, got.bytes, got.leaders) == (want.replicas, want.bytes, want.leaders)


@settings(max_examples=200, deadline=None)
@given(moves_st, st.dictionaries(ids, st.integers(0, 10**13)))
def test_bounds_and_loads_over_arrays_equal_the_plain_sums_on_any_moves(drawn, bytes_before) -> None:
    moves = _moves(drawn)
    _check_sums(moves, Loads({b: 3 for b in bytes_before}, dict(bytes_before), {b: 1 for b in bytes_before}))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 1000), st.integers(1, 6), st.sampled_from([None, 4096, 64 * 1024]))
def test_planner_output_sums_and_disk_walk_over_arrays_equal_the_plain_ones(seed, per_broker, wave_bytes) -> None:
    snap = synthetic_cluster(15, 3, 6, 40, 3, seed=seed)
    sizes = synthetic_sizes(snap, seed=seed + 1)
    plan = plan_decommission(snap, [1, 6], sizes, seed=seed)
    limits = WaveLimits(per_broker, wave_bytes * 1024 * 1024 if wave_bytes else None, 4096, 10_000_000)
    waves = pack_waves(plan.moves, limits)
    brokers = sorted(snap.brokers)
    before = cluster_loads(snap.partitions(), brokers, sizes)
    _check_sums(list(plan.moves), before)
    walk = disk_walk(waves, before.bytes, brokers)
    plain, received = capacity._disk_profile(waves, before.bytes, None, brokers)   # under the bound: plain
    assert walk.received == received
    assert [(d.peak, d.peak_wave, d.after) for d in plain] == list(zip(walk.peak, walk.peak_wave, walk.after))
