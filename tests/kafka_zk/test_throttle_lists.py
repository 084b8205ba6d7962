"""Throttle lists: docs/zookeeper.md §3.5 (≤ 2.5) vectors as sets, formatting, parsing, merge and exact restore."""

import pytest

from kafka_zk.codecs import TopicPartition as TP
from kafka_zk.errors import InvalidConfig
from kafka_zk.throttle_lists import (format_replica_list, merge_replica_list, parse_replica_list,
                                     subtract_replica_list, throttled_brokers, throttled_replicas)


def pairs(text):
    return parse_replica_list(text)


VECTORS = [
    ("shouldFindMovingReplicas",
     {TP("t1", 0): [100, 101], TP("t1", 1): [100, 102]},
     {TP("t1", 0): [101, 102], TP("t1", 1): [100, 102]},
     {"t1": ("0:100,0:101", "0:102")}),
    ("shouldFindMovingReplicasWhenProposedIsSubsetOfExisting",
     {TP("t1", 0): [100, 101], TP("t1", 1): [100, 102], TP("t1", 2): [100, 101],
      TP("t2", 0): [100, 101], TP("t2", 1): [101, 102]},
     {TP("t1", 0): [101, 102], TP("t1", 1): [102], TP("t1", 2): [100, 101, 102]},
     {"t1": ("0:100,0:101,2:100,2:101", "0:102,2:102")}),
    ("shouldFindMovingReplicasMultiplePartitions",
     {TP("t1", 0): [100, 101], TP("t1", 1): [100, 101], TP("t1", 2): [100, 102]},
     {TP("t1", 0): [101, 102], TP("t1", 1): [101, 102], TP("t1", 2): [100, 102]},
     {"t1": ("0:100,0:101,1:100,1:101", "0:102,1:102")}),
    ("shouldFindMovingReplicasMultipleTopics",
     {TP("topic1", 0): [100, 101], TP("topic2", 0): [101, 102]},
     {TP("topic1", 0): [101, 102], TP("topic2", 0): [100, 102]},
     {"topic1": ("0:100,0:101", "0:102"), "topic2": ("0:101,0:102", "0:100")}),
    ("shouldFindTwoMovingReplicasInSamePartition",
     {TP("t1", 0): [100, 101, 102, 103]},
     {TP("t1", 0): [100, 101, 104, 105]},
     {"t1": ("0:100,0:101,0:102,0:103", "0:104,0:105")}),
]


@pytest.mark.parametrize("name,current,proposed,expected", VECTORS, ids=[v[0] for v in VECTORS])
def test_le_2_5_vectors_as_sets(name, current, proposed, expected):
    got = throttled_replicas(current, proposed)
    assert set(got) == set(expected)
    for topic, (leader, follower) in expected.items():
        assert got[topic].leader == pairs(leader)
        assert got[topic].follower == pairs(follower)


def test_throttled_brokers_are_sources_and_destinations_of_moving_partitions_only():
    current = {TP("t1", 0): [100, 101], TP("t1", 1): [103, 104]}
    proposed = {TP("t1", 0): [101, 102], TP("t1", 1): [104]}
    assert throttled_brokers(current, proposed) == {100, 101, 102}
    assert throttled_brokers(current, {TP("t1", 1): [104, 103]}) == frozenset()


def test_format_sorts_numerically_by_partition_then_broker():
    assert format_replica_list({(10, 1), (2, 1), (0, 101), (0, 100)}) == "0:100,0:101,2:1,10:1"
    assert format_replica_list([]) == ""


@pytest.mark.parametrize("text,expected", [
    ("", frozenset()), ("*", "*"), (" * ", "*"), ("0:1", {(0, 1)}), ("0:1, 1:2", {(0, 1), (1, 2)}),
    ("0:1,,1:2,", {(0, 1), (1, 2)}),
])
def test_parse_accepts_what_kafka_validator_accepts(text, expected):
    assert parse_replica_list(text) == expected


@pytest.mark.parametrize("text", ["0-1", "a:1", "0:1:2", "*,0:1", "0:", ":1", "-1:2"])
def test_parse_rejects_bad_lists_naming_the_element(text):
    with pytest.raises(InvalidConfig, match="partitionId>:<brokerId>"):
        parse_replica_list(text)


def test_merge_keeps_user_pairs_and_wildcard():
    assert merge_replica_list("", {(0, 1)}) == "0:1"
    assert merge_replica_list(None, {(0, 1)}) == "0:1"
    assert merge_replica_list("5:9,0:1", {(0, 1), (0, 2)}) == "0:1,0:2,5:9"
    assert merge_replica_list("*", {(0, 1)}) == "*"


@pytest.mark.parametrize("before", [None, "", "5:9", "0:1,5:9", "*"])
def test_restore_is_exact_when_nobody_changed_the_list(before):
    ours = {(0, 1), (0, 2)}
    produced = merge_replica_list(before, ours)
    assert subtract_replica_list(produced, ours, before) == before


def test_restore_after_a_user_edit_removes_only_what_we_added():
    ours = {(0, 1), (0, 2)}
    before = "0:1,5:9"          # 0:1 was the user's: it stays
    produced = merge_replica_list(before, ours)
    edited = produced + ",7:7"  # the user added a pair during the run
    assert subtract_replica_list(edited, ours, before) == "0:1,5:9,7:7"
    # user removed the key meanwhile: nothing to restore
    assert subtract_replica_list(None, ours, before) is None
    # key absent before and only our pairs remain after a reorder: key removed
    assert subtract_replica_list("0:2,0:1,3:3", ours, None) == "3:3"
    assert subtract_replica_list("0:2", ours, None) is None
    # someone set '*' during the run: leave it
    assert subtract_replica_list("*", ours, "5:9") == "*"
    # '*' before, user changed to a list: we added nothing, keep theirs
    assert subtract_replica_list("4:4", ours, "*") == "4:4"


def test_restore_is_idempotent():
    ours = {(0, 1)}
    first = subtract_replica_list(merge_replica_list("5:9", ours), ours, "5:9")
    assert first == "5:9"
    assert subtract_replica_list(first, ours, "5:9") == "5:9"
