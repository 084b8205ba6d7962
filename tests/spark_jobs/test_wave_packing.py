"""Wave packing keeps the predicted total near the physical lower bound, and only ever improves it.

The objective is the predicted total: the sum over waves of the busiest broker's bytes (a wave
waits for its slowest partition) plus a fixed per-wave overhead. The local search after the
first packing must never raise it, the total can never beat the lower bound, and the packing
is deterministic whatever order the moves arrive in.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from planning.kernels import waves as W
from planning.kernels.decommission import plan_decommission
from planning.kernels.waves import WaveLimits, fixed_batches, pack_waves, wave_bounds
from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes


def _objective(waves, limits: WaveLimits) -> float:
    return sum(w.busiest_bytes for w in waves) + limits.overhead_bytes() * len(waves)


def _moves(seed: int, brokers: int, alpha: float):
    snap = synthetic_cluster(brokers, 3, 8, 30, 3, seed=seed)
    sizes = synthetic_sizes(snap, seed=seed + 1, alpha=alpha)
    return plan_decommission(snap, [1, brokers // 2], sizes, seed=seed).moves


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 1000), st.integers(8, 30), st.sampled_from([1.2, 1.5, 3.0]), st.integers(1, 8),
       st.sampled_from([0.0, 10.0, 600.0]))
def test_local_search_never_raises_the_predicted_total(seed, brokers, alpha, per_broker, overhead_s) -> None:
    moves = _moves(seed, brokers, alpha)
    limits = WaveLimits(per_broker, None, 512 * 1024, 50_000_000, overhead_s)
    items = sorted((W.Item(m) for m in moves), key=lambda it: (-it.nbytes, it.move.tp))
    constructed = W._construct(items, limits, limits.overhead_bytes())
    first = [W._finish(i, w, limits) for i, w in enumerate(w for w in constructed if w.items)]
    packed = pack_waves(moves, limits)
    assert _objective(packed, limits) <= _objective(first, limits)
    bounds = wave_bounds(moves, packed, limits)
    assert bounds.busiest_sum_bytes >= bounds.lower_bound_bytes      # nothing beats the bound


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 1000), st.integers(1, 6))
def test_packing_does_not_depend_on_the_order_moves_arrive_in(seed, per_broker) -> None:
    moves = _moves(seed, 12, 1.5)
    shuffled = list(moves)
    random.Random(seed).shuffle(shuffled)
    limits = WaveLimits(per_broker, None, 512 * 1024, 50_000_000)
    assert pack_waves(shuffled, limits) == pack_waves(moves, limits)


def test_heavy_tailed_decommission_stays_within_a_fifth_of_the_lower_bound() -> None:
    # The bench_waves cluster at its tightest limit: 48 brokers, 4 removed, Pareto 1.5 sizes,
    # 5 moves per broker per wave. Each wave waits for its largest partition, so a large
    # partition must not stretch a wave that already waits for another one on the same broker.
    snap = synthetic_cluster(48, 3, 200, 100, 3, seed=1)
    sizes = synthetic_sizes(snap, seed=2, alpha=1.5)
    moves = plan_decommission(snap, [3, 10, 17, 30], sizes, seed=0).moves
    limits = WaveLimits(5, None, 512 * 1024, 50_000_000)
    waves = pack_waves(moves, limits)
    ours = wave_bounds(moves, waves, limits)
    fixed = wave_bounds(moves, fixed_batches(moves, 10, limits), limits)
    assert ours.ratio <= 1.2
    assert ours.busiest_sum_bytes * 3 < fixed.busiest_sum_bytes
