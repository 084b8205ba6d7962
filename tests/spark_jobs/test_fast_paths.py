"""The plan job's fast paths give exactly what the plain definitions give.

Each fast path (arithmetic znode entry size, directly written plan/waves JSON, fixed-batch
bounds without waves, loads by applying moves, per-rack placement heaps) is compared with the
straightforward computation it replaces, on random inputs.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_zk.codecs import TopicPartition, dumps, encode_reassignment_file
from planning.plan_folder import write as artifacts
from planning.plan_folder.write import reassignment_json, waves_doc, waves_json
from planning.model import Move
from planning.kernels import placement
from planning.kernels.decommission import plan_decommission
from planning.kernels.loads import cluster_loads, moved_loads
from planning.kernels.waves import (WaveLimits, entry_bytes, fixed_batch_bounds, fixed_batches,
                                      pack_waves, wave_bounds)
from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes

topics = st.text(min_size=1, max_size=12)
ids = st.integers(min_value=0, max_value=10**6)
entries = st.dictionaries(st.builds(TopicPartition, topics, st.integers(0, 10**5)),
                          st.lists(ids, min_size=1, max_size=5, unique=True).map(tuple), max_size=30)


@settings(max_examples=200, deadline=None)
@given(topics, st.integers(0, 10**6), st.lists(ids, max_size=6).map(tuple))
def test_entry_bytes_is_the_encoded_length(topic, partition, target) -> None:
    m = Move(TopicPartition(topic, partition), (1, 2, 3), target)
    assert entry_bytes(m) == len(dumps({"topic": topic, "partition": partition, "replicas": list(target)})) + 1


@settings(max_examples=100, deadline=None)
@given(entries)
def test_reassignment_json_is_the_codec_output(targets) -> None:
    assert reassignment_json(targets) == encode_reassignment_file(targets)


def _plan(seed: int, sized: bool):
    snap = synthetic_cluster(12, 3, 5, 30, 3, seed=seed)
    sizes = synthetic_sizes(snap, seed=seed + 1) if sized else None
    return snap, sizes, plan_decommission(snap, [2, 7], sizes, seed=seed)


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 1000), st.booleans(), st.sampled_from([None, 7_000_000]), st.integers(1, 6))
def test_waves_json_bounds_and_loads_match_the_plain_computation(seed, sized, throttle, per_broker) -> None:
    snap, sizes, plan = _plan(seed, sized)
    limits = WaveLimits(per_broker, None, 4096, throttle)
    waves = pack_waves(plan.moves, limits)
    assert waves_json(waves) == artifacts._dump(waves_doc(waves))
    json.loads(waves_json(waves))
    bounds = wave_bounds(plan.moves, waves, limits)
    assert fixed_batch_bounds(plan.moves, 10, limits, bounds) == \
        wave_bounds(plan.moves, fixed_batches(plan.moves, 10, limits), limits)
    ids = sorted(snap.brokers)
    before = cluster_loads(snap.partitions(), ids, sizes)
    after = moved_loads(before, plan.moves)
    full = cluster_loads(snap.partitions(), ids, sizes, None, plan.target)
    for b in ids:
        assert (after.replicas.get(b, 0), after.bytes.get(b, 0), after.leaders.get(b, 0)) == \
            (full.replicas.get(b, 0), full.bytes.get(b, 0), full.leaders.get(b, 0))


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 1000), st.booleans())
def test_per_rack_heaps_choose_what_one_heap_chooses(seed, sized) -> None:
    _snap, _sizes, by_rack = _plan(seed, sized)
    saved = placement.PER_RACK_HEAPS
    placement.PER_RACK_HEAPS = 0          # every Placer uses the single global heap
    try:
        _snap, _sizes, single = _plan(seed, sized)
    finally:
        placement.PER_RACK_HEAPS = saved
    assert by_rack.target == single.target


@settings(max_examples=50, deadline=None)
@given(entries, st.lists(st.lists(st.builds(TopicPartition, topics, st.integers(0, 99)), max_size=3), max_size=3),
       st.lists(st.lists(topics, max_size=3), max_size=3), st.integers(1, 4))
def test_plan_hash_is_sha256_of_the_canonical_content(targets, election, deletion, per_broker) -> None:
    import hashlib

    from planning.plan_folder.read import canonical_content
    from planning.plan_folder.write import plan_hash
    from planning.model import Plan

    moves = tuple(sorted((Move(tp, tuple(b + 1 for b in r), r) for tp, r in targets.items()), key=lambda m: m.tp))
    plan = Plan("op-\u00e9", moves, {m.tp: m.target for m in moves},
                election=tuple(tuple(b) for b in election), deletion=tuple(tuple(b) for b in deletion))
    waves = pack_waves(moves, WaveLimits(per_broker))
    expected = hashlib.sha256(canonical_content(
        plan.operation, [(m.tp, m.current, m.target) for m in moves], [[m.tp for m in w.moves] for w in waves],
        plan.election, plan.deletion)).hexdigest()
    assert plan_hash(plan, waves) == expected


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 1000), st.booleans(), st.sampled_from([None, 7_000_000]), st.integers(1, 6))
def test_throttles_and_plan_files_are_the_plain_encoding(seed, sized, throttle, per_broker) -> None:
    snap, _sizes, plan = _plan(seed, sized)
    waves = pack_waves(plan.moves, WaveLimits(per_broker, None, 4096, throttle))
    assert artifacts.throttles_json(waves, throttle) == artifacts._dump(artifacts.throttles_doc(waves, throttle))
    assert artifacts._plan_files(plan) == (reassignment_json(plan.target), reassignment_json(plan.current()))
    assert artifacts.waves_json(waves) == artifacts._dump(waves_doc(waves))


@settings(max_examples=50, deadline=None)
@given(entries, st.integers(1, 4), st.sampled_from([None, 1000]))
def test_throttles_json_is_the_plain_encoding_on_any_moves(targets, per_broker, throttle) -> None:
    # moves with and without data movement, replica lists in any order, odd topic names
    moves = tuple(sorted((Move(tp, tuple(sorted(r, reverse=tp.partition % 2 == 0))[:2] + (10**6 + 1,), r)
                          for tp, r in targets.items()), key=lambda m: m.tp))
    waves = pack_waves(moves, WaveLimits(per_broker))
    assert artifacts.throttles_json(waves, throttle) == artifacts._dump(artifacts.throttles_doc(waves, throttle))


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_msgspec_writes_any_string_as_json_dumps_does(text) -> None:
    # the plan files' per-move parts are encoded by msgspec (planning/plan_folder/write.py)
    assert artifacts._encode(text) == json.dumps(text, ensure_ascii=False).encode("utf-8")
