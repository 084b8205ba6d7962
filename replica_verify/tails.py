"""Quick data check of chosen replicas against their leaders: log end offsets and last batches.

For each (partition, replica): ListOffsets for the latest offset asked of the replica's broker
and of the leader's as a debugging consumer (replica id −2, which Kafka answers from any
replica with its log end offset), then the batch holding the replica's last offset fetched
from both (Fetch, replica id −2). The replica matches when that batch ends at the same offset
with the same CRC on both, and its log end is not past the leader's. A replica behind its
leader (traffic arriving) is reported with its lag, not as a mismatch. Used by the runbooks
after a reassignment (``verify_data``); the full comparison is :mod:`replica_verify.verifier`.

Failure: an unreachable broker raises :class:`BrokerUnreachable`; a partition error from a
broker is a problem in the result (named), never an exception.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest
from kafka.record.memory_records import MemoryRecords

from replica_verify.connection import BrokerConnection
from replica_verify.discovery import PartitionId

DEBUGGING_REPLICA_ID = -2


@dataclass(frozen=True)
class TailCheck:
    partition: str
    replica: int
    leader: int
    replica_end: int
    leader_end: int
    replica_last: tuple[int, int] | None     # (last offset, CRC) of the replica's last batch
    leader_last: tuple[int, int] | None      # the leader's batch holding that offset
    problem: str | None

    @property
    def lag(self) -> int:
        return max(0, self.leader_end - self.replica_end)


def check_tails(endpoints: dict[int, tuple[str, int]], replicas: list[tuple[PartitionId, int, int]],
                timeout_s: float) -> list[TailCheck]:
    """``replicas``: (partition, replica broker, leader broker) triples."""
    conns: dict[int, BrokerConnection] = {}

    def conn(b: int) -> BrokerConnection:
        if b not in conns:
            conns[b] = BrokerConnection(*endpoints[b], timeout_s, f"broker {b}").open()
        return conns[b]
    out = []
    try:
        for tp, replica, leader in sorted(replicas):
            missing = [b for b in (replica, leader) if b not in endpoints]
            if missing:
                out.append(TailCheck(str(tp), replica, leader, -1, -1, None, None,
                                     f"broker(s) {missing} not registered (no endpoint to fetch from)"))
                continue
            r_end, r_err = _log_end(conn(replica), tp)
            l_end, l_err = _log_end(conn(leader), tp)
            if r_err or l_err:
                out.append(TailCheck(str(tp), replica, leader, r_end, l_end, None, None,
                                     f"ListOffsets error {r_err or l_err} from broker {replica if r_err else leader}"))
                continue
            r_last = _batch_at(conn(replica), tp, r_end - 1) if r_end > 0 else None
            l_last = _batch_at(conn(leader), tp, r_end - 1) if r_end > 0 else None
            problem = None
            if r_end > l_end:
                problem = f"log end offset {r_end} is past the leader's {l_end}"
            elif r_last != l_last:
                problem = (f"last batch differs from the leader's at offset {r_end - 1}: "
                           f"replica {_show(r_last)}, leader {_show(l_last)}")
            out.append(TailCheck(str(tp), replica, leader, r_end, l_end, r_last, l_last, problem))
    finally:
        for c in conns.values():
            c.close()
    return out


def _show(last: tuple[int, int] | None) -> str:
    return "none" if last is None else f"ends at {last[0]} with CRC {last[1]}"


def _log_end(conn: BrokerConnection, tp: PartitionId) -> tuple[int, int]:
    T = ListOffsetsRequest.ListOffsetsTopic
    resp = conn.send(ListOffsetsRequest(replica_id=DEBUGGING_REPLICA_ID, isolation_level=0, topics=[
        T(name=tp.topic, partitions=[T.ListOffsetsPartition(partition_index=tp.partition, timestamp=-1)])]))
    p = resp.topics[0].partitions[0]
    return p.offset, p.error_code


def _batch_at(conn: BrokerConnection, tp: PartitionId, offset: int) -> tuple[int, int] | None:
    FT = FetchRequest.FetchTopic
    resp = conn.send(FetchRequest(replica_id=DEBUGGING_REPLICA_ID, max_wait_ms=0, min_bytes=0, max_bytes=1,
                                  isolation_level=0, topics=[FT(topic=tp.topic, partitions=[
                                      FT.FetchPartition(partition=tp.partition, fetch_offset=offset,
                                                        partition_max_bytes=1)])]))
    p = resp.responses[0].partitions[0]
    if p.error_code or not p.records:
        return None
    batch = MemoryRecords(bytes(p.records)).next_batch()
    return None if batch is None else (batch.last_offset, batch.crc)
