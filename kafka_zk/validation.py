"""Input checks shared by every admin action: topic names, name collisions, brokers, RF.

Topic names follow docs/zookeeper.md §6.2 with the messages of later Kafka versions (1..249 characters,
ASCII letters, digits, '.', '_', '-'; '.' and '..' forbidden). Two names collide when they
are equal after replacing '.' by '_' (metric names). Brokers named by the user must be
registered under ``/brokers/ids``; a replication factor larger than the live brokers is
refused with Kafka's message.

Failure: :class:`InvalidTopicName`, :class:`TopicCollision`, :class:`BrokerNotAvailable`,
:class:`InvalidReplicationFactor` — each naming the input and the fix.
"""

from __future__ import annotations

import re
from typing import Iterable

from kafka_zk.errors import (BrokerNotAvailable, InvalidReplicationFactor, InvalidTopicName,
                             TopicCollision)

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")

COLLISION_WARNING = ("WARNING: Due to limitations in metric names, topics with a period ('.') or "
                     "underscore ('_') could collide. To avoid issues it is best to use either, but not both.")


def validate_topic_name(name: str) -> None:
    """Raise :class:`InvalidTopicName` with Kafka's message if ``name`` is not a legal topic name."""
    if not isinstance(name, str) or name == "":
        raise InvalidTopicName("Topic name is invalid: the empty string is not allowed")
    if name == ".":
        raise InvalidTopicName("Topic name is invalid: '.' is not allowed")
    if name == "..":
        raise InvalidTopicName("Topic name is invalid: '..' is not allowed")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicName(f"Topic name is invalid: the length of '{name}' is longer than the max "
                               f"allowed length {MAX_NAME_LENGTH}")
    if not _LEGAL.match(name):
        raise InvalidTopicName(f"Topic name is invalid: '{name}' contains one or more characters other than "
                               "ASCII alphanumerics, '.', '_' and '-'")


def is_valid_topic_name(name: str) -> bool:
    try:
        validate_topic_name(name)
    except InvalidTopicName:
        return False
    return True


def unify_collision_chars(name: str) -> str:
    return name.replace(".", "_")


def has_collision_chars(name: str) -> bool:
    return "." in name or "_" in name


def collision_warning(name: str) -> str | None:
    """Kafka's metric-name warning for a name with '.' or '_', else ``None``."""
    return COLLISION_WARNING if has_collision_chars(name) else None


def colliding_topics(name: str, existing: Iterable[str]) -> list[str]:
    """Existing topics (other than ``name`` itself) equal to ``name`` once '.' becomes '_'."""
    key = unify_collision_chars(name)
    return sorted(t for t in existing if t != name and unify_collision_chars(t) == key)


def check_collision(name: str, existing: Iterable[str]) -> None:
    """Raise :class:`TopicCollision` as Kafka does when ``name`` collides with an existing topic."""
    hits = colliding_topics(name, existing)
    if hits:
        raise TopicCollision(f"Topic '{name}' collides with existing topics: {', '.join(hits)}")


def check_brokers_live(broker_ids: Iterable[int], live_broker_ids: Iterable[int], what: str = "") -> None:
    """Every id in ``broker_ids`` must be registered (live)."""
    live = set(live_broker_ids)
    unknown = sorted(set(broker_ids) - live)
    if unknown:
        prefix = f"{what}: " if what else ""
        raise BrokerNotAvailable(
            f"{prefix}broker id(s) {','.join(map(str, unknown))} are not registered under /brokers/ids "
            f"(live brokers: {','.join(map(str, sorted(live))) or 'none'}); use live broker ids")


def check_replication_factor(rf: int, live_broker_count: int) -> None:
    """RF must be ≥ 1 and at most the number of live brokers (Kafka's messages)."""
    if rf <= 0:
        raise InvalidReplicationFactor("Replication factor must be larger than 0.")
    if rf > live_broker_count:
        raise InvalidReplicationFactor(
            f"Replication factor: {rf} larger than available brokers: {live_broker_count}.")


def check_partition_count(n: int) -> None:
    from kafka_zk.errors import InvalidInput

    if n <= 0:
        raise InvalidInput("Number of partitions must be larger than 0.")
