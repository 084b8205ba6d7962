"""The verification rounds: fetch every selected partition from every replica's broker (one
connection per broker, brokers fetched in parallel, one Fetch per broker per round as a
debugging consumer, replica id −2), compare (:mod:`replica_verify.compare`), advance each
partition to where all replicas agree, report, repeat.

Like Kafka's tool it prints "verification process is started." and, every
``--report-interval-ms``, "max lag is N for partition t-p at offset O among K partitions"
(lag: the partition's highest high watermark minus the offset verified so far), and the
mismatch lines as 2.4.1 prints them. Unlike it, it ends: when every partition is verified up to
its high watermark, or after a round in which no partition advanced (what is left is lag: a
follower behind its leader), or after ``max_rounds``; then a :class:`Summary`.

A replica whose data is corrupt (a garbled batch header, a batch that does not decompress, a
broker answering CORRUPT_MESSAGE) is a mismatch naming partition, replica and offset; a
partition whose replicas cannot be aligned past a point stops there (listed as stopped, with
the reason, not as lag) while every other partition is fetched and verified to the end. The
"max lag" line is printed every ``--report-interval-ms`` and once at the end (by the CLI),
never twice for the same round.

Memory: one round's responses (at most ``--fetch-size`` per replica and partition, plus one
batch); nothing is kept between rounds but offsets and counters.

Failure: a broker that refuses, drops or does not answer within the socket bound raises
:class:`BrokerUnreachable` (the dead broker named, never a hang); a replica that is no longer
where the metadata said raises :class:`VerifyError`.
"""

from __future__ import annotations

import datetime as _dt
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from kafka.protocol.consumer import FetchRequest

from replica_verify.compare import Mismatch, ReplicaData, compare_partition
from replica_verify.connection import BrokerConnection
from replica_verify.discovery import ClusterLayout, PartitionId, initial_offsets, load_layout
from replica_verify.errors import VerifyError
from replica_verify.options import VerifyOptions

DEBUGGING_REPLICA_ID = -2          # Request.DebuggingConsumerId
OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
_MAX_INT32 = (1 << 31) - 1


def stamp(epoch_s: float | None = None) -> str:
    """Kafka's ``yyyy-MM-dd HH:mm:ss,SSS`` in local time."""
    t = _dt.datetime.fromtimestamp(time.time() if epoch_s is None else epoch_s)
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"


@dataclass(frozen=True)
class PartitionLag:
    partition: str
    lag: int
    verified_offset: int
    high_watermark: int
    behind: tuple[tuple[int, int], ...]   # (replica, high watermark it reported) below the max


@dataclass
class Summary:
    partitions: int = 0
    replicas: int = 0
    rounds: int = 0
    batches: int = 0
    records: int = 0
    bytes_fetched: int = 0
    bytes_compared: int = 0
    seconds: float = 0.0
    max_lag: int = 0
    max_lag_partition: str = ""
    max_lag_offset: int = -1
    lagging: list[PartitionLag] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)
    verified: dict[str, int] = field(default_factory=dict)   # partition -> first offset not verified
    stopped: dict[str, str] = field(default_factory=dict)    # partition -> why it stopped (misaligned, corrupt)
    reported_round: int = -1        # the round whose "max lag" line was printed last

    @property
    def ok(self) -> bool:
        return not self.mismatches


def verify(opts: VerifyOptions, out: Callable[[str], None] = print, max_rounds: int | None = None) -> Summary:
    """Run the tool; lines go to ``out``; the summary is returned (not printed)."""
    started = time.monotonic()
    layout = load_layout(opts.brokers, opts.topic_pattern, opts.socket_timeout_s)
    offsets = initial_offsets(layout, opts.time, opts.socket_timeout_s)
    per_broker: dict[int, list[PartitionId]] = {}
    for info in layout.partitions:
        for r in info.replicas:
            per_broker.setdefault(r, []).append(info.tp)
    conns = {b: BrokerConnection(*layout.brokers[b], opts.socket_timeout_s, f"broker {b}") for b in per_broker}
    summary = Summary(partitions=len(layout.partitions), replicas=sum(len(i.replicas) for i in layout.partitions))
    aligned = {info.tp: True for info in layout.partitions}
    last_report = time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=len(conns), thread_name_prefix="replica-fetcher") as pool:
            for conn in pool.map(lambda c: c.open(), conns.values()):
                pass
            out(f"{stamp()}: verification process is started.")
            while max_rounds is None or summary.rounds < max_rounds:
                fetched = dict(zip(conns, pool.map(
                    lambda b: _fetch(b, conns[b], per_broker[b], offsets, opts), conns)))
                summary.rounds += 1
                progressed, lags = _verify_round(layout, fetched, offsets, aligned, summary, out)
                now = time.monotonic()
                if (now - last_report) * 1000 > opts.report_interval_ms:
                    out(_max_lag_line(summary, len(layout.partitions)))
                    last_report, summary.reported_round = now, summary.rounds
                if all(lag.lag == 0 for lag in lags) or not progressed:
                    summary.lagging = [lag for lag in lags if lag.lag > 0 or lag.behind]
                    break
    finally:
        for conn in conns.values():
            summary.bytes_fetched += conn.bytes_received
            conn.close()
    summary.verified = {str(tp): off for tp, off in sorted(offsets.items())}
    summary.seconds = time.monotonic() - started
    return summary


def _fetch(broker: int, conn: BrokerConnection, tps: list[PartitionId], offsets: dict[PartitionId, int],
           opts: VerifyOptions) -> dict[PartitionId, ReplicaData]:
    by_topic: dict[str, list[PartitionId]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(tp)
    FT = FetchRequest.FetchTopic
    FP = FT.FetchPartition
    request = FetchRequest(
        replica_id=DEBUGGING_REPLICA_ID, max_wait_ms=opts.max_wait_ms, min_bytes=1,
        max_bytes=_MAX_INT32, isolation_level=0, session_id=0, session_epoch=-1,
        topics=[FT(topic=t, partitions=[FP(partition=tp.partition, current_leader_epoch=-1, fetch_offset=offsets[tp],
                                           log_start_offset=-1, partition_max_bytes=opts.fetch_size) for tp in ps])
                for t, ps in sorted(by_topic.items())])
    response = conn.send(request)
    if response.error_code:
        raise VerifyError(f"{conn.where} refused the fetch (error code {response.error_code})")
    got: dict[PartitionId, ReplicaData] = {}
    for t in response.responses:
        for p in t.partitions:
            tp = PartitionId(t.topic, p.partition_index)
            if p.error_code and p.error_code not in (OFFSET_OUT_OF_RANGE, CORRUPT_MESSAGE):
                raise VerifyError(f"{conn.where} answered error code {p.error_code} for {tp} "
                                  "(the assignment or leadership changed during verification?); run again")
            records = p.records if isinstance(p.records, (bytes, bytearray, memoryview)) else b""
            got[tp] = ReplicaData(broker, p.high_watermark, bytes(records),
                                  out_of_range=p.error_code == OFFSET_OUT_OF_RANGE,
                                  complete=len(records) < opts.fetch_size,
                                  unreadable=f"broker {broker} answered CORRUPT_MESSAGE (error code 2) for "
                                             f"offset {offsets[tp]}" if p.error_code == CORRUPT_MESSAGE else "")
    missing = [str(tp) for tp in tps if tp not in got]
    if missing:
        raise VerifyError(f"{conn.where} did not answer for {missing[:5]}; run again")
    return got


def _verify_round(layout: ClusterLayout, fetched: dict[int, dict[PartitionId, ReplicaData]],
                  offsets: dict[PartitionId, int], aligned: dict[PartitionId, bool], summary: Summary,
                  out: Callable[[str], None]) -> tuple[bool, list[PartitionLag]]:
    progressed = False
    lags = []
    summary.max_lag, summary.max_lag_partition, summary.max_lag_offset = -1, "", -1
    for info in layout.partitions:
        tp = info.tp
        data = [fetched[r][tp] for r in sorted(info.replicas)]
        if aligned[tp]:
            result = compare_partition(str(tp), offsets[tp], data)
            for m in result.mismatches:
                out(m.line(stamp()))
            summary.mismatches.extend(result.mismatches)
            aligned[tp] = result.aligned
            if not result.aligned:
                why = result.mismatches[-1]
                summary.stopped[str(tp)] = (f"replica {why.other}'s data at offset {why.offset} is corrupt: {why.detail}"
                                            if why.kind == "corrupt" else
                                            f"replica {why.replica}'s batch ends at {why.mine}, replica {why.other}'s "
                                            f"at {why.theirs}: the replicas cannot be aligned past offset {result.next_offset}")
            if result.next_offset > offsets[tp]:
                progressed = True
                offsets[tp] = result.next_offset
            summary.batches += result.batches
            summary.records += result.records
            summary.bytes_compared += result.bytes_compared
        max_hw = max((d.high_watermark for d in data), default=offsets[tp])
        lag = max(0, max_hw - offsets[tp])
        behind = tuple((d.replica, d.high_watermark) for d in data if d.high_watermark < max_hw or d.out_of_range)
        lags.append(PartitionLag(str(tp), lag, offsets[tp], max_hw, behind))
        if lag > summary.max_lag:
            summary.max_lag, summary.max_lag_partition, summary.max_lag_offset = lag, str(tp), offsets[tp]
    summary.max_lag = max(summary.max_lag, 0)
    return progressed, lags


def _max_lag_line(summary: Summary, partitions: int) -> str:
    return (f"{stamp()}: max lag is {summary.max_lag} for partition {summary.max_lag_partition or 'null'} "
            f"at offset {summary.max_lag_offset} among {partitions} partitions")


def max_lag_line(summary: Summary) -> str:
    """The report line for a finished run."""
    return _max_lag_line(summary, summary.partitions)
