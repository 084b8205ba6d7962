"""The sizes.jsonl artifact: round trips, conversion from kafka-log-dirs output, form by content, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidPayload
from kafka_zk.log_dirs import encode_log_dirs, parse_log_dirs
from formats.sizes_file import (HEADER_LINE, convert_sizes, load_sizes, read_sizes_file, sizes_form,
                                 write_sizes_file)

TP = TopicPartition
REPLICAS = {1: {TP("orders", 0): 100, TP("orders", 1): 50, TP("we.ird_name-x", 3): 7},
            2: {TP("orders", 0): 120, TP("orders", 1): 40}, 3: {TP("orders", 1): 45}}


def test_conversion_reduces_to_one_line_per_partition_with_the_max(tmp_path: Path) -> None:
    raw = tmp_path / "log-dirs.txt"
    raw.write_text(encode_log_dirs(REPLICAS))
    out = tmp_path / "sizes.jsonl"
    assert convert_sizes(str(raw), str(out)) == 3
    lines = out.read_text().splitlines()
    assert lines[0] == HEADER_LINE and len(lines) == 4
    assert {json.loads(x)["topic"] + "-" + str(json.loads(x)["partition"]): json.loads(x)["size"]
            for x in lines[1:]} == {"orders-0": 120, "orders-1": 50, "we.ird_name-x-3": 7}
    assert read_sizes_file(str(out)) == parse_log_dirs(raw.read_text()) == load_sizes(str(out)) \
        == load_sizes(str(raw))


def test_the_form_is_told_by_content_not_by_name(tmp_path: Path) -> None:
    raw_named_jsonl = tmp_path / "sizes.jsonl"
    raw_named_jsonl.write_text(encode_log_dirs(REPLICAS))
    artifact_named_txt = tmp_path / "sizes.txt"
    convert_sizes(str(raw_named_jsonl), str(artifact_named_txt))
    bare_document = tmp_path / "bare.json"   # the JSON line alone, status lines cut off
    bare_document.write_text(encode_log_dirs(REPLICAS).splitlines()[-1])
    assert sizes_form(str(raw_named_jsonl)) == "log_dirs" == sizes_form(str(bare_document))
    assert sizes_form(str(artifact_named_txt)) == "partition_sizes"
    assert load_sizes(str(bare_document)) == load_sizes(str(artifact_named_txt)) == load_sizes(str(raw_named_jsonl))


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.tuples(st.text("abcXYZ09._-", min_size=1, max_size=12) | st.just("ünïcode \"q\""),
                                 st.integers(0, 10 ** 6)),
                       st.integers(-1, 2 ** 62), max_size=30))
def test_round_trip(tmp_path_factory, sizes: dict) -> None:
    path = tmp_path_factory.mktemp("rt") / "sizes.jsonl"
    sizes = {TP(*k): v for k, v in sizes.items()}
    assert write_sizes_file(sizes, str(path)) == len(sizes)
    assert read_sizes_file(str(path)) == sizes
    assert sizes_form(str(path)) == "partition_sizes"


@pytest.mark.parametrize("body,fragment", [
    ("", "no JSON document found"),
    ("just some text\n", "no JSON document found"),
    ('{"version":1,"partitions":[]}\n', "'brokers' must be a list"),
    ('{"topic":"t","partition":0,"size":1}\n', "'brokers' must be a list"),            # no header line
    (HEADER_LINE.replace('"version":1', '"version":9') + "\n", "format version 9 is not 1"),
    (HEADER_LINE + '\n{"topic":"t","partition":0,"size":1}\n{"topic":"t","partition":0}\n', "line 3"),
    (HEADER_LINE + '\n{"topic":"t","partition":-1,"size":1}\n', "line 2"),
    (HEADER_LINE + '\n{"topic":"t","partition":0,"size":"12"}\n', "line 2"),
    (HEADER_LINE + '\nnot json\n', "line 2: not JSON"),
    (HEADER_LINE + '\n' + HEADER_LINE + '\n', "line 2"),
    (HEADER_LINE + '\n{"topic":"t","partition":0,"size":1}\n{"topic":"t","partition":0,"size":2}\n',
     "partition t-0 appears twice"),
])
def test_a_file_in_neither_form_is_refused_naming_it_and_nothing_is_written(tmp_path: Path, body: str,
                                                                           fragment: str) -> None:
    src = tmp_path / "given.txt"
    src.write_text(body)
    dst = tmp_path / "out" / "sizes.jsonl"
    dst.parent.mkdir()
    with pytest.raises(InvalidPayload, match=fragment) as err:
        convert_sizes(str(src), str(dst))
    assert str(src) in str(err.value)
    assert "kafka-log-dirs" in str(err.value)
    assert list(dst.parent.iterdir()) == []


def test_a_missing_file_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(InvalidPayload, match=r"sizes file .*nope: cannot open"):
        load_sizes(str(tmp_path / "nope"))


def test_log_dirs_output_that_is_not_utf8_is_refused_naming_the_file(tmp_path) -> None:
    from kafka_zk.errors import InvalidPayload
    from formats.sizes_file import log_dirs_file_columns

    bad = tmp_path / "log-dirs.txt"
    bad.write_bytes(b'{"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/d","error":null,'
                    b'"partitions":[{"partition":"t\xff-0","size":1,"offsetLag":0,"isFuture":false}]}]}]}\n')
    with pytest.raises(InvalidPayload, match=f"sizes file {bad}: not UTF-8 text"):
        log_dirs_file_columns(str(bad))
