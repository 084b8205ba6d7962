"""Throttled-replica lists: compute, parse, format, merge and exactly restore them (pure, no I/O).

What Kafka's ≤ 2.5 ``kafka-reassign-partitions --throttle`` computes (docs/zookeeper.md §3.3, vectors §3.5):
for every partition that actually *moves* (the proposed list names a broker that is not a
current replica), the leader list gets ``p:b`` for every current replica b and the follower list
gets ``p:d`` for every destination d (proposed − current). Partitions that do not move add
nothing. Lists are formatted sorted by (partition, broker) with no spaces, which every broker
version parses (docs/zookeeper.md §3.2: brokers do not trim).

Merging into a list that is already on the topic keeps the user's pairs; ``*`` (everything
throttled) stays ``*``. :func:`subtract_replica_list` undoes exactly our merge: the pre-run
value when the current value is still what we produced, otherwise the current value minus only
the pairs we added that were not there before.

Failure: a list that does not follow §3.2's format raises :class:`InvalidConfig` naming the
element and the expected ``<partition>:<broker>`` form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Literal, Mapping, Sequence

from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidConfig

ReplicaPair = tuple[int, int]  # (partition, broker)

LEADER_KEY = "leader.replication.throttled.replicas"
FOLLOWER_KEY = "follower.replication.throttled.replicas"
WILDCARD = "*"

_PAIR = re.compile(r"^([0-9]+):([0-9]+)$")


@dataclass(frozen=True)
class TopicThrottle:
    """The throttled replicas of one topic: ``leader`` = sources, ``follower`` = destinations."""

    topic: str
    leader: frozenset[ReplicaPair]
    follower: frozenset[ReplicaPair]

    def leader_text(self) -> str:
        return format_replica_list(self.leader)

    def follower_text(self) -> str:
        return format_replica_list(self.follower)


def _moves(current: Mapping[TopicPartition, Sequence[int]],
           proposed: Mapping[TopicPartition, Sequence[int]]):
    """(tp, current replicas, destinations) for every partition that actually moves."""
    for tp in sorted(proposed):
        cur = current.get(tp)
        if cur is None:
            continue
        destinations = [b for b in proposed[tp] if b not in cur]
        if destinations:
            yield tp, tuple(cur), tuple(dict.fromkeys(destinations))


def throttled_replicas(current: Mapping[TopicPartition, Sequence[int]],
                       proposed: Mapping[TopicPartition, Sequence[int]]) -> dict[str, TopicThrottle]:
    """Per topic with at least one moving partition: leader and follower throttle pairs.

    Partitions of ``proposed`` unknown to ``current`` are ignored (validation refuses them
    before any write; see :mod:`kafka_zk.admin.reassignment`).
    """
    leader: dict[str, set[ReplicaPair]] = {}
    follower: dict[str, set[ReplicaPair]] = {}
    for tp, cur, destinations in _moves(current, proposed):
        leader.setdefault(tp.topic, set()).update((tp.partition, b) for b in cur)
        follower.setdefault(tp.topic, set()).update((tp.partition, d) for d in destinations)
    return {t: TopicThrottle(t, frozenset(leader[t]), frozenset(follower.get(t, ())))
            for t in sorted(leader)}


def throttled_brokers(current: Mapping[TopicPartition, Sequence[int]],
                      proposed: Mapping[TopicPartition, Sequence[int]]) -> frozenset[int]:
    """Brokers that need the throttle rates: sources ∪ destinations of moving partitions."""
    out: set[int] = set()
    for _tp, cur, destinations in _moves(current, proposed):
        out.update(cur)
        out.update(destinations)
    return frozenset(out)


def format_replica_list(pairs: Iterable[ReplicaPair]) -> str:
    """``0:100,0:101,1:102`` sorted by (partition, broker); ``""`` for no pairs."""
    return ",".join(f"{p}:{b}" for p, b in sorted(set(pairs)))


def parse_replica_list(text: str) -> frozenset[ReplicaPair] | Literal["*"]:
    """Parse a throttled-replicas value: ``*`` or ``p:b`` pairs separated by commas (§3.2).

    Elements are trimmed and empty elements pass, as Kafka's topic-config validator allows.
    """
    if text is None:
        return frozenset()
    if not isinstance(text, str):
        raise InvalidConfig(f"throttled replicas value {text!r} must be a string like '0:101,1:102' or '*'")
    stripped = text.strip()
    if stripped == WILDCARD:
        return WILDCARD
    pairs: set[ReplicaPair] = set()
    for element in stripped.split(","):
        element = element.strip()
        if not element:
            continue
        m = _PAIR.match(element)
        if not m:
            raise InvalidConfig(
                f"Invalid value {text!r} for a throttled replicas list: element {element!r} is not "
                "<partitionId>:<brokerId>; write e.g. '0:101,0:102,1:102' or '*'")
        pairs.add((int(m.group(1)), int(m.group(2))))
    return frozenset(pairs)


def merge_replica_list(existing: str | None, add: Iterable[ReplicaPair]) -> str:
    """``existing`` ∪ ``add`` formatted; ``*`` stays ``*``. User pairs already there are kept."""
    parsed = parse_replica_list(existing or "")
    if parsed == WILDCARD:
        return WILDCARD
    return format_replica_list(set(parsed) | set(add))


def subtract_replica_list(existing: str | None, ours: Iterable[ReplicaPair],
                          before: str | None) -> str | None:
    """The value to write back when removing our throttle; ``None`` means remove the key.

    ``existing`` is the value now on the topic (``None``: key absent), ``ours`` the pairs we
    merged in, ``before`` the value before our run (``None``: key was absent).
    * If ``existing`` is still what our merge produced (same set), restore ``before`` exactly.
    * Otherwise (someone changed the list since), remove only the pairs we added that were not
      in ``before``; a list left empty is removed when the key was absent before.
    """
    ours_set = frozenset(ours)
    produced = merge_replica_list(before, ours_set)
    if existing is None:
        return None
    current = parse_replica_list(existing)
    if current == parse_replica_list(produced):
        return before
    if current == WILDCARD:
        return WILDCARD
    before_parsed = parse_replica_list(before or "")
    if before_parsed == WILDCARD:
        return format_replica_list(current)
    added = ours_set - before_parsed
    remaining = set(current) - added
    if not remaining and before is None:
        return None
    return format_replica_list(remaining)
