"""Reading one replica's fetched bytes as v2 record batches, defensively: the framing (base
offset, length, magic) as Kafka's ``ByteBufferLogInputStream`` checks it, and the records
(decompressed with the batch's codec) as its ``DefaultRecordBatch`` iterates them — but a
damaged batch becomes a value naming what is wrong, never an exception, so one corrupt replica
is reported (topic, partition, replica, offset) and the other partitions go on being checked.

What is corrupt:
- a batch whose length is below the v2 batch header size (49 bytes after the length field);
- a batch whose length runs past the data when the broker returned less than the fetch size
  asked (the data then ends where the replica's log ends, so nothing cut it short: its header
  is garbled); when the data fills the fetch size, a cut batch is only the size limit;
- a magic byte other than 0, 1 or 2;
- records that cannot be decompressed or parsed (gzip CRC, snappy, LZ4 or zstd errors, a record
  structure that does not add up, an unknown codec).

Failure: :class:`replica_verify.errors.VerifyError` when the batches are in message format v0/v1
(magic 0 or 1: brokers with ``log.message.format.version`` < 0.11), which this tool does not
compare, or when the library for a codec is missing (the message names the package).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterator

from kafka import codec as _codec
from kafka.errors import UnsupportedCodecError
from kafka.record.default_records import DefaultRecord, DefaultRecordBatch

from replica_verify.errors import VerifyError

LOG_OVERHEAD = 12                                    # base offset + length
MIN_V2_LENGTH = DefaultRecordBatch.HEADER_STRUCT.size - LOG_OVERHEAD   # 49
_MAGIC_AT = 16
CODEC_NAMES = {0: "uncompressed", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_CODEC_LIBRARIES = {1: (_codec.has_gzip, "gzip"), 2: (_codec.has_snappy, "python-snappy"),
                    3: (_codec.has_lz4, "lz4"), 4: (_codec.has_zstd, "zstandard")}


@dataclass(frozen=True)
class CorruptBatch:
    """Where a replica's data stops being readable, and why."""

    reason: str


def read_batches(data: bytes, complete: bool) -> Iterator[DefaultRecordBatch | CorruptBatch]:
    """The batches of ``data`` in order; a :class:`CorruptBatch` ends the iteration when the
    framing is broken. ``complete``: the broker returned less than the fetch size asked (see the
    module docstring)."""
    pos, end, view = 0, len(data), memoryview(data)
    while True:
        remaining = end - pos
        if remaining < LOG_OVERHEAD:
            if remaining and complete:
                yield CorruptBatch(f"the data ends {remaining} bytes into a batch header")
            return
        length = struct.unpack_from(">i", data, pos + 8)[0]
        if length < MIN_V2_LENGTH:
            magic = data[pos + _MAGIC_AT] if remaining > _MAGIC_AT else None
            if magic in (0, 1) and length >= 14:
                _legacy(magic)
            yield CorruptBatch(f"its batch length {length} is less than the batch header "
                               f"({MIN_V2_LENGTH} bytes)")
            return
        if LOG_OVERHEAD + length > remaining:
            if complete:
                yield CorruptBatch(f"its batch length {length} runs past the end of the replica's log "
                                   f"({remaining - LOG_OVERHEAD} bytes follow the length field): "
                                   "a garbled batch header")
            return
        magic = struct.unpack_from(">b", data, pos + _MAGIC_AT)[0]
        if magic in (0, 1):
            _legacy(magic)
        if magic != 2:
            yield CorruptBatch(f"its batch has magic byte {magic} (0, 1 or 2 expected): a garbled batch header")
            return
        yield DefaultRecordBatch(view[pos:pos + LOG_OVERHEAD + length])
        pos += LOG_OVERHEAD + length


def codec_name(batch: DefaultRecordBatch) -> str:
    return CODEC_NAMES.get(batch.compression_type, f"codec {batch.compression_type}")


def decode_records(batch: DefaultRecordBatch) -> list[DefaultRecord] | CorruptBatch:
    """The batch's records (decompressed), or what makes them unreadable."""
    codec = batch.compression_type
    if codec in _CODEC_LIBRARIES and not _CODEC_LIBRARIES[codec][0]():
        raise VerifyError(f"the batch at offset {batch.base_offset} is {CODEC_NAMES[codec]}-compressed and "
                          f"the Python package {_CODEC_LIBRARIES[codec][1]!r} is missing; install it")
    try:
        return list(DefaultRecordBatch(bytes(batch._buffer)))
    except UnsupportedCodecError:
        return CorruptBatch(f"its batch names an unknown compression codec {codec}")
    except Exception as exc:  # noqa: BLE001 - any codec or parse failure on these bytes is corruption
        text = str(exc).strip() or type(exc).__name__
        return CorruptBatch(f"its {codec_name(batch)} batch's records cannot be read "
                            f"({type(exc).__name__}: {text})")


def _legacy(magic: int) -> None:
    raise VerifyError(f"a replica serves message format v{magic} (magic {magic}) batches; this tool "
                      "compares v2 record batches only (log.message.format.version 0.11 or later); "
                      "use Kafka's kafka-replica-verification.sh for this topic")
