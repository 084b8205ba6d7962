"""Kafka's replica assignment: vectors V1–V4, V6, the derived rack-aware example, properties."""

import random
from collections import Counter

import pytest
from hypothesis import given, strategies as st

from kafka_zk.assignment import (assign_replicas, assignment_for_new_partitions,
                                 parse_replica_assignment, rack_alternated_broker_list,
                                 validate_manual_assignment)
from kafka_zk.codecs import TopicAssignment
from kafka_zk.errors import (BrokerNotAvailable, InvalidInput, InvalidReplicaAssignment,
                             InvalidReplicationFactor)


def test_v1_rack_unaware():
    got = assign_replicas([(i, None) for i in range(5)], 10, 3, fixed_start_index=0)
    assert got == {0: (0, 1, 2), 1: (1, 2, 3), 2: (2, 3, 4), 3: (3, 4, 0), 4: (4, 0, 1),
                   5: (0, 2, 3), 6: (1, 3, 4), 7: (2, 4, 0), 8: (3, 0, 1), 9: (4, 1, 2)}


def test_v1_bad_replication_factors():
    brokers = [(i, None) for i in range(5)]
    with pytest.raises(InvalidReplicationFactor, match=r"^Replication factor must be larger than 0\.$"):
        assign_replicas(brokers, 10, 0, fixed_start_index=0)
    with pytest.raises(InvalidReplicationFactor,
                       match=r"^Replication factor: 6 larger than available brokers: 5\.$"):
        assign_replicas(brokers, 10, 6, fixed_start_index=0)


def test_v2_rack_alternated_list_and_assignment():
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_broker_list(racks) == [0, 3, 1, 5, 4, 2]
    assert rack_alternated_broker_list({k: v for k, v in racks.items() if k != 5}) == [0, 3, 1, 4, 2]
    got = assign_replicas(sorted(racks.items()), 7, 3, fixed_start_index=0, start_partition_id=0)
    assert got == {0: (0, 3, 1), 1: (3, 1, 5), 2: (1, 5, 4), 3: (5, 4, 2), 4: (4, 2, 0),
                   5: (2, 0, 3), 6: (0, 4, 2)}


def test_v3_add_partitions_all_servers():
    existing = TopicAssignment({0: (2, 3, 0, 1)})
    got = assignment_for_new_partitions(existing, [(i, None) for i in range(4)], 7)
    assert got == {1: (3, 2, 0, 1), 2: (0, 3, 1, 2), 3: (1, 0, 2, 3), 4: (2, 3, 0, 1),
                   5: (3, 0, 1, 2), 6: (0, 1, 2, 3)}


def test_v4_add_partitions_partial_servers():
    existing = TopicAssignment({0: (1, 2)})
    got = assignment_for_new_partitions(existing, [(i, None) for i in range(4)], 3)
    assert got == {1: (2, 0), 2: (3, 1)}


def test_add_partitions_must_increase():
    with pytest.raises(InvalidInput, match="can only be increased. Topic foo currently has 2 partitions, "
                                           "2 would not be an increase."):
        assignment_for_new_partitions(TopicAssignment({0: (1,), 1: (2,)}), [(1, None), (2, None)], 2, "foo")


def test_derived_rack_aware_example():
    racks = [(0, "a"), (1, "b"), (2, "c"), (3, "a"), (4, "a")]
    got = assign_replicas(racks, 6, 4, fixed_start_index=2)
    assert got == {0: (2, 0, 1, 3), 1: (3, 1, 2, 4), 2: (4, 2, 1, 3), 3: (0, 1, 2, 3),
                   4: (1, 4, 2, 3), 5: (2, 4, 1, 3)}


def test_rack_modes():
    mixed = [(0, "a"), (1, None), (2, "b")]
    with pytest.raises(InvalidInput, match="Add --disable-rack-aware"):
        assign_replicas(mixed, 3, 2, fixed_start_index=0)
    assert assign_replicas(mixed, 3, 2, fixed_start_index=0, rack_mode="disabled") == \
        assign_replicas([(0, None), (1, None), (2, None)], 3, 2, fixed_start_index=0)
    assert assign_replicas(mixed, 3, 2, fixed_start_index=0, rack_mode="safe") == \
        assign_replicas([(0, None), (1, None), (2, None)], 3, 2, fixed_start_index=0)


def test_random_start_is_seeded_by_the_rng_passed_in():
    brokers = [(i, None) for i in range(6)]
    a = assign_replicas(brokers, 12, 3, rng=random.Random(7))
    b = assign_replicas(brokers, 12, 3, rng=random.Random(7))
    assert a == b
    r = random.Random(7)
    start, shift = r.randrange(6), r.randrange(6)
    assert a[0][0] == start
    assert a == _unaware_reference(list(range(6)), 12, 3, start, shift)


def _unaware_reference(ids, n_parts, rf, start, shift):
    n, out = len(ids), {}
    for pid in range(n_parts):
        if pid > 0 and pid % n == 0:
            shift += 1
        first = (pid + start) % n
        out[pid] = tuple([ids[first]] + [ids[(first + 1 + (shift + j) % (n - 1)) % n] for j in range(rf - 1)])
    return out


@pytest.mark.parametrize("assignment", [
    {0: [0, 0]}, {0: [0, 1], 1: [0]}, {1: [1, 2], 2: [1, 2]}, {-1: [1, 2], 1: [1, 2], 2: [1, 2], 4: [1, 2]},
])
def test_v6_rejected(assignment):
    with pytest.raises(InvalidReplicaAssignment):
        validate_manual_assignment(assignment)


def test_v6_accepted_and_unknown_brokers():
    validate_manual_assignment({0: [0, 1, 2], 1: [1, 2, 3]})
    validate_manual_assignment({0: [0, 1, 2], 1: [1, 2, 3]}, [0, 1, 2, 3])
    with pytest.raises(BrokerNotAvailable, match="broker\\(s\\) 3 that are not registered"):
        validate_manual_assignment({0: [0, 1, 2], 1: [1, 2, 3]}, [0, 1, 2])


def test_parse_replica_assignment():
    assert parse_replica_assignment("0:1,1:2") == {0: (0, 1), 1: (1, 2)}
    with pytest.raises(InvalidReplicaAssignment, match="may not contain duplicate entries: 1"):
        parse_replica_assignment("1:1,2:3")
    with pytest.raises(InvalidReplicaAssignment, match="Partition 1 has different replication factor"):
        parse_replica_assignment("1:2,3")
    with pytest.raises(InvalidReplicaAssignment, match="is not a ':'-separated list"):
        parse_replica_assignment("1:x")


racks_strategy = st.lists(st.sampled_from("abcd"), min_size=1, max_size=9)


@given(n_brokers=st.integers(1, 12), n_parts=st.integers(1, 40), data=st.data())
def test_property_unaware(n_brokers, n_parts, data):
    rf = data.draw(st.integers(1, n_brokers))
    seed = data.draw(st.integers(0, 2**32))
    ids = sorted(data.draw(st.sets(st.integers(0, 1000), min_size=n_brokers, max_size=n_brokers)))
    got = assign_replicas([(i, None) for i in ids], n_parts, rf, rng=random.Random(seed))
    assert sorted(got) == list(range(n_parts))
    for reps in got.values():
        assert len(reps) == rf and len(set(reps)) == rf and set(reps) <= set(ids)
    leaders = Counter(r[0] for r in got.values())
    counts = [leaders.get(i, 0) for i in ids]
    assert max(counts) - min(counts) <= 1


@given(racks=racks_strategy, n_parts=st.integers(1, 40), data=st.data())
def test_property_rack_aware(racks, n_parts, data):
    n = len(racks)
    rf = data.draw(st.integers(1, n))
    seed = data.draw(st.integers(0, 2**32))
    brokers = list(enumerate(racks))
    got = assign_replicas(brokers, n_parts, rf, rng=random.Random(seed))
    n_racks = len(set(racks))
    for reps in got.values():
        assert len(reps) == rf and len(set(reps)) == rf
        assert len({racks[b] for b in reps}) == min(rf, n_racks)
    leaders = Counter(r[0] for r in got.values())
    counts = [leaders.get(i, 0) for i in range(n)]
    assert max(counts) - min(counts) <= 1
