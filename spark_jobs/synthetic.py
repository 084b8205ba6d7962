"""Synthetic clusters for tests, benchmarks and rehearsals: Kafka-placed topics, skewed sizes.

:func:`synthetic_cluster` places every topic with Kafka's own algorithm
(:func:`kafka_zk.assignment.assign_replicas`, rack-aware when racks are given) so the starting
point looks like a real cluster; leader = preferred replica, ISR = replicas.
:func:`synthetic_sizes` draws Pareto-skewed partition sizes (a few huge, many small) from a
seeded generator, :func:`lognormal_sizes` lognormal ones. Deterministic for a seed. Failure: whatever ``assign_replicas`` refuses
(e.g. RF larger than the broker count).
"""

from __future__ import annotations

import math
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


def lognormal_sizes(snapshot: ClusterSnapshot, seed: int = 0, mean: int = 1 << 30,
                    sigma: float = 1.0) -> Mapping[TopicPartition, int]:
    """Lognormal(σ)-skewed sizes with the given mean (bytes), one per partition (the rehearsal
    seeder's default distribution, :mod:`kafka_sim.seed`)."""
    rng = random.Random(seed)
    mu = math.log(mean) - sigma * sigma / 2
    return {p.tp: int(rng.lognormvariate(mu, sigma)) for p in snapshot.partitions()}


def synthetic_log_dirs(snapshot: ClusterSnapshot, sizes: Mapping[TopicPartition, int]) -> str:
    """``sizes`` of every replica of ``snapshot`` as ``kafka-log-dirs.sh --describe`` prints them."""
    from kafka_zk.log_dirs import encode_log_dirs

    by_broker: dict[int, dict[TopicPartition, int]] = {}
    for p in snapshot.partitions():
        for b in p.replicas:
            by_broker.setdefault(b, {})[p.tp] = sizes[p.tp]
    return encode_log_dirs(by_broker)


def skewed_cluster(snapshot: ClusterSnapshot, hot_per_rack: int = 2, shift: float = 0.10,
                   lead: float = 0.5, seed: int = 0) -> ClusterSnapshot:
    """``snapshot`` made lopsided the way clusters drift: ``hot_per_rack`` brokers of every rack
    take over a ``shift`` share of the other brokers' replicas in their rack (so racks stay
    spread: a replica only moves within its rack) and lead a ``lead`` share of the partitions
    they hold. With the defaults, on 16 brokers per rack, the hot brokers hold ~2× the replicas
    of the others. Deterministic for a seed."""
    rng = random.Random(seed)
    by_rack: dict[str | None, list[int]] = {}
    for b in sorted(snapshot.brokers):
        by_rack.setdefault(snapshot.brokers[b].rack, []).append(b)
    hot = {r: ids[:hot_per_rack] for r, ids in by_rack.items()}
    topic_map = {}
    for name, topic in snapshot.topics.items():
        parts = {}
        for p, part in topic.partitions.items():
            reps = list(part.replicas)
            for i, b in enumerate(reps):
                candidates = [h for h in hot[snapshot.brokers[b].rack] if h not in reps]
                if b not in hot[snapshot.brokers[b].rack] and candidates and rng.random() < shift:
                    reps[i] = rng.choice(candidates)
            leaders = [i for i, b in enumerate(reps) if b in hot[snapshot.brokers[b].rack]]
            if leaders and rng.random() < lead:
                j = rng.choice(leaders)
                reps[0], reps[j] = reps[j], reps[0]
            parts[p] = Partition(name, p, tuple(reps), leader=reps[0], leader_epoch=0, isr=tuple(reps),
                                 controller_epoch=1)
        topic_map[name] = Topic(name, parts)
    return ClusterSnapshot(dict(snapshot.brokers), topic_map, controller_id=snapshot.controller_id,
                           controller_epoch=snapshot.controller_epoch)
