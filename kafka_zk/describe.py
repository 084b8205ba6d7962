"""``kafka-topics --describe`` output from a snapshot, exactly as the ZK path prints it (docs/zookeeper.md §6.1).

Default format is Kafka 2.4+ (``Topic: t\\tPartitionCount: n\\tReplicationFactor: rf\\tConfigs: k=v``
and ``\\tTopic: t\\tPartition: p\\tLeader: l\\tReplicas: a,b\\tIsr: a,b``; ``none`` for a missing
or −1 leader; ``\\tMarkedForDeletion: true`` appended for topics being deleted). ``fmt="1.x"``
gives the 1.x–2.3 header (no space after colons) and prints ``-1`` for a leader of −1.

Filters as in §6.1 for the 2.4 ZK path: any of the four partition filters suppresses headers
and prints the partitions matching any requested filter; ``topics_with_overrides`` prints only
headers of topics with overrides. Topics are sorted by name, partitions by id. Config overrides
come in Kafka's own map order (:func:`config_order`), not sorted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kafka_zk.java_order import java8_properties_order, java_hashmap_order
from kafka_zk.model import INTERNAL_TOPICS, ClusterSnapshot, Partition, Topic

Format = Literal["2.4", "1.x"]


@dataclass(frozen=True)
class DescribeFilters:
    under_replicated: bool = False
    unavailable: bool = False
    under_min_isr: bool = False
    at_min_isr: bool = False
    topics_with_overrides: bool = False
    exclude_internal: bool = False

    @property
    def partition_filter(self) -> bool:
        return self.under_replicated or self.unavailable or self.under_min_isr or self.at_min_isr


def is_under_replicated(p: Partition) -> bool:
    return len(p.isr) < len(p.replicas)


def is_unavailable(p: Partition, live: set[int]) -> bool:
    return p.leader is None or p.leader not in live


def is_under_min_isr(p: Partition) -> bool:
    """ZK path: min ISR is unknown, so only a partition without a leader matches (§6.1, 2.4+)."""
    return p.leader is None or p.leader == -1


def _leader(p: Partition, fmt: Format) -> str:
    if p.leader is None:
        return "none"
    if p.leader == -1:
        return "-1" if fmt == "1.x" else "none"
    return str(p.leader)


def config_order(keys: list[str], fmt: Format = "2.4") -> list[str]:
    """The order Kafka's ZooKeeper describe prints a topic's overrides in.

    The overrides are read into a ``java.util.Properties`` in the znode's JSON order
    (AdminZkClient.fetchEntityConfig). 1.x-2.3 print that Properties' iteration order; 2.4.1
    (TopicCommand.ZookeeperTopicService.describeTopic) wraps the entries in an AdminClient
    ``Config``, whose ``HashMap`` decides the order. Properties modelled as on Java 8.
    """
    props = java8_properties_order(keys)
    return props if fmt == "1.x" else java_hashmap_order(props)


def header_line(topic: Topic, fmt: Format = "2.4") -> str:
    configs = ",".join(f"{k}={topic.config[k]}" for k in config_order(list(topic.config), fmt))
    sep = "" if fmt == "1.x" else " "
    line = (f"Topic:{sep}{topic.name}\tPartitionCount:{sep}{len(topic.partitions)}\t"
            f"ReplicationFactor:{sep}{topic.replication_factor}\tConfigs:{sep}{configs}")
    if topic.marked_for_deletion:
        line += f"\tMarkedForDeletion:{sep}true"
    return line


def partition_line(topic: Topic, p: Partition, fmt: Format = "2.4") -> str:
    line = (f"\tTopic: {topic.name}\tPartition: {p.partition}\tLeader: {_leader(p, fmt)}\t"
            f"Replicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}")
    if topic.marked_for_deletion and fmt != "1.x":
        line += "\tMarkedForDeletion: true"
    return line


def describe_lines(snapshot: ClusterSnapshot, topics: list[str] | None = None,
                   filters: DescribeFilters = DescribeFilters(), fmt: Format = "2.4") -> list[str]:
    """The describe output for ``topics`` (default: all) of ``snapshot``."""
    live = set(snapshot.brokers)
    names = sorted(snapshot.topics) if topics is None else sorted(t for t in topics if t in snapshot.topics)
    out: list[str] = []
    for name in names:
        if filters.exclude_internal and name in INTERNAL_TOPICS:
            continue
        topic = snapshot.topics[name]
        if filters.topics_with_overrides:
            if topic.config:
                out.append(header_line(topic, fmt))
            continue
        if not filters.partition_filter:
            out.append(header_line(topic, fmt))
        for pid in sorted(topic.partitions):
            p = topic.partitions[pid]
            if filters.partition_filter and not (
                    (filters.under_replicated and is_under_replicated(p))
                    or (filters.unavailable and is_unavailable(p, live))
                    or (filters.under_min_isr and is_under_min_isr(p))):
                continue  # at_min_isr never matches on the ZK path (min ISR unknown)
            out.append(partition_line(topic, p, fmt))
    return out
