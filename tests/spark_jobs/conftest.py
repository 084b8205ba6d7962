"""Fixtures for the plan tests: ONE SparkSession for the whole run, literal and random clusters.

The session is local[2] (the CI machine has 2 cores), UI off, few shuffle partitions; it is
created lazily by the first test that asks for it and stopped at the end of the run.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from kafka_zk.codecs import TopicPartition
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from spark_jobs.plan_job import spark_session

    session = spark_session("local[2]")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def literal_cluster(assignment: dict[str, dict[int, tuple[int, ...]]], racks: dict[int, str | None],
                    leaders: dict[TopicPartition, int] | None = None,
                    isr: dict[TopicPartition, tuple[int, ...]] | None = None) -> ClusterSnapshot:
    """A snapshot from literals: {topic: {partition: replicas}} on brokers {id: rack}."""
    topics = {}
    for name, parts in assignment.items():
        ps = {}
        for pid, replicas in parts.items():
            tp = TopicPartition(name, pid)
            leader = (leaders or {}).get(tp, replicas[0])
            ps[pid] = Partition(name, pid, tuple(replicas), leader=leader, leader_epoch=0,
                                isr=tuple((isr or {}).get(tp, replicas)), controller_epoch=1)
        topics[name] = Topic(name, ps)
    return ClusterSnapshot({b: Broker(b, r, "127.0.0.1", 9092) for b, r in racks.items()}, topics)
