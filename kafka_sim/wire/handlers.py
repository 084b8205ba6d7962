"""Kafka requests to responses for one emulated broker: ApiVersions, Metadata, ListOffsets and
Fetch, encoded and decoded with kafka-python's protocol layer (the versions Kafka 2.4.1
supports, Fetch from v4 since the records are v2 batches).

Semantics follow the broker's: Metadata lists the live brokers and every partition (or the
topics asked for; unknown ones get UNKNOWN_TOPIC_OR_PARTITION); ListOffsets is answered by the
leader only (NOT_LEADER_FOR_PARTITION elsewhere): −1 the high watermark, −2 the log start (0),
a timestamp the first offset at or after it (−1 when none); Fetch from a consumer (replica id
−1) is answered by the leader up to the high watermark, from a debugging consumer (−2, what
kafka-replica-verification.sh sends) or a follower id by any replica up to its own log end;
an offset past the log end gets OFFSET_OUT_OF_RANGE. A fetch with nothing to return waits up
to its max wait for data, in short polls. Batches are compressed with the topic's codec and
served damaged where a fault says so (:mod:`kafka_sim.wire.records`).

Failure: a request this broker does not speak (unknown API or version) returns None and the
listener closes the connection, as a Kafka broker does; ApiVersions with an unsupported version
gets UNSUPPORTED_VERSION and the supported ranges.
"""

from __future__ import annotations

import struct
import time
from typing import Callable

from kafka.protocol.consumer import FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata import (ApiVersionsRequest, ApiVersionsResponse, MetadataRequest,
                                     MetadataResponse)

from kafka_sim.wire import records
from kafka_sim.wire.state import ClusterView, ReplicaLog
from kafka_zk.codecs import TopicPartition

NONE, OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_FOR_PARTITION = 0, 1, 3, 6
UNSUPPORTED_VERSION = 35
CONSUMER_ID, DEBUGGING_ID = -1, -2

#: api key -> (class pair, min version, max version), as Kafka 2.4.1 answers ApiVersions
SUPPORTED = {
    18: (ApiVersionsRequest, ApiVersionsResponse, 0, 3),
    3: (MetadataRequest, MetadataResponse, 0, 8),
    2: (ListOffsetsRequest, ListOffsetsResponse, 0, 5),
    1: (FetchRequest, FetchResponse, 4, 11),
}
_POLL = 0.05


class BrokerState:
    """How a handler reads the emulator: set by the hub for one broker."""

    def __init__(self, broker_id: int, seed: int, view: Callable[[], ClusterView],
                 logs: Callable[[list[TopicPartition]], dict[TopicPartition, ReplicaLog | None]],
                 codec: Callable[[str], str] = lambda topic: "none") -> None:
        self.broker_id = broker_id
        self.seed = seed
        self.view = view
        self.logs = logs
        self.codec = codec


def handle(state: BrokerState, frame: bytes) -> bytes | None:
    """One request frame (without its size prefix) to one response frame (same), or None."""
    if len(frame) < 8:
        return None
    api_key, version = struct.unpack_from(">hh", frame)
    if api_key not in SUPPORTED:
        return None
    req_cls, resp_cls, lo, hi = SUPPORTED[api_key]
    if api_key == 18 and not lo <= version <= hi:
        corr = struct.unpack_from(">i", frame, 4)[0]
        return _encode(_api_versions(UNSUPPORTED_VERSION), 0, corr)
    if not lo <= version <= hi:
        return None
    request = req_cls.decode(frame, version=version, header=True)
    corr = request.header.correlation_id
    if api_key == 18:
        resp = _api_versions(NONE)
    elif api_key == 3:
        resp = _metadata(state, request, version)
    elif api_key == 2:
        resp = _list_offsets(state, request)
    else:
        resp = _fetch(state, request)
    return _encode(resp, version, corr)


def _encode(resp, version: int, correlation_id: int) -> bytes:
    resp.API_VERSION = version              # before the header: kafka-python keeps them in step
    resp.with_header(correlation_id=correlation_id)
    return bytes(resp.encode(header=True))


def _api_versions(error: int) -> ApiVersionsResponse:
    keys = [ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (_, _, lo, hi) in sorted(SUPPORTED.items())]
    return ApiVersionsResponse(error_code=error, api_keys=keys, throttle_time_ms=0)


def _metadata(state: BrokerState, request: MetadataRequest, version: int) -> MetadataResponse:
    view = state.view()
    by_topic: dict[str, list[tuple[int, object]]] = {}
    for tp, meta in view.partitions.items():
        by_topic.setdefault(tp.topic, []).append((tp.partition, meta))
    wanted = None if request.topics is None else [t.name for t in request.topics]
    if wanted is None or (version == 0 and not wanted):
        wanted = sorted(by_topic)
    Topic = MetadataResponse.MetadataResponseTopic
    Part = Topic.MetadataResponsePartition
    topics = []
    for name in wanted:
        if name not in by_topic:
            topics.append(Topic(error_code=UNKNOWN_TOPIC_OR_PARTITION, name=name, is_internal=False, partitions=[]))
            continue
        parts = [Part(error_code=NONE if m.leader >= 0 else 5, partition_index=p, leader_id=m.leader,
                      leader_epoch=-1, replica_nodes=list(m.replicas), isr_nodes=list(m.isr),
                      offline_replicas=list(m.offline))
                 for p, m in sorted(by_topic[name], key=lambda x: x[0])]
        topics.append(Topic(error_code=NONE, name=name, is_internal=name.startswith("__"), partitions=parts))
    brokers = [MetadataResponse.MetadataResponseBroker(node_id=b.broker_id, host=b.host, port=b.port, rack=b.rack)
               for b in view.brokers]
    return MetadataResponse(throttle_time_ms=0, brokers=brokers, cluster_id=view.cluster_id,
                            controller_id=view.controller_id, topics=topics)


def _list_offsets(state: BrokerState, request: ListOffsetsRequest) -> ListOffsetsResponse:
    tps = [TopicPartition(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    logs = state.logs(tps)
    TopicR = ListOffsetsResponse.ListOffsetsTopicResponse
    PartR = TopicR.ListOffsetsPartitionResponse
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            log = logs.get(TopicPartition(t.name, p.partition_index))
            if log is None:
                parts.append(PartR(partition_index=p.partition_index, error_code=UNKNOWN_TOPIC_OR_PARTITION,
                                   old_style_offsets=[], timestamp=-1, offset=-1))
                continue
            if not log.is_leader and request.replica_id == CONSUMER_ID:
                parts.append(PartR(partition_index=p.partition_index, error_code=NOT_LEADER_FOR_PARTITION,
                                   old_style_offsets=[], timestamp=-1, offset=-1))
                continue
            end = log.high_watermark if request.replica_id == CONSUMER_ID else log.log_end
            if p.timestamp == -1:
                offset, ts = end, -1
            elif p.timestamp == -2:
                offset, ts = 0, -1
            else:
                offset = records.offset_for_timestamp(p.timestamp)
                offset, ts = (offset, records.timestamp_of(offset)) if offset < end else (-1, -1)
            parts.append(PartR(partition_index=p.partition_index, error_code=NONE,
                               old_style_offsets=[offset], timestamp=ts, offset=offset))
        topics.append(TopicR(name=t.name, partitions=parts))
    return ListOffsetsResponse(throttle_time_ms=0, topics=topics)


def _fetch(state: BrokerState, request: FetchRequest) -> FetchResponse:
    tps = [TopicPartition(t.topic, p.partition) for t in request.topics for p in t.partitions]
    deadline = time.monotonic() + max(0, request.max_wait_ms) / 1000.0
    while True:
        logs = state.logs(tps)
        ready = any(log is not None and _servable_end(log, request.replica_id) > p.fetch_offset
                    for t in request.topics for p in t.partitions
                    for log in [logs.get(TopicPartition(t.topic, p.partition))])
        errors = any(_fetch_error(logs.get(TopicPartition(t.topic, p.partition)), request.replica_id,
                                  p.fetch_offset) != NONE for t in request.topics for p in t.partitions)
        if ready or errors or time.monotonic() >= deadline:
            break
        time.sleep(min(_POLL, max(0.0, deadline - time.monotonic())))
    TopicR = FetchResponse.FetchableTopicResponse
    PartR = TopicR.PartitionData
    budget = request.max_bytes if request.max_bytes > 0 else 1 << 31
    min_one = True                  # only until a partition returned data, as ReplicaManager does
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            log = logs.get(TopicPartition(t.topic, p.partition))
            error = _fetch_error(log, request.replica_id, p.fetch_offset)
            data = b""
            if error == NONE and budget > 0:
                data = records.read_log(state.seed, t.topic, p.partition, p.fetch_offset,
                                        _servable_end(log, request.replica_id),
                                        min(p.partition_max_bytes, budget), log.corrupt, min_one,
                                        state.codec(t.topic), log.damaged)
                budget -= len(data)
                min_one = min_one and not data
            hw = log.high_watermark if log is not None and error != UNKNOWN_TOPIC_OR_PARTITION else -1
            parts.append(PartR(partition_index=p.partition, error_code=error, high_watermark=hw,
                               last_stable_offset=hw, log_start_offset=0 if log is not None else -1,
                               aborted_transactions=None if error else [], preferred_read_replica=-1,
                               records=data))
        topics.append(TopicR(topic=t.topic, partitions=parts))
    return FetchResponse(throttle_time_ms=0, error_code=NONE, session_id=0, responses=topics)


def _servable_end(log: ReplicaLog, replica_id: int) -> int:
    return log.high_watermark if replica_id == CONSUMER_ID else log.log_end


def _fetch_error(log: ReplicaLog | None, replica_id: int, offset: int) -> int:
    if log is None:
        return UNKNOWN_TOPIC_OR_PARTITION
    if replica_id == CONSUMER_ID and not log.is_leader:
        return NOT_LEADER_FOR_PARTITION
    if offset < 0 or offset > log.log_end:
        return OFFSET_OUT_OF_RANGE
    return NONE
