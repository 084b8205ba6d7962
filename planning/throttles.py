"""Per-wave throttle lists, computed exactly as Kafka does (via :mod:`kafka_zk.throttle_lists`).

Leader list of a topic = every current replica of its partitions that actually move in the
wave; follower list = the move destinations; the brokers that get the throttle rates are the
sources and destinations of those moves, but a dead broker (down, being decommissioned): it
sends nothing. Pure; a wave with no data movement has no throttles.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

from planning.model import Wave
from kafka_zk.throttle_lists import TopicThrottle, throttled_replicas


@dataclass(frozen=True)
class WaveThrottle:
    """Throttled replicas per topic and the brokers needing rates, for one wave."""

    wave: int
    topics: Mapping[str, TopicThrottle]
    brokers: frozenset[int]


def wave_throttles(wave: Wave, dead: frozenset[int] = frozenset()) -> WaveThrottle:
    """``dead``: brokers that are down (a dead broker being decommissioned) send nothing: they get
    no rate and are left out of the leader lists; new replicas copy from the live leaders."""
    if dead:
        wave = replace(wave, moves=tuple(replace(m, current=tuple(b for b in m.current if b not in dead))
                                         if not dead.isdisjoint(m.current) else m for m in wave.moves))
    current = {m.tp: m.current for m in wave.moves}
    proposed = {m.tp: m.target for m in wave.moves}
    brokers: set[int] = set()  # = throttled_brokers(current, proposed), from the moves directly
    for m in wave.moves:
        if m.destinations:
            brokers.update(m.current)
            brokers.update(m.destinations)
    return WaveThrottle(wave.index, throttled_replicas(current, proposed), frozenset(brokers))
