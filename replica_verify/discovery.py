"""What to verify and from where: the cluster's brokers and partitions (Metadata, from the first
``--broker-list`` entry that answers) and each partition's initial offset (ListOffsets to its
leader, for ``--time``: −1 the high watermark, −2 the log start, or the first offset at or after
a timestamp — the high watermark when there is none).

Failure: no bootstrap broker answering, no topic matching the white list, a partition without a
leader, or a replica on a broker that is not live raise :class:`VerifyError` naming it (the
tool, like Kafka's, needs every replica's broker up at start); a ListOffsets error raises
:class:`ProtocolError` naming the partition and the error code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kafka.protocol.consumer import ListOffsetsRequest
from kafka.protocol.metadata import MetadataRequest

from replica_verify.connection import BrokerConnection
from replica_verify.errors import BrokerUnreachable, ProtocolError, VerifyError

NOT_LEADER = 6


@dataclass(frozen=True, order=True)
class PartitionId:
    topic: str
    partition: int

    def __str__(self) -> str:           # Kafka's TopicPartition.toString
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class PartitionInfo:
    tp: PartitionId
    leader: int
    replicas: tuple[int, ...]


@dataclass(frozen=True)
class ClusterLayout:
    brokers: dict[int, tuple[str, int]]
    partitions: tuple[PartitionInfo, ...]


def load_layout(bootstrap: tuple[tuple[str, int], ...], pattern: re.Pattern[str], timeout_s: float) -> ClusterLayout:
    """Brokers and the white-listed partitions, checked as the tool needs them."""
    failures = []
    resp = None
    for host, port in bootstrap:
        conn = BrokerConnection(host, port, timeout_s)
        try:
            resp = conn.open().send(MetadataRequest(topics=None, allow_auto_topic_creation=False))
            break
        except BrokerUnreachable as exc:
            failures.append(str(exc))
        finally:
            conn.close()
    if resp is None:
        raise VerifyError("no broker of --broker-list answered: " + "; ".join(failures))
    brokers = {b.node_id: (b.host, b.port) for b in resp.brokers}
    parts = []
    for t in resp.topics:
        if t.error_code or not pattern.fullmatch(t.name):
            continue
        for p in t.partitions:
            parts.append(PartitionInfo(PartitionId(t.name, p.partition_index), p.leader_id, tuple(p.replica_nodes)))
    if not parts:
        raise VerifyError(f"No topics found: --topic-white-list {pattern.pattern!r} matches no topic "
                          f"of the cluster ({len(resp.topics)} topics); check the regex (it must match "
                          "the whole name)")
    parts.sort(key=lambda x: x.tp)
    for info in parts:
        if info.leader < 0:
            raise VerifyError(f"partition {info.tp} has no leader: its replicas {list(info.replicas)} "
                              "are offline; start a replica's broker or leave the topic out of "
                              "--topic-white-list")
        dead = [r for r in info.replicas if r not in brokers]
        if dead:
            raise VerifyError(f"partition {info.tp} has replicas on brokers {dead} that are not live "
                              f"(live: {sorted(brokers)}); start them or leave the topic out of "
                              "--topic-white-list")
    return ClusterLayout(brokers, tuple(parts))


def initial_offsets(layout: ClusterLayout, when: int, timeout_s: float) -> dict[PartitionId, int]:
    """Each partition's first offset to verify, asked of its leader."""
    by_leader: dict[int, list[PartitionId]] = {}
    for info in layout.partitions:
        by_leader.setdefault(info.leader, []).append(info.tp)
    Topic = ListOffsetsRequest.ListOffsetsTopic
    Part = Topic.ListOffsetsPartition
    out: dict[PartitionId, int] = {}
    for leader, tps in sorted(by_leader.items()):
        host, port = layout.brokers[leader]
        topics: dict[str, list[int]] = {}
        for tp in tps:
            topics.setdefault(tp.topic, []).append(tp.partition)
        with BrokerConnection(host, port, timeout_s, f"broker {leader}") as conn:
            ask = [Topic(name=t, partitions=[Part(partition_index=p, current_leader_epoch=-1, timestamp=when)
                                             for p in ps]) for t, ps in sorted(topics.items())]
            resp = conn.send(ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=ask))
            latest = None
            if when >= 0 and any(p.offset < 0 for t in resp.topics for p in t.partitions if not p.error_code):
                latest = conn.send(ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
                    Topic(name=t, partitions=[Part(partition_index=p, current_leader_epoch=-1, timestamp=-1)
                                              for p in ps]) for t, ps in sorted(topics.items())]))
        ends = {PartitionId(t.name, p.partition_index): p.offset
                for t in (latest.topics if latest is not None else []) for p in t.partitions}
        for t in resp.topics:
            for p in t.partitions:
                tp = PartitionId(t.name, p.partition_index)
                if p.error_code:
                    hint = " (leadership moved: run again)" if p.error_code == NOT_LEADER else ""
                    raise ProtocolError(f"ListOffsets for {tp} on broker {leader} failed with error "
                                        f"code {p.error_code}{hint}")
                out[tp] = p.offset if p.offset >= 0 else ends.get(tp, 0)
    return out
