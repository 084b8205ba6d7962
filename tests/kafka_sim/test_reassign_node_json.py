"""The controller's rewrite of /admin/reassign_partitions after each completed move is, byte for
byte, the codec's encoding of the entries left (kafka_sim/reassign.py joins kept entries' JSON)."""

from __future__ import annotations

from hypothesis import given, strategies as st

from kafka_sim.reassign import _positions, _without, entry_json, node_json
from kafka_zk.codecs import ReassignmentEntry, ReassignmentRequest, TopicPartition, decode_reassignment

entries_st = st.lists(st.builds(ReassignmentEntry, st.from_regex(r"[a-zA-Z0-9._-]{1,20}", fullmatch=True),
                                st.integers(0, 10_000), st.lists(st.integers(0, 2_000), max_size=6).map(tuple)),
                      min_size=1, max_size=30)


@given(entries_st, st.integers(1, 3))
def test_joined_entries_are_the_codecs_encoding(entries, version) -> None:
    req = ReassignmentRequest(tuple(entries), version)
    joined = node_json(version, [entry_json(e) for e in entries])
    assert joined == req.encode()
    assert decode_reassignment(joined) == req


@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 4)), max_size=40),
       st.sets(st.tuples(st.sampled_from("abcd"), st.integers(0, 5)), max_size=3))
def test_the_entries_left_after_a_removal_are_the_others_in_their_order(keys, removed) -> None:
    # a partition may be named twice: every entry for a removed partition goes, the rest keep their order
    tps = {TopicPartition(t, p) for t, p in removed}
    gone = _positions(keys, tps)
    assert gone == [i for i, k in enumerate(keys) if k in tps]
    assert _without(list(range(len(keys))), gone) == [i for i, k in enumerate(keys) if k not in tps]
