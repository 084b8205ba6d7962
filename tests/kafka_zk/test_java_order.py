"""Kafka 2.4.1's print orders (kafka_zk.java_order) and the CLI lines that use them.

Vectors: Java's own ``String.hashCode`` values, and the ``__consumer_offsets`` describe lines
Kafka prints everywhere (1.x-2.3 ZooKeeper describe:
``segment.bytes=104857600,cleanup.policy=compact,compression.type=producer``; 2.4+:
``compression.type=producer,cleanup.policy=compact,segment.bytes=104857600``). The znode holds
the keys in the order Kafka 2.4.1 wrote them: GroupMetadataManager puts cleanup.policy,
segment.bytes, compression.type into a Properties, which Jackson serialises in Hashtable
order: segment.bytes, compression.type, cleanup.policy.
"""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from cli.main import main
from kafka_zk.describe import config_order
from kafka_zk.java_order import (java8_properties_order, java_hashmap_order, java_string_hash, spread,
                                 to_int32)
from tests.zk_helpers import register_brokers, tree

OFFSETS_ZNODE_ORDER = ["segment.bytes", "compression.type", "cleanup.policy"]
OFFSETS_CONFIG = {"segment.bytes": "104857600", "compression.type": "producer", "cleanup.policy": "compact"}


def test_java_string_hash_matches_java():
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == -2147483648   # the famous MIN_VALUE hash
    assert java_string_hash("\U0001F600") == 31 * 0xD83D + 0xDE00   # two UTF-16 code units


def test_properties_written_by_kafka_come_back_in_the_znode_order():
    """What Kafka writes (Properties order of its puts) is the znode order above."""
    assert java8_properties_order(["cleanup.policy", "segment.bytes", "compression.type"]) == OFFSETS_ZNODE_ORDER


def test_consumer_offsets_overrides_in_kafkas_print_orders():
    assert config_order(OFFSETS_ZNODE_ORDER, "1.x") == ["segment.bytes", "cleanup.policy", "compression.type"]
    assert config_order(OFFSETS_ZNODE_ORDER, "2.4") == ["compression.type", "cleanup.policy", "segment.bytes"]


def test_keys_sharing_a_bucket_keep_insertion_order_in_a_hashmap():
    assert java_hashmap_order(["Aa", "BB"]) == ["Aa", "BB"]
    assert java_hashmap_order(["BB", "Aa"]) == ["BB", "Aa"]


def test_a_hashmap_past_twelve_keys_orders_by_32_buckets():
    keys = [f"k{i}" for i in range(13)]
    order = java_hashmap_order(keys)
    buckets = [spread(java_string_hash(k)) & 31 for k in order]
    assert buckets == sorted(buckets)


@given(st.lists(st.text(max_size=12), max_size=40))
def test_orders_are_permutations_of_the_distinct_keys(keys):
    distinct = list(dict.fromkeys(keys))
    for order in (java_hashmap_order(keys), java8_properties_order(keys)):
        assert sorted(order) == sorted(distinct)


@given(st.integers(min_value=-(2 ** 40), max_value=2 ** 40))
def test_to_int32_wraps_like_java(x):
    y = to_int32(x)
    assert -(2 ** 31) <= y < 2 ** 31 and (y - x) % (2 ** 32) == 0


def _offsets_topic(zk):
    register_brokers(zk, {0: None})
    config = {k: OFFSETS_CONFIG[k] for k in OFFSETS_ZNODE_ORDER}
    zk.create("/brokers/topics/__consumer_offsets", b'{"version":1,"partitions":{"0":[0]}}')
    zk.create("/config/topics/__consumer_offsets", json.dumps({"version": 1, "config": config}).encode(),
              makepath=True)


def test_cli_describe_prints_overrides_in_kafkas_order(zk, zk_connect, capsys):
    _offsets_topic(zk)
    Z = ["topics", "--zookeeper", zk_connect, "--describe", "--topic", "__consumer_offsets"]
    assert main(Z) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "Topic: __consumer_offsets\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: "
        "compression.type=producer,cleanup.policy=compact,segment.bytes=104857600")
    assert main(Z + ["--describe-format", "1.x"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "Topic:__consumer_offsets\tPartitionCount:1\tReplicationFactor:1\tConfigs:"
        "segment.bytes=104857600,cleanup.policy=compact,compression.type=producer")
    assert main(["configs", "--zookeeper", zk_connect, "--describe", "--entity-type", "topics",
                 "--entity-name", "__consumer_offsets"]) == 0
    assert capsys.readouterr().out == ("Configs for topic '__consumer_offsets' are segment.bytes=104857600,"
                                       "cleanup.policy=compact,compression.type=producer\n")


def test_cli_refuses_min_isr_filters_with_zookeeper_as_kafka_2_4(zk, zk_connect, capsys):
    _offsets_topic(zk)
    before = tree(zk)
    for flag in ("under-min-isr-partitions", "at-min-isr-partitions"):
        assert main(["topics", "--zookeeper", zk_connect, "--describe", f"--{flag}"]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f'Error: Option "[{flag}]" can\'t be used with option "[zookeeper]"')
    assert tree(zk) == before
