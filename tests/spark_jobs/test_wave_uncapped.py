"""The construction without a cap compares each move on few waves, yet places it exactly where
comparing every wave would (planning/kernels/wave_uncapped.py): the same key — peak growth, then
the move's own brokers' load, then the first wave — so the same waves, wave for wave; and the loads
it keeps per broker are what adding the moves one by one gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from planning.kernels import wave_uncapped
from planning.kernels.decommission import plan_decommission
from planning.kernels.wave_items import Item, OpenWave, WaveLimits
from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes


def _every_wave(items: list[Item], limits: WaveLimits) -> list[OpenWave]:
    """The reference: each move compared on every wave with room."""
    waves = [OpenWave() for _ in range(wave_uncapped.fewest_waves_for_bytes(items, limits))]
    for it in items:
        best, best_key = -1, None
        for i, w in enumerate(waves):
            if (w.items and limits.max_wave_bytes is not None and w.bytes + it.nbytes > limits.max_wave_bytes) \
                    or w.znode + it.zbytes > limits.max_znode_bytes:
                continue
            own = max([w.inb.get(b, 0) + v for b, v in it.inbound.items()] +
                      [w.out.get(b, 0) + v for b, v in it.outbound.items()], default=0)
            key = (max(w.peak, own) - w.peak, own)
            if best_key is None or key < best_key:
                best, best_key = i, key
        if best < 0:
            waves.append(OpenWave())
        waves[best].add(it)
    return waves


def _items(seed: int, brokers: int, alpha: float) -> list[Item]:
    snap = synthetic_cluster(brokers, 3, 12, 40, 3, seed=seed)
    plan = plan_decommission(snap, [1, brokers // 2, brokers - 2], synthetic_sizes(snap, seed=seed + 1, alpha=alpha),
                             seed=seed)
    return sorted((Item(m) for m in plan.moves), key=lambda it: (-it.nbytes, it.move.tp))


def _state(w: OpenWave) -> tuple:
    return ([it.move.tp for it in w.items], w.inb, w.out, w.slots, w.bytes, w.znode, w.peak)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(9, 30), st.sampled_from([1.2, 1.5, 3.0]),
       st.sampled_from([1024, 2048, 4096, 16384]), st.sampled_from([None, 3, 20]))
def test_the_waves_are_those_of_comparing_every_wave(seed, brokers, alpha, znode, wave_parts) -> None:
    items = _items(seed, brokers, alpha)
    total = sum(it.nbytes for it in items)
    limits = WaveLimits(None, None if wave_parts is None else -(-total // wave_parts), znode, 50_000_000)
    got = wave_uncapped.construct_uncapped(items, limits)
    assert [_state(w) for w in got] == [_state(w) for w in _every_wave(items, limits)]


def test_the_loads_kept_per_broker_are_those_of_adding_the_moves_one_by_one() -> None:
    items = _items(7, 24, 1.5)
    for w in wave_uncapped.construct_uncapped(items, WaveLimits(None, None, 2048, 50_000_000)):
        again = OpenWave()
        for it in w.items:
            again.add(it)
        assert _state(w) == _state(again)
