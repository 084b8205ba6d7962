"""The incremental re-plan gives the full re-plan's rates, catch-up times, bytes and disks.

Random clusters (up to 6 brokers, 6 partitions, random sizes) go through random event sequences —
moves adding and dropping replicas, ISR joins of caught-up followers, throttle rates and lists,
stalls, brokers down and up, disk capacities, network rates, size changes, deletions, time
passing in uneven steps — applied to two models side by side: the product's
(:class:`kafka_sim.replication_plan.ReplicationPlan`) and the reference that derives everything again on
every change (tests/kafka_sim/replication_reference.py). After every step both give the same
catch-ups (same replicas, same simulated times), the same next event time, the same rates and
the same bytes on every replica and disk, to float tolerance. ``allocate_classes`` (flows grouped
by the resources they use) is pinned against ``allocate`` (one flow at a time) the same way.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from kafka_sim.maxmin import Flow, allocate, allocate_classes
from kafka_sim.replication import ReplicationModel
from kafka_zk.codecs import TopicPartition as TP
from tests.kafka_sim.replication_reference import reference_model

BROKERS = range(6)


def close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return a == b or abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


keys_st = st.lists(st.sampled_from(["out", "in", "lthr", "fthr"]), min_size=1, max_size=4, unique=True)


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), keys_st), min_size=1, max_size=40),
       st.dictionaries(st.tuples(st.sampled_from(["out", "in", "lthr", "fthr"]), st.integers(0, 3)),
                       st.floats(0.0, 1e9, allow_nan=False), max_size=16))
@settings(max_examples=300)
def test_class_allocation_equals_per_flow_allocation(specs, caps) -> None:
    flows = [Flow(TP("t", i), lead, fol, tuple((kind, lead if kind in ("out", "lthr") else fol) for kind in kinds))
             for i, (lead, fol, kinds) in enumerate(specs)]
    per_flow = allocate(flows, caps)
    counts: dict = {}
    for f in flows:
        counts[f.keys] = counts.get(f.keys, 0) + 1
    per_class = allocate_classes(counts, caps)
    assert all(close(per_class[f.keys], r) for f, r in zip(flows, per_flow))


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), keys_st, st.integers(1, 4)), min_size=1, max_size=30),
       st.dictionaries(st.tuples(st.sampled_from(["out", "in", "lthr", "fthr"]), st.integers(0, 3)),
                       st.sampled_from([0.0, 1.0, 10.0, 100.0, 1e8]), max_size=16),
       st.data())
@settings(max_examples=300)
def test_refilling_above_the_lowest_rate_that_lost_flows_equals_a_fill_from_scratch(specs, caps, data) -> None:
    """After flows leave, keeping every class below the lowest old rate of the classes that lost
    flows and filling only the rest gives the rates a fill from scratch gives."""
    counts: dict = {}
    for lead, fol, kinds, n in specs:
        keys = tuple((kind, lead if kind in ("out", "lthr") else fol) for kind in kinds)
        counts[keys] = counts.get(keys, 0) + n
    old = allocate_classes(counts, caps)
    after = {cls: n - data.draw(st.integers(0, n), label=f"leave {cls}") for cls, n in counts.items()}
    lost = [cls for cls in counts if after[cls] < counts[cls]]
    after = {cls: n for cls, n in after.items() if n > 0}
    below = min((old[cls] for cls in lost), default=float("inf"))
    kept = allocate_classes(after, caps, old, below)
    fresh = allocate_classes(after, caps)
    assert kept.keys() == fresh.keys() and all(close(kept[c], fresh[c]) for c in fresh)


sizes_st = st.one_of(st.integers(0, 5000).map(float), st.floats(0.0, 1e12, allow_nan=False))
rate_st = st.one_of(st.none(), st.sampled_from([1.0, 10.0, 100.0, 1000.0]), st.floats(0.5, 1e9))
broker_st = st.integers(0, 5)
tp_st = st.integers(0, 5)
op_st = st.one_of(
    st.tuples(st.just("advance"), st.one_of(st.floats(0.0, 50.0), st.sampled_from([0.0, 1.0, 10.0]))),
    st.tuples(st.just("move"), tp_st, st.lists(broker_st, min_size=1, max_size=4, unique=True)),
    st.tuples(st.just("finish"), tp_st),
    st.tuples(st.just("join"),),
    st.tuples(st.just("throttle_rates"), broker_st, rate_st, rate_st),
    st.tuples(st.just("throttle_lists"), st.sampled_from(["t0", "t1"]),
              st.one_of(st.just("*"), st.frozensets(st.tuples(tp_st, broker_st), max_size=6)),
              st.one_of(st.just("*"), st.frozensets(st.tuples(tp_st, broker_st), max_size=6))),
    st.tuples(st.just("stall"), tp_st, broker_st, st.booleans()),
    st.tuples(st.just("down"), broker_st),
    st.tuples(st.just("up"), broker_st),
    st.tuples(st.just("disk"), broker_st, st.one_of(st.none(), st.floats(1.0, 20000.0))),
    st.tuples(st.just("network"), broker_st, st.one_of(st.none(), st.floats(1.0, 2000.0))),
    st.tuples(st.just("size"), tp_st, sizes_st),
    st.tuples(st.just("remove"), tp_st),
)


def _tp(i: int) -> TP:
    return TP(f"t{i % 2}", i)


def _apply(m: ReplicationModel, op: tuple, clock: list[float]) -> list:
    kind = op[0]
    if kind == "advance":
        clock[0] += op[1]
        return [(e.tp, e.broker, e.leader, e.time) for e in m.advance(clock[0])]
    if kind == "move":
        tp = _tp(op[1])
        pd = m.parts.get(tp)
        if pd is not None and pd.leader >= 0:
            m.set_view(tp, replicas=tuple(dict.fromkeys((*pd.replicas, *op[2]))))
    elif kind == "finish":                    # a move completes: only the in-sync replicas stay
        tp = _tp(op[1])
        pd = m.parts.get(tp)
        if pd is not None and pd.isr:
            m.set_view(tp, replicas=pd.isr)
    elif kind == "join":                      # leaders add their caught-up followers, in order
        for tp in sorted(m.parts):
            pd = m.parts[tp]
            for r in sorted(pd.caught):
                if r in pd.replicas and r not in pd.isr:
                    m.set_view(tp, isr=(*pd.isr, r))
    elif kind == "throttle_rates":
        m.set_throttle_rates(op[1], op[2], op[3])
    elif kind == "throttle_lists":
        m.set_throttle_lists(op[1], op[2], op[3])
    elif kind == "stall":
        if _tp(op[1]) in m.parts:
            m.set_stalled(_tp(op[1]), op[2], op[3])
    elif kind == "down":
        m.broker_down(op[1])
    elif kind == "up":
        m.broker_up(op[1])
    elif kind == "disk":
        m.set_disk_capacity(op[1], op[2])
    elif kind == "network":
        m.set_network_rate(op[1], op[2])
    elif kind == "size":
        if _tp(op[1]) in m.parts:
            m.set_size(_tp(op[1]), op[2])
    elif kind == "remove":
        m.remove(_tp(op[1]))
    return []


def _observe(m: ReplicationModel) -> tuple:
    return (m.next_event_time(), m.rates(),
            {(tp, b): m.replica_bytes(tp, b) for tp, pd in sorted(m.parts.items()) for b in pd.replicas},
            m.disks_used(), sorted((tp, r) for tp, pd in m.parts.items() for r in pd.caught))


@given(network=st.sampled_from([10.0, 100.0, 1000.0]), produce=st.sampled_from([0.0, 0.0, 1.0, 5.0]),
       fetch_start=st.sampled_from([0.0, 0.5]),
       layout=st.lists(st.tuples(sizes_st, st.lists(broker_st, min_size=1, max_size=3, unique=True)),
                       min_size=1, max_size=6),
       ops=st.lists(op_st, min_size=1, max_size=40))
@settings(max_examples=300)
def test_incremental_replan_matches_the_full_replan(network, produce, fetch_start, layout, ops) -> None:
    check_side_by_side(network, produce, fetch_start, layout, ops)


def check_side_by_side(network: float, produce: float, fetch_start: float, layout: list, ops: list) -> None:
    """Both models through the same layout and operations, compared after every one."""
    models = [ReplicationModel(network, produce, fetch_start), reference_model(network, produce, fetch_start)]
    for m in models:
        for b in BROKERS:
            m.broker_up(b)
        for i, (size, replicas) in enumerate(layout):
            m.set_size(_tp(i), size)
            m.set_view(_tp(i), replicas=replicas, leader=replicas[0], isr=replicas)
    clocks = [[0.0], [0.0]]
    for op in ops + [("advance", 1e6)]:
        got, want = (_apply(m, op, c) for m, c in zip(models, clocks))
        assert [e[:3] for e in got] == [e[:3] for e in want], op
        assert all(close(g[3], w[3]) for g, w in zip(got, want)), (op, got, want)
        (g_next, g_rates, g_bytes, g_disks, g_caught), (w_next, w_rates, w_bytes, w_disks, w_caught) = \
            (_observe(m) for m in models)
        assert close(g_next, w_next), op
        assert g_rates.keys() == w_rates.keys() and all(close(g_rates[k], w_rates[k]) for k in w_rates), op
        assert g_bytes.keys() == w_bytes.keys() and all(close(g_bytes[k], w_bytes[k]) for k in w_bytes), op
        assert g_disks.keys() == w_disks.keys() and all(close(g_disks[k], w_disks[k]) for k in w_disks), op
        assert g_caught == w_caught, op


def test_a_wave_of_many_moves_catches_up_as_the_reference_does() -> None:
    """One wave of 300 concurrent moves among 12 throttled brokers, both models to the end."""
    import random
    rng = random.Random(7)
    models = [ReplicationModel(100.0, 0.0, 0.5), reference_model(100.0, 0.0, 0.5)]
    layout = [(float(rng.randint(1, 10_000)), rng.sample(range(12), 2), rng.randrange(12)) for _ in range(300)]
    events = []
    for m in models:
        for b in range(12):
            m.broker_up(b)
            m.set_throttle_rates(b, 60.0, 80.0)
        m.set_throttle_lists("t0", "*", "*")
        for i, (size, (lead, other), target) in enumerate(layout):
            tp = TP("t0", i)
            m.set_size(tp, size)
            m.set_view(tp, replicas=(lead, other), leader=lead, isr=(lead, other))
            if target not in (lead, other):
                m.set_view(tp, replicas=(lead, other, target))
        events.append([(e.tp, e.broker, e.time) for e in m.advance(1e7)])
    got, want = events
    assert len(want) > 200 and [e[:2] for e in got] == [e[:2] for e in want]
    assert all(close(g[2], w[2]) for g, w in zip(got, want))
    assert pytest.approx(max(e[2] for e in want), rel=1e-9) == max(e[2] for e in got)
