"""Rehearsal clusters from a few numbers: brokers and racks, topic layouts, partition sizes.

Placement uses Kafka's own default assignment (:func:`kafka_zk.assignment.assign_replicas`,
rack-aware when racks are given) with a seeded generator, so a seed gives the same cluster
every time. Sizes follow a distribution with the requested mean: ``fixed``, ``uniform`` on
[0, 2·mean], or ``lognormal`` (σ = 1, μ chosen so the mean is ``mean``).

Failure: impossible shapes (RF above the broker count, no topics...) raise
:class:`kafka_zk.errors.InvalidInput` naming the flag to change.
"""

from __future__ import annotations

import math
import random
from typing import Mapping

from kafka_zk.assignment import assign_replicas
from kafka_zk.errors import InvalidInput

DISTRIBUTIONS = ("lognormal", "uniform", "fixed")


def broker_racks(brokers: int, racks: int) -> dict[int, str | None]:
    """Broker ids 0..n-1; with racks > 0, broker b is in rack ``chr(ord('a') + b % racks)``."""
    if brokers <= 0:
        raise InvalidInput(f"--brokers {brokers}: give at least 1 broker")
    if racks < 0 or racks > 26:
        raise InvalidInput(f"--racks {racks}: give 0 (no racks) to 26")
    return {b: (chr(ord("a") + b % racks) if racks else None) for b in range(brokers)}


def topic_layout(racks: Mapping[int, str | None], topics: int, partitions: int, rf: int,
                 seed: int, prefix: str = "topic-") -> dict[str, dict[int, tuple[int, ...]]]:
    if topics < 0 or partitions <= 0:
        raise InvalidInput(f"--topics {topics} / --partitions {partitions}: need topics ≥ 0 and "
                           "partitions ≥ 1")
    if not 0 < rf <= len(racks):
        raise InvalidInput(f"--replication-factor {rf} must be between 1 and the broker count "
                           f"{len(racks)}")
    rng = random.Random(seed)
    brokers = [(b, racks[b]) for b in sorted(racks)]
    width = max(4, len(str(max(topics - 1, 0))))
    return {f"{prefix}{i:0{width}d}": assign_replicas(brokers, partitions, rf, rng=rng,
                                                      rack_mode="safe")
            for i in range(topics)}


def partition_sizes(layout: Mapping[str, Mapping[int, tuple[int, ...]]], distribution: str,
                    mean: float, seed: int) -> dict[str, dict[int, int]]:
    if distribution not in DISTRIBUTIONS:
        raise InvalidInput(f"--size-distribution {distribution!r}: use one of {', '.join(DISTRIBUTIONS)}")
    if mean < 0:
        raise InvalidInput(f"--mean-size {mean}: must be ≥ 0 bytes")
    rng = random.Random(seed + 1)
    sigma = 1.0
    mu = math.log(mean) - sigma * sigma / 2 if mean > 0 else 0.0
    out: dict[str, dict[int, int]] = {}
    for name in sorted(layout):
        sizes = {}
        for p in sorted(layout[name]):
            if distribution == "fixed" or mean == 0:
                value = mean
            elif distribution == "uniform":
                value = rng.uniform(0, 2 * mean)
            else:
                value = rng.lognormvariate(mu, sigma)
            sizes[p] = int(round(value))
        out[name] = sizes
    return out
