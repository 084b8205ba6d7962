"""kafka-log-dirs.sh output: the size rule (max over non-future replicas) and every refusal."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidPayload
from kafka_zk.log_dirs import encode_log_dirs, log_dirs_columns, parse_log_dirs, split_partition_name

TP = TopicPartition
STATUS = "Querying brokers for log directories information\nReceived log directory information from brokers 1,2\n"


def doc(brokers: list) -> str:
    return STATUS + json.dumps({"version": 1, "brokers": brokers}) + "\n"


def entry(name: str, size, future: bool = False) -> dict:
    return {"partition": name, "size": size, "offsetLag": 0, "isFuture": future}


def test_size_is_the_largest_non_future_replica_and_offline_dirs_are_skipped() -> None:
    text = doc([
        {"broker": 1, "logDirs": [
            {"logDir": "/a", "error": None, "partitions": [entry("orders-0", 100), entry("my-topic-12", 7)]},
            {"logDir": "/b", "error": "KafkaStorageException", "partitions": [entry("orders-0", 10 ** 9)]}]},
        {"broker": 2, "logDirs": [
            {"logDir": "/a", "error": None, "partitions": [entry("orders-0", 120), entry("orders-1", 5),
                                                           entry("orders-1", 900, future=True)]}]}])
    assert parse_log_dirs(text) == {TP("my-topic", 12): 7, TP("orders", 0): 120, TP("orders", 1): 5}
    assert list(parse_log_dirs(text)) == sorted(parse_log_dirs(text))


def test_pretty_printed_document_and_names_with_leading_zeros() -> None:
    pretty = STATUS + json.dumps({"brokers": [{"broker": 1, "logDirs": [{"logDir": "/a", "error": None,
                                                                        "partitions": [entry("t-01", 9), entry("t-1", 4),
                                                                                       entry("u-0", 0)]}]}],
                                  "version": 1}, indent=2) + "\nsome trailing tool noise\n"
    cols = log_dirs_columns(pretty)
    assert dict(cols.items()) == {TP("t", 1): 9, TP("u", 0): 0}
    assert split_partition_name("a-b-c-3") == TP("a-b-c", 3)


@pytest.mark.parametrize("text,fragment", [
    ("", "no JSON document found"),
    ("Error while executing: broker not available\n", "no JSON document found"),
    (STATUS + '{"version":1,"brokers":[{"broker":1,"logDirs":[', "does not parse"),
    (STATUS + '{"version":1}\n', "'brokers' must be a list"),
    (STATUS + '{"version":1,"brokers":{"1":2}}\n', "'brokers' must be a list"),
    (doc([{"broker": 1}]), "lacks a 'logDirs' list"),
    (doc([7]), "lacks a 'logDirs' list"),
    (doc([{"broker": 1, "logDirs": [{"logDir": "/a", "error": None, "partitions": [{"partition": "t-0"}]}]}]),
     "needs partition and size"),
    (doc([{"broker": 1, "logDirs": [{"logDir": "/a", "error": None, "partitions": [entry("nodash", 1)]}]}]),
     "is not <topic>-<partition>"),
    (doc([{"broker": 1, "logDirs": [{"logDir": "/a", "error": None, "partitions": [entry("t-x", 1)]}]}]),
     "is not <topic>-<partition>"),
    (doc([{"broker": 1, "logDirs": [{"logDir": "/a", "error": None, "partitions": [entry("t-0", "big")]}]}]),
     "size that is not an integer"),
    (doc([{"broker": 1, "logDirs": [{"logDir": "/a", "error": None, "partitions": 3}]}]), "is not a list"),
    ('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}', "'brokers' must be a list"),
])
def test_bad_output_is_refused_naming_the_tool(text: str, fragment: str) -> None:
    with pytest.raises(InvalidPayload, match=fragment) as err:
        parse_log_dirs(text)
    if "partition name" not in str(err.value) and "needs partition" not in str(err.value):
        assert "kafka-log-dirs.sh" in str(err.value)


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.integers(1, 6), st.dictionaries(
    st.tuples(st.sampled_from(["a", "b-c", "d.e_f"]), st.integers(0, 30)), st.integers(0, 10 ** 12), max_size=12),
    max_size=6))
def test_encoded_output_parses_to_the_max_over_brokers(replicas: dict) -> None:
    per_broker = {b: {TP(*k): s for k, s in parts.items()} for b, parts in replicas.items()}
    expected: dict[TP, int] = {}
    for parts in per_broker.values():
        for tp, s in parts.items():
            expected[tp] = max(s, expected.get(tp, -1))
    assert parse_log_dirs(encode_log_dirs(per_broker)) == dict(sorted(expected.items()))


_names = st.sampled_from(["a-0", "a-1", "b.c-0", "b.c-10", "x-y-3"])
_entries = st.builds(lambda n, s, f: entry(n, s, f), _names, st.integers(0, 2**62), st.booleans())
_dirs = st.fixed_dictionaries({"logDir": st.just("/d"), "error": st.sampled_from([None, None, "KafkaStorageException"]),
                               "partitions": st.lists(_entries, max_size=6)})
_brokers = st.lists(st.fixed_dictionaries({"broker": st.integers(0, 9), "logDirs": st.lists(_dirs, max_size=3)}),
                    max_size=4)


@given(_brokers)
@settings(max_examples=150)
def test_the_typed_one_pass_decode_gives_what_the_entry_by_entry_decode_gives(brokers: list) -> None:
    from kafka_zk.log_dirs import _broker_entries, _typed_best, max_replica_sizes

    text = doc(brokers)
    assert _typed_best(text) is not None
    assert _typed_best(text) == max_replica_sizes(_broker_entries(text))
    assert _typed_best(text.encode()) == _typed_best(text)          # the file's bytes, decoded in place


def test_a_document_not_plainly_typed_goes_the_stdlib_way_with_the_same_rule() -> None:
    from kafka_zk.log_dirs import _typed_best

    text = doc([{"broker": 1, "logDirs": [{"logDir": "/d", "error": None,
                                           "partitions": [entry("t-0", "12"), entry("t-1", 5)]}]}])
    assert _typed_best(text) is None                    # a size as a string is not what the tool prints
    assert dict(log_dirs_columns(text).items()) == {TP("t", 0): 12, TP("t", 1): 5}
    assert _typed_best(doc([]) + "trailing words\n") is None
    assert len(log_dirs_columns(doc([]) + "trailing words\n")) == 0
