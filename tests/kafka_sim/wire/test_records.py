"""The emulator's deterministic record batches: same bytes for every replica, valid CRC32C,
whole batches, KIP-74 first-batch rule, a corrupt record changing only its own batch,
compressed batches (every codec) holding the same records, damaged bytes and headers."""

import pytest
from hypothesis import given, strategies as st
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecords

from kafka_sim.wire import records as r


def _batches(data: bytes) -> list[DefaultRecordBatch]:
    mr, out = MemoryRecords(data), []
    while (b := mr.next_batch()) is not None:
        out.append(b)
    return out


def test_batches_are_deterministic_valid_and_carry_their_offsets():
    data = r.read_log(7, "t", 3, 0, 3 * r.BATCH_RECORDS, 1 << 30)
    batches = _batches(data)
    assert [b.base_offset for b in batches] == [0, r.BATCH_RECORDS, 2 * r.BATCH_RECORDS]
    assert all(b.validate_crc() for b in batches)
    recs = list(DefaultRecordBatch(bytes(batches[1]._buffer)))
    assert recs[0].offset == r.BATCH_RECORDS and recs[0].key == r.record_key("t", 3, r.BATCH_RECORDS)
    assert recs[0].value == r.record_value(7, "t", 3, r.BATCH_RECORDS)
    assert r.read_log(7, "t", 3, 0, 3 * r.BATCH_RECORDS, 1 << 30) == data
    assert r.read_log(8, "t", 3, 0, 3 * r.BATCH_RECORDS, 1 << 30) != data      # the seed matters


def test_read_log_returns_whole_batches_within_max_bytes_but_always_one():
    two = len(r.build_batch(0, "t", 0, 0)) + len(r.build_batch(0, "t", 0, 1))
    assert len(_batches(r.read_log(0, "t", 0, 5, 10 * r.BATCH_RECORDS, 1))) == 1       # KIP-74
    assert len(_batches(r.read_log(0, "t", 0, 0, 10 * r.BATCH_RECORDS, two))) == 2
    assert len(_batches(r.read_log(0, "t", 0, 0, 10 * r.BATCH_RECORDS, two - 1))) == 1
    assert r.read_log(0, "t", 0, r.BATCH_RECORDS, r.BATCH_RECORDS, 1 << 20) == b""      # at the end
    assert _batches(r.read_log(0, "t", 0, 17, 10 * r.BATCH_RECORDS, 1))[0].base_offset == r.BATCH_RECORDS


def test_a_corrupt_record_changes_its_batch_crc_only():
    clean = _batches(r.read_log(1, "t", 0, 0, 3 * r.BATCH_RECORDS, 1 << 30))
    bad = _batches(r.read_log(1, "t", 0, 0, 3 * r.BATCH_RECORDS, 1 << 30, frozenset({r.BATCH_RECORDS + 2})))
    assert [a.crc == b.crc for a, b in zip(clean, bad)] == [True, False, True]
    assert bad[1].validate_crc()            # a diverged replica's batch is still a valid batch


@given(st.floats(min_value=0, max_value=1e15, allow_nan=False))
def test_log_end_is_whole_batches_of_the_bytes_held(nbytes):
    end = r.offsets_for_bytes(nbytes)
    assert end % r.BATCH_RECORDS == 0
    assert end * r.RECORD_BYTES <= nbytes < end * r.RECORD_BYTES + r.BATCH_BYTES


@given(st.integers(min_value=r.BASE_TIMESTAMP_MS - 10**9, max_value=r.BASE_TIMESTAMP_MS + 10**12))
def test_offset_for_timestamp_is_the_first_record_at_or_after_it(ts):
    off = r.offset_for_timestamp(ts)
    assert off >= 0 and r.timestamp_of(off) >= ts
    assert off == 0 or r.timestamp_of(off - 1) < ts


def test_without_min_one_a_batch_over_the_budget_is_not_returned():
    assert r.read_log(0, "t", 0, 0, 10 * r.BATCH_RECORDS, 1, min_one=False) == b""


@pytest.mark.parametrize("codec", sorted(r.CODECS))
def test_compressed_batches_are_deterministic_valid_and_hold_the_same_records(codec):
    plain = _batches(r.read_log(4, "t", 1, 0, 2 * r.BATCH_RECORDS, 1 << 30))
    data = r.read_log(4, "t", 1, 0, 2 * r.BATCH_RECORDS, 1 << 30, compression=codec)
    r.build_batch.cache_clear()             # built again from scratch: the same bytes
    assert r.read_log(4, "t", 1, 0, 2 * r.BATCH_RECORDS, 1 << 30, compression=codec) == data
    batches = _batches(data)
    assert [b.base_offset for b in batches] == [0, r.BATCH_RECORDS]
    assert all(b.validate_crc() and b.compression_type == r.CODECS[codec] for b in batches)
    for a, b in zip(plain, batches):
        got = [(x.offset, x.key, x.value, x.timestamp) for x in DefaultRecordBatch(bytes(b._buffer))]
        assert got == [(x.offset, x.key, x.value, x.timestamp) for x in DefaultRecordBatch(bytes(a._buffer))]


@pytest.mark.parametrize("codec", sorted(r.CODECS))
def test_damaged_bytes_fail_the_stored_crc_and_a_garbled_header_breaks_the_framing(codec):
    clean = r.read_log(2, "t", 0, 0, 3 * r.BATCH_RECORDS, 1 << 30, compression=codec)
    flipped = r.read_log(2, "t", 0, 0, 3 * r.BATCH_RECORDS, 1 << 30, compression=codec,
                         damaged=frozenset({(r.BATCH_RECORDS + 1, "bytes")}))
    assert len(flipped) == len(clean)
    a, b = _batches(clean), _batches(flipped)
    assert [x.crc == y.crc for x, y in zip(a, b)] == [True, True, True]     # the stored CRC is kept...
    assert [y.validate_crc() for y in b] == [True, False, True]             # ...and no longer matches
    garbled = r.read_log(2, "t", 0, 0, 3 * r.BATCH_RECORDS, 1 << 30, compression=codec,
                         damaged=frozenset({(r.BATCH_RECORDS + 1, "header")}))
    assert len(garbled) == len(clean) and len(_batches(garbled)) == 1       # nothing framed after it
    with pytest.raises(ValueError):
        r.damage(clean, "sideways")


def test_a_topics_compression_type_names_its_codec():
    assert [r.codec_for(v) for v in (None, "producer", "uncompressed", " GZIP ", "zstd")] == \
        ["none", "none", "none", "gzip", "zstd"]
    with pytest.raises(ValueError, match="compression.type 'brotli'"):
        r.codec_for("brotli")
