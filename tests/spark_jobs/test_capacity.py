"""Disk capacity in plans: refusals that name brokers and bytes, limits held at every wave's peak."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_zk.capacity import DiskCapacity
from kafka_zk.codecs import TopicPartition
from planning.model import Move, PlanRefused
from planning.kernels.capacity import disk_profile, order_waves, plan_disk
from planning.kernels.decommission import plan_decommission
from planning.kernels.loads import cluster_loads, rack_map
from planning.kernels.validate import validate_plan
from planning.kernels.waves import WaveLimits, pack_waves, wave_of
from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes
from tests.spark_jobs.conftest import literal_cluster

GIB = 1024 ** 3
RACKS6 = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}


def six_broker_cluster() -> tuple:
    """RF 3 over racks a/b/c (two brokers each): every partition keeps one replica per rack."""
    parts = {}
    for p in range(12):
        a, b, c = (1, 4)[p % 2], (2, 5)[(p // 2) % 2], (3, 6)[(p // 4) % 2]
        parts[p] = (a, b, c)
    snap = literal_cluster({"t": parts}, RACKS6)
    sizes = {TopicPartition("t", p): 8 * GIB for p in range(12)}
    return snap, sizes


def before_bytes(snap, sizes) -> dict[int, int]:
    return cluster_loads(snap.partitions(), sorted(snap.brokers), sizes).bytes


def test_rack_forced_doubling_is_refused_naming_brokers_bytes_and_fix() -> None:
    snap, sizes = six_broker_cluster()
    cap = DiskCapacity({b: 60 * GIB for b in RACKS6}, threshold_pct=85)
    with pytest.raises(PlanRefused) as err:
        plan_decommission(snap, [4, 5], sizes, capacity=cap)
    msg = str(err.value)
    assert "broker 1 (rack a) would hold 96.0 GiB" in msg and "broker 2 (rack b) would hold 96.0 GiB" in msg
    assert "over the 85 % threshold" in msg
    assert "rack a would need 2 broker(s) of this capacity (it keeps 1; 4 leave it)" in msg
    assert "more usable disk on broker 1" in msg


def test_enough_capacity_plans_least_movement_under_the_limit() -> None:
    snap, sizes = six_broker_cluster()
    cap = DiskCapacity({b: 120 * GIB for b in RACKS6}, threshold_pct=85)
    plan = plan_decommission(snap, [4, 5], sizes, capacity=cap)
    validate_plan(snap, plan, [4, 5], sizes, limits=cap.limits(sorted(RACKS6)))
    assert plan.replica_moves == sum(1 for p in snap.partitions() for b in p.replicas if b in (4, 5))
    limits = WaveLimits(max_moves_per_broker=2)
    waves, disk = plan_disk(before_bytes(snap, sizes), sorted(RACKS6), [4, 5], rack_map(snap.brokers),
                            pack_waves(plan.moves, limits), cap, True, limits)
    assert disk["checked"] and disk["worst_peak_pct"] == 80.0
    for b in (1, 2, 3, 6):
        assert disk["brokers"][str(b)]["peak"] <= cap.limit(b)
    assert any("rack a keeps 1 broker while broker 4 leaves it" in n for n in disk["growth_notes"])


def test_a_nearly_full_broker_is_skipped_for_one_with_room() -> None:
    # RF 2: broker 1's replicas sit next to rack c, so they must go to rack b: broker 2 (full) or 5
    racks = {1: "a", 2: "b", 5: "b", 3: "c", 4: "c"}
    parts = {p: ((1, 3), (1, 4))[p % 2] for p in range(8)}
    parts.update({8: (2, 3), 9: (2, 3)})                  # broker 2: few replicas, many bytes
    parts.update({10 + p: (5, 4) for p in range(6)})      # broker 5: more replicas, few bytes
    snap = literal_cluster({"t": parts}, racks)
    sizes = {TopicPartition("t", p): GIB for p in range(8)}
    sizes.update({TopicPartition("t", 8): 4 * GIB, TopicPartition("t", 9): 4 * GIB})
    sizes.update({TopicPartition("t", p): GIB // 10 for p in range(10, 16)})
    cap = DiskCapacity({1: 100 * GIB, 2: 17 * GIB // 2, 5: 100 * GIB, 3: 100 * GIB, 4: 100 * GIB}, threshold_pct=100)
    plan = plan_decommission(snap, [1], sizes, capacity=cap)
    assert all(2 not in m.destinations for m in plan.moves)
    free = plan_decommission(snap, [1], sizes)
    assert any(2 in m.destinations for m in free.moves)     # without capacity broker 2 would get some
    assert plan.replica_moves == free.replica_moves == 8


def test_capacity_without_sizes_is_reported_unchecked() -> None:
    snap, _sizes = six_broker_cluster()
    plan = plan_decommission(snap, [4, 5], None, capacity=DiskCapacity({b: GIB for b in RACKS6}))
    limits = WaveLimits()
    _w, disk = plan_disk({}, sorted(RACKS6), [4, 5], rack_map(snap.brokers), pack_waves(plan.moves, limits),
                         DiskCapacity({b: GIB for b in RACKS6}), False, limits)
    assert not disk["checked"] and disk["status"].startswith("partition sizes unknown")


def test_unknown_capacity_is_said_not_assumed_infinite() -> None:
    snap, sizes = six_broker_cluster()
    plan = plan_decommission(snap, [4, 5], sizes)
    limits = WaveLimits()
    _w, disk = plan_disk(before_bytes(snap, sizes), sorted(RACKS6), [4, 5], rack_map(snap.brokers),
                         pack_waves(plan.moves, limits), None, True, limits)
    assert disk["status"] == "capacity unknown: disk usage after the move not checked"
    assert disk["brokers"]["1"]["capacity"] is None and disk["brokers"]["1"]["after"] == 96 * GIB


def _move(topic: str, cur: tuple[int, ...], tgt: tuple[int, ...], size: int) -> Move:
    return Move(TopicPartition(topic, 0), cur, tgt, size)


def test_within_a_wave_old_and_new_copies_both_count_and_waves_are_split() -> None:
    # a swap between two nearly full brokers: in one wave both peak at before + size (over the
    # limit) though the final state equals the start; one after the other, each fits
    limits = WaveLimits(max_moves_per_broker=5)
    moves = [_move("x", (1, 3), (2, 3), 10), _move("y", (2, 3), (1, 3), 10)]
    wave = wave_of(0, moves, limits)
    before = {1: 95, 2: 95, 3: 50}
    disk_limits = {1: 100, 2: 120, 3: 1000}
    out = order_waves([wave], before, disk_limits, limits)
    assert [sorted(m.tp.topic for m in w.moves) for w in out] == [["x"], ["y"]]
    prof = {d.broker: d for d in disk_profile(out, before, DiskCapacity({1: 100, 2: 120, 3: 1000}, threshold_pct=100),
                                              [1, 2, 3])}
    assert prof[1].peak == 95 and prof[2].peak == 105 and prof[1].after == 95


def test_no_order_fits_is_refused_with_the_broker_and_the_shortfall() -> None:
    limits = WaveLimits()
    wave = wave_of(0, [_move("x", (1,), (2,), 50)], limits)
    with pytest.raises(PlanRefused, match=r"broker 2 under its disk limit .*needs 10 B more"):
        order_waves([wave], {1: 50, 2: 60}, {2: 100}, limits)


@settings(max_examples=40)
@given(st.integers(6, 14), st.integers(1, 3), st.integers(0, 10 ** 6), st.integers(60, 100),
       st.integers(1, 4))
def test_decommission_plans_respect_the_limit_at_every_wave_or_refuse(nbrokers: int, nracks: int, seed: int,
                                                                       pct: int, per_broker: int) -> None:
    snap = synthetic_cluster(nbrokers, nracks, 4, 12, min(3, nracks if nracks > 1 else 2), seed=seed)
    sizes = synthetic_sizes(snap, seed=seed + 1)
    ids = sorted(snap.brokers)
    before = before_bytes(snap, sizes)
    removed = ids[-2:]
    mean = sum(before.values()) / max(len(ids) - len(removed), 1)
    capacity = DiskCapacity({b: int(mean * (0.9 + 0.3 * ((b * 7 + seed) % 5) / 4)) for b in ids}, threshold_pct=pct)
    limits = WaveLimits(max_moves_per_broker=per_broker)
    try:
        plan = plan_decommission(snap, removed, sizes, seed, capacity=capacity)
    except PlanRefused as exc:
        assert "broker" in str(exc)
        try:                                  # allowed extra moves: room made, or refused still
            plan = plan_decommission(snap, removed, sizes, seed, capacity=capacity, allow_extra_moves=True)
        except PlanRefused as again:
            assert "does not make enough room" in str(again)
            return
        assert int(plan.params["extra_moves"]) >= 1
    validate_plan(snap, plan, removed, sizes, limits=capacity.limits(ids))
    lower = sum(1 for p in snap.partitions() for b in p.replicas if b in removed)
    assert plan.replica_moves == lower + int(plan.params.get("extra_moves", 0))
    try:
        waves, disk = plan_disk(before, ids, removed, rack_map(snap.brokers), pack_waves(plan.moves, limits),
                                capacity, True, limits)
    except PlanRefused as exc:
        # only extra moves can need room that another wave frees first; when no wave order gives
        # it, the plan is refused (naming the broker) rather than run over the limit
        assert plan.params.get("extra_moves") and "under its disk limit" in str(exc)
        return
    used = dict(before)
    for w in waves:                         # every receiving broker at every wave's peak
        for b, inbound in w.inbound.items():
            assert used.get(b, 0) + inbound <= capacity.limit(b)
        for m in w.moves:
            for b in m.destinations:
                used[b] = used.get(b, 0) + m.size
            for b in m.sources:
                used[b] -= m.size
    assert {m.tp for w in waves for m in w.moves} == {m.tp for m in plan.moves}


def test_extra_moves_make_room_when_allowed_and_only_then() -> None:
    # racks a/b/c; payments-like RF 2 partitions on broker 3 (rack c) may leave rack c for a rack
    # they do not use; RF 3 ones may not. Broker 6 (rack c) leaves: broker 3 takes its rack-c replicas.
    racks = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}
    parts = {p: (6, (1, 2, 4, 5)[p % 4], (2, 4, 5, 1)[p % 4]) for p in range(6)}   # RF 3 on 6
    parts.update({10 + p: (3, (1, 4)[p % 2]) for p in range(4)})                 # RF 2 on 3 (racks c + a)
    snap = literal_cluster({"t": {p: r for p, r in parts.items() if p < 10},
                            "u": {p - 10: r for p, r in parts.items() if p >= 10}}, racks)
    sizes = {TopicPartition("t", p): 10 * GIB for p in range(6)}
    sizes.update({TopicPartition("u", p): 10 * GIB for p in range(4)})
    cap = DiskCapacity({b: 100 * GIB for b in racks}, threshold_pct=80)      # 80 GiB each; 3 would hold 100
    with pytest.raises(PlanRefused, match="or allow extra moves"):
        plan_decommission(snap, [6], sizes, capacity=cap)
    plan = plan_decommission(snap, [6], sizes, capacity=cap, allow_extra_moves=True)
    validate_plan(snap, plan, [6], sizes, limits=cap.limits(sorted(racks)))
    extra = [m for m in plan.moves if 6 not in m.current]
    assert len(extra) == 2 and all(m.sources == (3,) for m in extra)          # 20 GiB off broker 3
    assert all(racks[m.destinations[0]] == "b" for m in extra)                  # rack c and a are used
    assert plan.params["extra_moves"] == "2" and "2 extra replica move(s)" in plan.notes[0]
    after = before_bytes(snap, sizes)
    for m in plan.moves:
        for b in m.destinations:
            after[b] += m.size
        for b in m.sources:
            after[b] -= m.size
    assert after[3] == 80 * GIB and all(after[b] <= 80 * GIB for b in racks)
