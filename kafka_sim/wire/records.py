"""Deterministic partition data: the record batches an emulated replica serves.

The emulator accounts partition data in bytes (:mod:`kafka_sim.replication`); on the wire each
partition is a log of v2 record batches of :data:`BATCH_RECORDS` records, one record per
:data:`RECORD_BYTES` accounted bytes, so a replica holding ``n`` bytes holds
``offsets_for_bytes(n)`` records (whole batches only: Kafka replicates batches, not parts of
them). Keys, values and timestamps are functions of (seed, topic, partition, offset): every
replica builds the same batch (same bytes, same CRC32C) unless a fault marked one of its
records corrupt, in which case that replica's batch holds a different — valid — value and
hence a different CRC, as a diverged replica's would.

Batches are built with kafka-python's record builder (CRC32C by the ``crc32c`` extension) and
kept in a small LRU cache, so memory stays bounded however large the partitions are.

Failure: nothing here raises on valid offsets; callers keep offsets within the replica's log.
"""

from __future__ import annotations

import functools
import hashlib
import struct

from kafka.record.default_records import DefaultRecordBatchBuilder

BATCH_RECORDS = 16                  # records per batch
RECORD_BYTES = 1024                 # accounted bytes per record (replication model units)
VALUE_BYTES = 1000                  # actual value length on the wire
BATCH_BYTES = BATCH_RECORDS * RECORD_BYTES
BASE_TIMESTAMP_MS = 1_600_000_000_000   # offset 0's timestamp
TIMESTAMP_STEP_MS = 1000            # one record per second of create time
_CACHE_BATCHES = 1024               # ~17 MB of built batches at most


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
                corrupt: frozenset[int] = frozenset()) -> bytes:
    """Batch ``batch_index`` (offsets ``batch_index * BATCH_RECORDS`` onwards) of the
    partition; offsets in ``corrupt`` get another value."""
    base = batch_index * BATCH_RECORDS
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 30)
    for i in range(BATCH_RECORDS):
        off = base + i
        builder.append(i, timestamp=timestamp_of(off), key=record_key(topic, partition, off),
                       value=record_value(seed, topic, partition, off, off in corrupt), headers=[])
    buf = bytearray(builder.build())
    struct.pack_into(">q", buf, 0, base)         # base offset: outside the CRC, as in Kafka
    return bytes(buf)


def read_log(seed: int, topic: str, partition: int, fetch_offset: int, log_end: int,
             max_bytes: int, corrupt: frozenset[int] = frozenset(), min_one: bool = True) -> bytes:
    """Whole batches from the one holding ``fetch_offset`` up to ``log_end``, at most
    ``max_bytes``, except that with ``min_one`` the first batch is returned even when larger
    (KIP-74: a broker does so for the first partition of a response that has data)."""
    out: list[bytes] = []
    size = 0
    index = fetch_offset // BATCH_RECORDS
    while (index + 1) * BATCH_RECORDS <= log_end:
        lo = index * BATCH_RECORDS
        mine = frozenset(o for o in corrupt if lo <= o < lo + BATCH_RECORDS)
        batch = build_batch(seed, topic, partition, index, mine)
        if (out or not min_one) and size + len(batch) > max_bytes:
            break
        out.append(batch)
        size += len(batch)
        index += 1
    return b"".join(out)
