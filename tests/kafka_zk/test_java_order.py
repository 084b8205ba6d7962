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
import random
import shutil
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli.main import main
from kafka_zk.describe import config_order
from kafka_zk.java_order import (java8_properties_order, java11_properties_order, java_hashmap_order,
                                 java_string_hash, scala213_hashmap_order, spread, to_int32, topic_partition_hash)
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


def _tp_order(tps):
    return scala213_hashmap_order(tps, lambda tp: topic_partition_hash(*tp))


def test_scala213_hashmap_order_of_topic_partitions_worked_by_hand():
    """t-p hashes to 1077 + 31p ("t".hashCode() = 116); see tests/kafka_sim/test_reassignment_order.py."""
    assert topic_partition_hash("t", 0) == 1077 and topic_partition_hash("a", 1) == 1089
    assert _tp_order([("t", p) for p in range(4)]) == [("t", 3), ("t", 2), ("t", 1), ("t", 0)]
    # 11 keys: 16 buckets (p5 in bucket 0 first, p6 wraps to bucket 15); 12 keys: 32 buckets
    assert _tp_order([("t", p) for p in range(11)]) == [("t", p) for p in (5, 4, 3, 2, 1, 0, 10, 9, 8, 7, 6)]
    assert _tp_order([("t", p) for p in range(12)]) == [("t", p) for p in range(11, -1, -1)]
    # a shared bucket is ordered by hash, not by insertion (t-0: 1077, t-16: 1573, both bucket 5)
    assert _tp_order([("t", 16), ("t", 0)]) == [("t", 0), ("t", 16)]


def test_scala213_ties_compare_improved_hashes_as_signed_ints():
    # "polygenelubricants" hashes to Integer.MIN_VALUE; a negative improved hash sorts first
    neg, pos = "polygenelubricants", "a"
    h = {neg: java_string_hash(neg), pos: 16 * 2 ** 20}   # both bucket 0 of 16
    assert spread(h[neg]) & 15 == spread(h[pos]) & 15 == 0
    assert scala213_hashmap_order([pos, neg], h.__getitem__) == [neg, pos]


@given(st.lists(st.tuples(st.text(max_size=6), st.integers(0, 5000)), max_size=60))
def test_scala213_order_is_a_permutation_by_ascending_bucket(tps):
    order = _tp_order(tps)
    assert sorted(order) == sorted(set(tps))


@given(st.lists(st.text(max_size=12), max_size=40))
def test_orders_are_permutations_of_the_distinct_keys(keys):
    distinct = list(dict.fromkeys(keys))
    for order in (java_hashmap_order(keys), java8_properties_order(keys), java11_properties_order(keys)):
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
    # kafka-configs.sh prints its Properties' order: on Java 9+ (what runs 2.4.1's tools today) a
    # ConcurrentHashMap's; Java 8's Hashtable printed segment.bytes,cleanup.policy,compression.type
    assert capsys.readouterr().out == ("Configs for topic '__consumer_offsets' are compression.type=producer,"
                                       "cleanup.policy=compact,segment.bytes=104857600\n")


def test_cli_refuses_min_isr_filters_with_zookeeper_as_kafka_2_4(zk, zk_connect, capsys):
    _offsets_topic(zk)
    before = tree(zk)
    for flag in ("under-min-isr-partitions", "at-min-isr-partitions"):
        assert main(["topics", "--zookeeper", zk_connect, "--describe", f"--{flag}"]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f'Error: Option "[{flag}]" can\'t be used with option "[zookeeper]"')
    assert tree(zk) == before


#: what a Java 17 JVM printed for these puts (PROPS_ORDER_JAVA below), Java 9+'s Properties
JAVA11_VECTORS = [
    (["cleanup.policy", "segment.bytes", "compression.type"], ["compression.type", "cleanup.policy", "segment.bytes"]),
    (["retention.ms", "cleanup.policy"], ["cleanup.policy", "retention.ms"]),
    (["retention.ms", "cleanup.policy", "min.insync.replicas", "max.message.bytes"],
     ["cleanup.policy", "max.message.bytes", "min.insync.replicas", "retention.ms"]),
]
PROPS_ORDER_JAVA = """
import java.util.*;
public class PropsOrder {
    public static void main(String[] a) throws Exception {
        java.io.BufferedReader r = new java.io.BufferedReader(new java.io.InputStreamReader(System.in, "UTF-8"));
        String line;
        while ((line = r.readLine()) != null) {
            Properties p = new Properties();
            for (String k : line.split(" ")) if (!k.isEmpty()) p.setProperty(k, "v");
            StringBuilder sb = new StringBuilder();
            for (Map.Entry<Object, Object> e : p.entrySet()) { if (sb.length() > 0) sb.append(' '); sb.append(e.getKey()); }
            System.out.println(sb);
        }
    }
}
"""


@pytest.mark.parametrize("keys, printed", JAVA11_VECTORS)
def test_java11_properties_order_is_what_the_jvm_printed(keys, printed):
    assert java11_properties_order(keys) == printed


@pytest.mark.skipif(shutil.which("javac") is None, reason="no JDK on this machine")
def test_java11_properties_order_matches_this_machines_jvm_through_resizes_and_shared_bins(tmp_path):
    (tmp_path / "PropsOrder.java").write_text(PROPS_ORDER_JAVA)
    subprocess.run(["javac", "PropsOrder.java"], cwd=tmp_path, check=True, timeout=120)
    rng = random.Random(27)
    names = ["cleanup.policy", "compression.type", "delete.retention.ms", "max.message.bytes", "min.insync.replicas",
             "retention.bytes", "retention.ms", "segment.bytes", "segment.ms", "unclean.leader.election.enable",
             "Aa", "BB", "AaAa", "BBBB", "AaBB", "BBAa"]            # the last six share hashes
    cases = [rng.sample(names + [f"k{rng.randrange(10 ** 6)}" for _ in range(50)], rng.randint(1, 50))
             for _ in range(400)]
    out = subprocess.run(["java", "-cp", str(tmp_path), "PropsOrder"], input="".join(" ".join(c) + "\n" for c in cases),
                         capture_output=True, text=True, check=True, timeout=120).stdout.splitlines()
    assert len(out) == len(cases)
    for keys, printed in zip(cases, out):
        assert java11_properties_order(keys) == printed.split(" "), keys
