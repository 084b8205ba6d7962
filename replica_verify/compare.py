"""Pure comparison of one partition's fetched data across its replicas, as Kafka 2.4.1's
ReplicaVerificationTool does it, plus the records themselves.

The replicas' batches are walked in step, one batch from each at a time, up to each replica's
high watermark. Batches must end at the same offset (else "offset doesn't match": the replicas
cannot be aligned and this partition's verification stops) and carry the same CRC (else
"unmatched checksum"); beyond the original, each batch's CRC is checked against its bytes, and
the bytes the CRC covers (attributes, timestamps, producer fields, every record's offset delta,
timestamp, key, value and headers) are compared, so a mismatch also names the first offset
whose record differs and in what. Memory: the fetched bytes of one partition, nothing kept.

A replica whose bytes cannot be read (:mod:`replica_verify.batches`: a garbled batch header, a
compressed batch that does not decompress, records that do not parse, or a broker answering
CORRUPT_MESSAGE) is a ``corrupt`` mismatch naming the replica and the offset; a broken framing
stops this partition's verification there (the replicas cannot be aligned past it), the
others are not affected.

Failure: none raised on data; every finding is a :class:`Mismatch` in the result (a v0/v1
message format or a missing codec library raise VerifyError, see :mod:`replica_verify.batches`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka.record.default_records import DefaultRecord, DefaultRecordBatch

from replica_verify.batches import CorruptBatch, decode_records, read_batches

_CRC_COVERED_FROM = DefaultRecordBatch.ATTRIBUTES_OFFSET


@dataclass(frozen=True)
class ReplicaData:
    """What one replica's broker returned for the partition."""

    replica: int
    high_watermark: int
    records: bytes
    out_of_range: bool = False      # the replica does not have the offset fetched yet
    complete: bool = True           # less than the fetch size came back: the data ends where the log does
    unreadable: str = ""            # the broker could not read its copy (e.g. CORRUPT_MESSAGE)


@dataclass(frozen=True)
class Mismatch:
    kind: str                       # "offset", "checksum", "crc", "record" or "corrupt"
    partition: str                  # "topic-partition", as Kafka prints it
    offset: int
    replica: int                    # the reference replica (first in order)
    other: int
    mine: object = None
    theirs: object = None
    detail: str = ""

    def line(self, stamp: str) -> str:
        """The line Kafka 2.4.1 prints (offset and checksum kinds), or ours for the others."""
        if self.kind == "offset":
            return (f"{stamp}: partition {self.partition}: replica {self.replica}'s offset {self.mine} "
                    f"doesn't match replica {self.other}'s offset {self.theirs}")
        if self.kind == "checksum":
            return (f"{stamp}: partition {self.partition} has unmatched checksum at offset {self.offset}; "
                    f"replica {self.replica}'s checksum {self.mine}; replica {self.other}'s checksum {self.theirs}")
        if self.kind == "corrupt":
            return (f"{stamp}: partition {self.partition}: replica {self.other}'s data at offset {self.offset} "
                    f"is corrupt: {self.detail}")
        if self.kind == "crc":
            return (f"{stamp}: partition {self.partition}: replica {self.other}'s batch ending at offset "
                    f"{self.offset} fails its CRC check (stored {self.theirs}, computed over its bytes differs)")
        return (f"{stamp}: partition {self.partition} has unmatched record at offset {self.offset}; "
                f"replica {self.replica} and replica {self.other} differ in {self.detail}")


@dataclass
class PartitionRound:
    """One round of one partition: how far the replicas agree now."""

    next_offset: int
    max_hw: int
    batches: int = 0
    records: int = 0
    bytes_compared: int = 0
    aligned: bool = True
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def lag(self) -> int:
        return max(0, self.max_hw - self.next_offset)


def _raw(batch: DefaultRecordBatch) -> memoryview:
    return memoryview(batch._buffer)


def compare_partition(partition: str, start_offset: int, replicas: list[ReplicaData]) -> PartitionRound:
    """Walk the replicas' batches in step from ``start_offset``; see the module docstring."""
    result = PartitionRound(start_offset, max((r.high_watermark for r in replicas), default=start_offset))
    if not replicas or any(r.out_of_range for r in replicas):
        return result
    first = replicas[0]
    unreadable = [r for r in replicas if r.unreadable]
    if unreadable:
        result.mismatches.extend(Mismatch("corrupt", partition, start_offset, first.replica, r.replica,
                                          detail=r.unreadable) for r in unreadable)
        result.aligned = False
        return result
    iters = [read_batches(r.records, r.complete) for r in replicas]
    while True:
        step: list[DefaultRecordBatch | CorruptBatch] = []
        for r, it in zip(replicas, iters):
            batch = next(it, None)
            if batch is None or (not isinstance(batch, CorruptBatch) and batch.last_offset >= r.high_watermark):
                return result
            step.append(batch)
        broken = [(r, b) for r, b in zip(replicas, step) if isinstance(b, CorruptBatch)]
        if broken:
            result.mismatches.extend(Mismatch("corrupt", partition, result.next_offset, first.replica, r.replica,
                                              detail=b.reason) for r, b in broken)
            result.aligned = False
            return result
        batches: list[DefaultRecordBatch] = step      # type: ignore[assignment]
        ref = batches[0]
        for r, batch in zip(replicas, batches):
            if not batch.validate_crc():
                result.mismatches.append(Mismatch("crc", partition, batch.last_offset, first.replica, r.replica,
                                                  theirs=batch.crc))
        decoded: dict[int, list[DefaultRecord] | CorruptBatch] = {}

        def records(i: int) -> list[DefaultRecord] | CorruptBatch:
            if i not in decoded:
                decoded[i] = decode_records(batches[i])
                if isinstance(decoded[i], CorruptBatch):
                    result.mismatches.append(Mismatch("corrupt", partition, batches[i].base_offset, first.replica,
                                                      replicas[i].replica, detail=decoded[i].reason))
            return decoded[i]
        for i, (r, batch) in enumerate(zip(replicas[1:], batches[1:]), start=1):
            if batch.last_offset != ref.last_offset:
                result.mismatches.append(Mismatch("offset", partition, ref.last_offset, first.replica, r.replica,
                                                  mine=ref.last_offset, theirs=batch.last_offset))
                result.aligned = False
                return result
            if batch.crc != ref.crc:
                result.mismatches.append(Mismatch("checksum", partition, ref.last_offset, first.replica,
                                                  r.replica, mine=ref.crc, theirs=batch.crc))
            if batch.crc != ref.crc or _raw(batch)[_CRC_COVERED_FROM:] != _raw(ref)[_CRC_COVERED_FROM:]:
                mine, theirs = records(0), records(i)
                if isinstance(mine, CorruptBatch) or isinstance(theirs, CorruptBatch):
                    continue
                found = first_record_difference(mine, theirs, ref.base_offset)
                if found is not None:
                    result.mismatches.append(Mismatch("record", partition, found[0], first.replica,
                                                      r.replica, detail=found[1]))
        result.next_offset = ref.next_offset
        result.batches += 1
        result.records += ref.last_offset - ref.base_offset + 1
        result.bytes_compared += sum(len(_raw(b)) for b in batches)


def first_record_difference(ra: list[DefaultRecord], rb: list[DefaultRecord],
                            base_offset: int) -> tuple[int, str] | None:
    """The first offset whose records differ, and in which fields; None when the records agree
    (the difference is in the batch header: attributes, producer fields, timestamps)."""
    for x, y in zip(ra, rb):
        fields = [name for name in ("key", "value", "timestamp", "headers")
                  if getattr(x, name) != getattr(y, name)]
        if x.offset != y.offset:
            fields.insert(0, "offset")
        if fields:
            return x.offset, " and ".join(fields)
    if len(ra) != len(rb):
        shorter = ra if len(ra) < len(rb) else rb
        at = (shorter[-1].offset + 1) if shorter else base_offset
        return at, "record count"
    return None
