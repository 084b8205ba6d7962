"""Invariants of the topic planners on any small cluster (hypothesis): move-topics keeps the
replication factor, never places a replica outside the broker set, keeps replicas already inside
it and never lowers the racks a partition spans where the set allows; change-rf reaches the asked
factor, only adds (up) or only drops (down), never lands on a broker twice, and keeps racks spread."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
from planning.kernels.loads import rack_map
from planning.kernels.add_and_move import plan_move_topics
from planning.kernels.replication import plan_change_replication_factor
from planning.kernels.validate import validate_plan


@st.composite
def clusters(draw):
    n = draw(st.integers(2, 8))
    racks = draw(st.integers(0, 3))
    brokers = {b: (f"r{b % racks}" if racks else None) for b in range(n)}
    rf = draw(st.integers(1, min(3, n)))
    topics: dict[str, dict[int, Partition]] = {}
    for i in range(draw(st.integers(1, 24))):
        start = draw(st.integers(0, n - 1))
        step = draw(st.integers(1, max(1, n - 1)))
        reps = tuple(dict.fromkeys((start + k * step) % n for k in range(n)))[:rf]
        if len(reps) < rf:
            reps = tuple(dict.fromkeys(reps + tuple(range(n))))[:rf]
        name = f"t{i % 3}"
        topics.setdefault(name, {})[len(topics.get(name, {}))] = Partition(name, len(topics.get(name, {})), reps,
                                                                            leader=reps[0], leader_epoch=0, isr=reps,
                                                                            controller_epoch=1)
    snap = ClusterSnapshot({b: Broker(b, r, f"h{b}", 9092) for b, r in brokers.items()},
                           {t: Topic(t, p) for t, p in topics.items()}, controller_id=0, controller_epoch=1)
    sizes = ({p.tp: draw(st.integers(0, 10_000)) for p in snap.partitions()} if draw(st.booleans()) else None)
    return snap, sizes


@settings(max_examples=150, deadline=None)
@given(clusters(), st.data())
def test_move_topics_keeps_rf_stays_in_the_set_and_keeps_what_is_there(cluster, data) -> None:
    snap, sizes = cluster
    topics = data.draw(st.lists(st.sampled_from(sorted(snap.topics)), min_size=1, unique=True))
    rf = max(len(p.replicas) for t in topics for p in snap.topics[t].partitions.values())
    allowed = data.draw(st.sets(st.sampled_from(sorted(snap.brokers)), min_size=rf))
    plan = plan_move_topics(snap, topics, sorted(allowed), sizes)
    validate_plan(snap, plan, sorted(set(snap.brokers) - allowed), sizes)
    racks = rack_map(snap.brokers)
    set_racks = {racks[b] for b in allowed}
    for m in plan.moves:
        assert len(m.target) == len(m.current) and set(m.target) <= allowed
        assert set(m.current) & allowed <= set(m.target)             # replicas inside the set stay
        want = min(len({racks[b] for b in m.current}), len(m.target), len(set_racks))
        assert len({racks[b] for b in m.target}) >= want


@settings(max_examples=150, deadline=None)
@given(clusters(), st.integers(1, 4), st.data())
def test_change_rf_reaches_the_factor_adding_or_dropping_only(cluster, rf, data) -> None:
    snap, sizes = cluster
    assume(rf <= len(snap.brokers))
    topics = data.draw(st.lists(st.sampled_from(sorted(snap.topics)), min_size=1, unique=True))
    plan = plan_change_replication_factor(snap, topics, rf, sizes)
    validate_plan(snap, plan, (), sizes)
    racks = rack_map(snap.brokers)
    for m in plan.moves:
        assert len(m.target) == rf and len(set(m.target)) == rf
        assert set(m.target) >= set(m.current) or set(m.target) <= set(m.current)
        want = min(len({racks[b] for b in m.current}), rf, len(set(racks.values())))
        assert len({racks[b] for b in m.target}) >= want
    moved = {m.tp for m in plan.moves}
    for t in topics:
        for p in snap.topics[t].partitions.values():
            assert (p.tp in moved) == (len(p.replicas) != rf)
