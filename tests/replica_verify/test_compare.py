"""The pure comparison: identical replicas agree up to the lowest high watermark; a diverged
record is named by partition, offset, replicas and field, in Kafka 2.4.1's line shapes;
corrupt replicas (damaged bytes in every codec, garbled headers) are named, never raised."""

import struct

import pytest
from hypothesis import given, settings, strategies as st

from kafka_sim.wire.records import BATCH_RECORDS, read_log
from replica_verify.compare import Mismatch, ReplicaData, compare_partition


def _data(replica, end, hw=None, corrupt=frozenset(), start=0, seed=0):
    return ReplicaData(replica, end if hw is None else hw, read_log(seed, "t", 0, start, end, 1 << 30, corrupt))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=6), min_size=1, max_size=4))
def test_identical_replicas_agree_up_to_the_lowest_high_watermark(ends_in_batches):
    replicas = [_data(i, n * BATCH_RECORDS) for i, n in enumerate(ends_in_batches)]
    result = compare_partition("t-0", 0, replicas)
    assert not result.mismatches and result.aligned
    assert result.next_offset == min(ends_in_batches) * BATCH_RECORDS
    assert result.lag == (max(ends_in_batches) - min(ends_in_batches)) * BATCH_RECORDS


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=0, max_value=4 * BATCH_RECORDS - 1), st.integers(min_value=1, max_value=2))
def test_a_diverged_record_is_named_by_offset_and_replicas(offset, bad):
    replicas = [_data(r, 4 * BATCH_RECORDS, corrupt=frozenset({offset}) if r == bad else frozenset())
                for r in range(3)]
    result = compare_partition("t-0", 0, replicas)
    kinds = {(m.kind, m.offset, m.replica, m.other) for m in result.mismatches}
    batch_last = offset // BATCH_RECORDS * BATCH_RECORDS + BATCH_RECORDS - 1
    assert kinds == {("checksum", batch_last, 0, bad), ("record", offset, 0, bad)}
    assert result.next_offset == 4 * BATCH_RECORDS      # the verification goes on past it
    record = next(m for m in result.mismatches if m.kind == "record")
    assert record.detail == "value"


def test_lines_are_kafka_2_4_1s():
    assert Mismatch("checksum", "t-0", 15, 1, 2, 11, 22).line("S") == \
        "S: partition t-0 has unmatched checksum at offset 15; replica 1's checksum 11; replica 2's checksum 22"
    assert Mismatch("offset", "t-0", 15, 1, 2, 15, 31).line("S") == \
        "S: partition t-0: replica 1's offset 15 doesn't match replica 2's offset 31"


def test_misaligned_replicas_stop_the_partition_with_an_offset_mismatch():
    a = _data(0, 2 * BATCH_RECORDS)
    b = ReplicaData(1, 2 * BATCH_RECORDS, read_log(0, "t", 0, BATCH_RECORDS, 2 * BATCH_RECORDS, 1 << 30))
    result = compare_partition("t-0", 0, [a, b])
    assert not result.aligned and [m.kind for m in result.mismatches] == ["offset"]
    assert result.next_offset == 0


def test_a_corrupted_byte_fails_the_crc_check():
    raw = bytearray(read_log(0, "t", 0, 0, BATCH_RECORDS, 1 << 30))
    raw[-3] ^= 0xFF
    result = compare_partition("t-0", 0, [_data(0, BATCH_RECORDS), ReplicaData(1, BATCH_RECORDS, bytes(raw))])
    assert {m.kind for m in result.mismatches} == {"crc", "record"}


def test_an_out_of_range_replica_verifies_nothing():
    result = compare_partition("t-0", 32, [_data(0, 64), ReplicaData(1, 16, b"", out_of_range=True)])
    assert result.next_offset == 32 and not result.mismatches and result.max_hw == 64


def _codec_data(replica, end, codec, damaged=frozenset()):
    return ReplicaData(replica, end, read_log(0, "t", 0, 0, end, 1 << 30, compression=codec, damaged=damaged))


@pytest.mark.parametrize("codec, kinds", [
    ("none", {"crc", "corrupt"}),         # the flipped bytes break a record's structure
    ("gzip", {"crc", "corrupt"}),          # gzip's own CRC fails
    ("snappy", {"crc", "corrupt"}),
    ("lz4", {"crc", "corrupt"}),
    ("zstd", {"crc", "record"}),           # zstd decodes the flipped bytes to other values
])
def test_damaged_bytes_in_any_codec_are_named_and_the_partition_goes_on(codec, kinds):
    bad = frozenset({(BATCH_RECORDS + 3, "bytes")})
    replicas = [_codec_data(r, 4 * BATCH_RECORDS, codec, bad if r == 2 else frozenset()) for r in range(3)]
    result = compare_partition("t-0", 0, replicas)
    assert {m.kind for m in result.mismatches} == kinds
    assert all(m.other == 2 and BATCH_RECORDS <= m.offset < 2 * BATCH_RECORDS for m in result.mismatches)
    assert result.aligned and result.next_offset == 4 * BATCH_RECORDS
    corrupt = [m for m in result.mismatches if m.kind == "corrupt"]
    name = "uncompressed" if codec == "none" else codec
    assert all(m.offset == BATCH_RECORDS and f"{name} batch's records cannot be read" in m.detail for m in corrupt)


@pytest.mark.parametrize("codec", ["none", "gzip", "zstd"])
@pytest.mark.parametrize("bad", [0, 2])
def test_a_garbled_batch_header_is_corrupt_at_its_offset_and_stops_the_partition(codec, bad):
    garbled = frozenset({(2 * BATCH_RECORDS, "header")})
    replicas = [_codec_data(r, 4 * BATCH_RECORDS, codec, garbled if r == bad else frozenset()) for r in range(3)]
    result = compare_partition("t-0", 0, replicas)
    assert [(m.kind, m.offset, m.other) for m in result.mismatches] == [("corrupt", 2 * BATCH_RECORDS, bad)]
    assert "runs past the end of the replica's log" in result.mismatches[0].detail
    assert not result.aligned and result.next_offset == 2 * BATCH_RECORDS
    line = result.mismatches[0].line("S")
    assert line.startswith(f"S: partition t-0: replica {bad}'s data at offset {2 * BATCH_RECORDS} is corrupt: ")


def test_a_batch_cut_by_the_fetch_size_is_not_corrupt():
    data = read_log(0, "t", 0, 0, 2 * BATCH_RECORDS, 1 << 30)
    cut = data[:len(data) - 100]
    replicas = [ReplicaData(r, 2 * BATCH_RECORDS, cut, complete=False) for r in range(2)]
    result = compare_partition("t-0", 0, replicas)
    assert not result.mismatches and result.aligned and result.next_offset == BATCH_RECORDS


def test_a_header_too_short_or_with_an_unknown_magic_is_corrupt():
    data = bytearray(read_log(0, "t", 0, 0, 2 * BATCH_RECORDS, 1 << 30))
    second = len(read_log(0, "t", 0, 0, BATCH_RECORDS, 1 << 30))
    short, magic = bytearray(data), bytearray(data)
    struct.pack_into(">i", short, second + 8, 20)
    magic[second + 16] = 7
    for raw, why in ((short, "less than the batch header"), (magic, "magic byte 7")):
        result = compare_partition("t-0", 0, [_data(0, 2 * BATCH_RECORDS), ReplicaData(1, 2 * BATCH_RECORDS, bytes(raw))])
        assert [(m.kind, m.offset, m.other) for m in result.mismatches] == [("corrupt", BATCH_RECORDS, 1)]
        assert why in result.mismatches[0].detail


def test_a_broker_answering_corrupt_message_names_the_replica():
    result = compare_partition("t-0", 16, [_data(0, 32), ReplicaData(1, 32, b"", unreadable="CORRUPT_MESSAGE")])
    assert [(m.kind, m.offset, m.other, m.detail) for m in result.mismatches] == [("corrupt", 16, 1, "CORRUPT_MESSAGE")]
    assert not result.aligned
