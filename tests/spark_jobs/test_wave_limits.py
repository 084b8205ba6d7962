"""Wave packing keeps its limits: per-broker slots where the bytes flow, byte budget, znode size.

A move charges one slot on the broker it copies from (the leader after the runbook's demotion
step) and one on each destination; the removed brokers of a decommission lead nothing once
demoted, so they are never charged. Every move is packed exactly once.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from planning.kernels.decommission import plan_decommission
from planning.kernels.waves import ZNODE_WRAPPER, WaveLimits, entry_bytes, pack_waves
from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 1000), st.integers(1, 6), st.sampled_from([None, 3 * 1024 ** 3]),
       st.sampled_from([2048, 64 * 1024]))
def test_every_wave_respects_slots_bytes_and_znode_size(seed, per_broker, wave_bytes, znode) -> None:
    snap = synthetic_cluster(12, 3, 5, 30, 3, seed=seed)
    sizes = synthetic_sizes(snap, seed=seed + 1)
    removed = {2, 7}
    plan = plan_decommission(snap, sorted(removed), sizes, seed=seed)
    waves = pack_waves(plan.moves, WaveLimits(per_broker, wave_bytes, znode, 50 * 1024 ** 2))

    packed = [m.tp for w in waves for m in w.moves]
    assert sorted(packed) == sorted(m.tp for m in plan.moves)          # each move exactly once
    for w in waves:
        slots = Counter(b for m in w.moves if m.destinations for b in {m.source_leader, *m.destinations})
        assert max(slots.values(), default=0) <= per_broker
        assert not removed & set(slots)                                # demoted brokers send nothing
        if wave_bytes is not None and len(w.moves) > 1:
            assert sum(m.size * len(m.destinations) for m in w.moves) <= wave_bytes
        assert ZNODE_WRAPPER + sum(entry_bytes(m) for m in w.moves) <= znode
