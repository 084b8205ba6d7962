"""Synthetic clusters for tests, benchmarks and rehearsals: Kafka-placed topics, skewed sizes.

:func:`synthetic_cluster` places every topic with Kafka's own algorithm
(:func:`kafka_zk.assignment.assign_replicas`, rack-aware when racks are given) so the starting
point looks like a real cluster; leader = preferred replica, ISR = replicas.
:func:`synthetic_sizes` draws Pareto-skewed partition sizes (a few huge, many small) from a
seeded generator. Deterministic for a seed. Failure: whatever ``assign_replicas`` refuses
(e.g. RF larger than the broker count).
"""

from __future__ import annotations

import random
from typing import Mapping

from kafka_zk.assignment import assign_replicas
from kafka_zk.codecs import TopicPartition
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic


def synthetic_cluster(brokers: int, racks: int, topics: int, partitions: int, rf: int,
                      seed: int = 0, first_id: int = 0) -> ClusterSnapshot:
    """``topics`` topics of ``partitions`` partitions each on ``brokers`` brokers in ``racks`` racks.

    ``racks`` = 0 means no rack information. Broker ``i`` is in rack ``r{i % racks}``.
    """
    rng = random.Random(seed)
    ids = list(range(first_id, first_id + brokers))
    broker_map = {b: Broker(b, f"r{(b - first_id) % racks}" if racks else None, f"b{b}", 9092)
                  for b in ids}
    pairs = [(b, broker_map[b].rack) for b in ids]
    topic_map = {}
    for t in range(topics):
        name = f"topic-{t:04d}"
        assignment = assign_replicas(pairs, partitions, rf, rng=rng)
        parts = {p: Partition(name, p, tuple(r), leader=r[0], leader_epoch=0, isr=tuple(r),
                              controller_epoch=1) for p, r in assignment.items()}
        topic_map[name] = Topic(name, parts)
    return ClusterSnapshot(broker_map, topic_map, controller_id=ids[0], controller_epoch=1)


def synthetic_sizes(snapshot: ClusterSnapshot, seed: int = 0, mean: int = 1 << 30,
                    alpha: float = 1.5) -> Mapping[TopicPartition, int]:
    """Pareto(alpha)-skewed sizes with the given mean (bytes), one per partition."""
    rng = random.Random(seed)
    scale = mean * (alpha - 1) / alpha
    return {p.tp: int(scale * rng.paretovariate(alpha)) for p in snapshot.partitions()}
