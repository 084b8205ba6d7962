"""Deterministic partition data: the record batches an emulated replica serves.

The emulator accounts partition data in bytes (:mod:`kafka_sim.replication`); on the wire each
partition is a log of v2 record batches of :data:`BATCH_RECORDS` records, one record per
:data:`RECORD_BYTES` accounted bytes, so a replica holding ``n`` bytes holds
``offsets_for_bytes(n)`` records (whole batches only: Kafka replicates batches, not parts of
them). Keys, values and timestamps are functions of (seed, topic, partition, offset): every
replica builds the same batch (same bytes, same CRC32C) unless a fault marked one of its
records corrupt, in which case that replica's batch holds a different — valid — value and
hence a different CRC, as a diverged replica's would.

Compression follows the topic's ``compression.type`` (gzip, snappy, lz4, zstd; ``producer`` and
``uncompressed`` serve uncompressed batches): the records section is compressed as Kafka's
producers do (gzip with a zero mtime, snappy in xerial framing, an LZ4 frame, a zstd frame), so
every replica's bytes are the same. Two kinds of damage model a replica's bytes going bad on
disk after the batch was written (:func:`damage`): ``bytes`` flips bytes inside the records
section (the stored CRC no longer matches; a compressed section no longer decompresses), and
``header`` garbles the batch's length field (the framing is lost: the batch claims more bytes
than the log holds).

Batches are built with kafka-python's record builder (CRC32C by the ``crc32c`` extension) and
kept in a small LRU cache, so memory stays bounded however large the partitions are.

Failure: an unknown codec or damage kind raises ValueError; nothing else here raises on valid
offsets; callers keep offsets within the replica's log.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import struct

from crc32c import crc32c
from kafka import codec as _codec
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

BATCH_RECORDS = 16                  # records per batch
RECORD_BYTES = 1024                 # accounted bytes per record (replication model units)
VALUE_BYTES = 1000                  # actual value length on the wire
BATCH_BYTES = BATCH_RECORDS * RECORD_BYTES
BASE_TIMESTAMP_MS = 1_600_000_000_000   # offset 0's timestamp
TIMESTAMP_STEP_MS = 1000            # one record per second of create time
_CACHE_BATCHES = 1024               # ~17 MB of built batches at most
#: the codecs a v2 batch's attributes name (the low 3 bits)
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
#: what ``corrupt_record`` can do to a replica's batch: another valid value, bytes flipped
#: inside the records section, or the batch's length field garbled
CORRUPTIONS = ("value", "bytes", "header")
_HEADER = DefaultRecordBatch.HEADER_STRUCT.size          # 61: records start here
_ATTRIBUTES = DefaultRecordBatch.ATTRIBUTES_OFFSET
_CRC = DefaultRecordBatch.CRC_OFFSET


def codec_for(compression_type: str | None) -> str:
    """The codec a topic's ``compression.type`` makes its batches use (``producer``: the
    emulator's producers send uncompressed batches)."""
    value = (compression_type or "producer").strip().lower()
    if value in ("producer", "uncompressed", "none"):
        return "none"
    if value not in CODECS:
        raise ValueError(f"compression.type {compression_type!r} is not one of "
                         "uncompressed, gzip, snappy, lz4, zstd, producer")
    return value


def offsets_for_bytes(nbytes: float) -> int:
    """Log end offset of a replica holding ``nbytes`` accounted bytes (whole batches)."""
    return int(max(0.0, nbytes) // BATCH_BYTES) * BATCH_RECORDS


def timestamp_of(offset: int) -> int:
    """Create time (ms) of the record at ``offset``."""
    return BASE_TIMESTAMP_MS + offset * TIMESTAMP_STEP_MS


def offset_for_timestamp(timestamp_ms: int) -> int:
    """First offset whose timestamp is ≥ ``timestamp_ms`` (may be past the log end)."""
    if timestamp_ms <= BASE_TIMESTAMP_MS:
        return 0
    return -(-(timestamp_ms - BASE_TIMESTAMP_MS) // TIMESTAMP_STEP_MS)


def record_key(topic: str, partition: int, offset: int) -> bytes:
    return f"{topic}:{partition}:{offset}".encode()


def record_value(seed: int, topic: str, partition: int, offset: int, corrupt: bool = False) -> bytes:
    """:data:`VALUE_BYTES` bytes derived from (seed, topic, partition, offset); another value
    when ``corrupt``."""
    tag = b"corrupt:" if corrupt else b""
    block = hashlib.blake2b(tag + f"{seed}:{topic}:{partition}:{offset}".encode(), digest_size=64).digest()
    return (block * (VALUE_BYTES // 64 + 1))[:VALUE_BYTES]


@functools.lru_cache(maxsize=_CACHE_BATCHES)
def build_batch(seed: int, topic: str, partition: int, batch_index: int,
                corrupt: frozenset[int] = frozenset(), compression: str = "none") -> bytes:
    """Batch ``batch_index`` (offsets ``batch_index * BATCH_RECORDS`` onwards) of the
    partition, compressed with ``compression``; offsets in ``corrupt`` get another value."""
    base = batch_index * BATCH_RECORDS
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 30)
    for i in range(BATCH_RECORDS):
        off = base + i
        builder.append(i, timestamp=timestamp_of(off), key=record_key(topic, partition, off),
                       value=record_value(seed, topic, partition, off, off in corrupt), headers=[])
    buf = bytearray(builder.build())
    if compression != "none":
        buf = _compressed(buf, compression)
    struct.pack_into(">q", buf, 0, base)         # base offset: outside the CRC, as in Kafka
    return bytes(buf)


def _compressed(batch: bytearray, compression: str) -> bytearray:
    """``batch`` (uncompressed) with its records section compressed: codec bits in the
    attributes, length and CRC32C recomputed, as a producer's compressed batch."""
    records = bytes(batch[_HEADER:])
    if compression == "gzip":
        packed = gzip.compress(records, compresslevel=6, mtime=0)
    elif compression == "snappy":
        packed = _codec.snappy_encode(records)
    elif compression == "lz4":
        packed = _codec.lz4_encode(records)
    elif compression == "zstd":
        packed = _codec.zstd_encode(records)
    else:
        raise ValueError(f"unknown codec {compression!r}; one of {sorted(CODECS)}")
    out = bytearray(batch[:_HEADER]) + packed
    attributes = struct.unpack_from(">h", out, _ATTRIBUTES)[0]
    struct.pack_into(">h", out, _ATTRIBUTES, (attributes & ~0x07) | CODECS[compression])
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">I", out, _CRC, crc32c(bytes(out[_ATTRIBUTES:])))
    return out


def damage(batch: bytes, how: str) -> bytes:
    """``batch`` as a replica whose disk went bad serves it: ``bytes`` flips four bytes in the
    middle of the records section (the stored CRC is left as it was), ``header`` garbles the
    length field (XOR 0x5A5A5A5A: the batch claims ~1.5 GB)."""
    buf = bytearray(batch)
    if how == "bytes":
        mid = _HEADER + (len(buf) - _HEADER) // 2
        for i in range(mid, min(mid + 4, len(buf))):
            buf[i] ^= 0xFF
    elif how == "header":
        length = struct.unpack_from(">i", buf, 8)[0]
        struct.pack_into(">i", buf, 8, length ^ 0x5A5A5A5A)
    else:
        raise ValueError(f"unknown damage {how!r}; one of bytes, header")
    return bytes(buf)


def read_log(seed: int, topic: str, partition: int, fetch_offset: int, log_end: int,
             max_bytes: int, corrupt: frozenset[int] = frozenset(), min_one: bool = True,
             compression: str = "none", damaged: frozenset[tuple[int, str]] = frozenset()) -> bytes:
    """Whole batches from the one holding ``fetch_offset`` up to ``log_end``, at most
    ``max_bytes``, except that with ``min_one`` the first batch is returned even when larger
    (KIP-74: a broker does so for the first partition of a response that has data). The batch
    holding an offset of ``damaged`` (offset, kind) pairs is served damaged (:func:`damage`)."""
    out: list[bytes] = []
    size = 0
    index = fetch_offset // BATCH_RECORDS
    while (index + 1) * BATCH_RECORDS <= log_end:
        lo = index * BATCH_RECORDS
        mine = frozenset(o for o in corrupt if lo <= o < lo + BATCH_RECORDS)
        batch = build_batch(seed, topic, partition, index, mine, compression)
        for how in sorted({h for o, h in damaged if lo <= o < lo + BATCH_RECORDS}):
            batch = damage(batch, how)
        if (out or not min_one) and size + len(batch) > max_bytes:
            break
        out.append(batch)
        size += len(batch)
        index += 1
    return b"".join(out)
