"""Input checks shared by every admin action, the CLI and the DAGs: names, ids, counts.

Topic names follow docs/zookeeper.md §6.2 with the messages of later Kafka versions (1..249 characters,
ASCII letters, digits, '.', '_', '-'; '.' and '..' forbidden; the whole string is matched, so a
trailing newline is refused). Two names collide when they are equal after replacing '.' by '_'
(metric names). Broker ids are what a broker registers under ``/brokers/ids``: ASCII digits in
canonical form (no sign, no leading zero, no other Unicode digit such as '²') within Kafka's
INT. Brokers named by the user must be registered; a replication factor larger than the live
brokers is refused with Kafka's message. Counts are bounded twice: by Kafka's INT, and by the
1 MB znode that has to hold them (a topic of 2^31-1 partitions is refused at once, with the
znode-size reason, instead of computing its assignment).

Failure: :class:`InvalidTopicName`, :class:`TopicCollision`, :class:`BrokerNotAvailable`,
:class:`InvalidReplicationFactor`, :class:`InvalidInput` (also for the brokers to remove),
:class:`ZnodeTooLarge` — each naming the input and the fix.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from kafka_zk.errors import (BrokerNotAvailable, InvalidInput, InvalidReplicationFactor, InvalidTopicName,
                             TopicCollision, ZnodeTooLarge)

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
_BROKER_ID = re.compile(r"0|[1-9][0-9]*")
INT_MAX = 2**31 - 1
ZNODE_LIMIT = 1_048_576 - 4096    # what kafka_zk.writer accepts (jute.maxbuffer minus headroom)

COLLISION_WARNING = ("WARNING: Due to limitations in metric names, topics with a period ('.') or "
                     "underscore ('_') could collide. To avoid issues it is best to use either, but not both.")


def _quoted(name: str) -> str:
    """``'name'`` as Kafka quotes it, or Python's escaped form when it holds control characters."""
    return f"'{name}'" if name.isprintable() else repr(name)


def validate_topic_name(name: str) -> None:
    """Raise :class:`InvalidTopicName` with Kafka's message if ``name`` is not a legal topic name."""
    if not isinstance(name, str) or name == "":
        raise InvalidTopicName("Topic name is invalid: the empty string is not allowed")
    if name == ".":
        raise InvalidTopicName("Topic name is invalid: '.' is not allowed")
    if name == "..":
        raise InvalidTopicName("Topic name is invalid: '..' is not allowed")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicName(f"Topic name is invalid: the length of {_quoted(name)} is longer than the max "
                               f"allowed length {MAX_NAME_LENGTH}")
    if not _LEGAL.fullmatch(name):
        raise InvalidTopicName(f"Topic name is invalid: {_quoted(name)} contains one or more characters other than "
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


def check_brokers_to_remove(brokers: Any) -> list[int]:
    """The brokers a decommission removes, sorted and distinct: a list of broker ids, or the same as
    comma-separated text (what a rendered Param or a command line gives), or one id; each id as
    :func:`parse_broker_id` reads it. :class:`InvalidInput` names the value and the expected form."""
    if isinstance(brokers, str):
        items: list[object] = [b.strip() for b in brokers.strip().strip("[]").split(",") if b.strip()]
    elif isinstance(brokers, int) and not isinstance(brokers, bool):   # "4" typed in the form, rendered natively
        items = [brokers]
    elif isinstance(brokers, (list, tuple, set, frozenset)):
        items = list(brokers)
    else:
        raise InvalidInput(f"brokers_to_remove={brokers!r}: give a list of broker ids, e.g. [3, 4]")
    if not items:
        raise InvalidInput(f"brokers_to_remove={brokers!r}: give at least one broker id, e.g. [3, 4]")
    return sorted({parse_broker_id(b, f"brokers_to_remove={brokers!r}") for b in items})


def check_removal_against_cluster(removed: Iterable[int], racks: Mapping[int, str | None],
                                  allow_rack_removal: bool = False, param: str = "brokers_to_remove") -> None:
    """A decommission of ``removed`` against the registered brokers (id → rack): every id
    registered, at least one broker left, and no rack emptied unless ``allow_rack_removal``.

    ``param`` names the input in messages (a DAG Param, or a CLI flag)."""
    removed = sorted(set(removed))
    unknown = [b for b in removed if b not in racks]
    if unknown:
        raise BrokerNotAvailable(
            f"{param}={removed}: broker id(s) {','.join(map(str, unknown))} are not registered under /brokers/ids "
            f"(registered: {','.join(map(str, sorted(racks))) or 'none'}); remove only registered brokers")
    if not set(racks) - set(removed):
        raise InvalidInput(f"{param}={removed} removes every broker of the cluster; keep at least one")
    by_rack: dict[str, set[int]] = {}
    for b, rack in racks.items():
        if rack is not None:
            by_rack.setdefault(rack, set()).add(b)
    emptied = sorted(r for r, members in by_rack.items() if members <= set(removed))
    if emptied and not allow_rack_removal:
        detail = "; ".join(f"rack {r!r} = {','.join(map(str, sorted(by_rack[r])))}" for r in emptied)
        raise InvalidInput(
            f"{param}={removed} removes every broker of rack(s) {', '.join(map(repr, emptied))} ({detail}): "
            "their replicas must move to the other racks and rack-aware placement loses a rack; set "
            "allow_rack_removal=true to acknowledge, or keep one broker of each rack")


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


def parse_broker_id(text: object, what: str = "broker id") -> int:
    """A broker id as a broker registers it: ASCII digits, canonical, 0..2^31-1 (Kafka's INT).

    ``what`` names the input in the message (a CLI flag or a DAG Param)."""
    if isinstance(text, bool):
        raise InvalidInput(f"{what}: {text!r} is not a broker id; give a whole number like 3")
    if isinstance(text, int):
        value = text
    elif isinstance(text, str) and _BROKER_ID.fullmatch(text.strip()):
        value = int(text.strip())
    else:
        raise InvalidInput(f"{what}: {text!r} is not a broker id; broker ids are ASCII digits without sign "
                           "or leading zeros, e.g. 3")
    if not 0 <= value <= INT_MAX:
        raise InvalidInput(f"{what}: {value} is not a broker id; broker ids are 0..{INT_MAX}")
    return value


def parse_broker_ids(items: object, what: str = "broker ids") -> list[int]:
    """A list of distinct broker ids: ``"1,2"``, ``"[1, 2]"``, ``[1, 2]`` or one id (order kept); empty is refused."""
    if isinstance(items, str):
        parts: list[object] = [x for x in items.strip().strip("[]").split(",")]
    elif isinstance(items, int) and not isinstance(items, bool):   # "4" typed in the form, rendered natively
        parts = [items]
    elif isinstance(items, (list, tuple)):
        parts = list(items)
    else:
        raise InvalidInput(f"{what}: {items!r} is not a list of broker ids; give e.g. 4,5")
    if not parts or (isinstance(items, str) and not items.strip()):
        raise InvalidInput(f"{what} is empty; give at least one broker id, e.g. 4,5")
    ids = [parse_broker_id(x, what) for x in parts]
    dups = sorted({b for b in ids if ids.count(b) > 1})
    if dups:
        raise InvalidInput(f"{what} contains duplicate entries: {','.join(map(str, dups))}; list each broker once")
    return ids


def check_entity_name(entity_type: str, name: object) -> None:
    """A config entity Kafka reads: a legal topic name, or a canonical broker id / ``<default>``."""
    if entity_type == "topics":
        validate_topic_name(name)  # type: ignore[arg-type]
    elif entity_type == "brokers":
        if name != "<default>":
            parse_broker_id(name, "broker entity name (a broker id or <default>)")
            if str(name).strip() != name:
                raise InvalidInput(f"broker entity name {name!r}: no surrounding whitespace; e.g. 3")


def check_count(value: int, what: str, minimum: int = 1, maximum: int = INT_MAX) -> None:
    """A whole number within ``[minimum, maximum]`` (Kafka's INT unless told), naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{what}: {value!r} is not a whole number")
    if value < minimum or value > maximum:
        raise InvalidInput(f"{what}: {value} is out of range; give a whole number from {minimum} to {maximum}")


def min_topic_znode_bytes(partitions: int, rf: int) -> int:
    """The smallest possible ``/brokers/topics/<t>`` payload for this many partitions (one-digit
    broker ids): ``{"version":1,"partitions":{"0":[0,1],...}}``. Exact arithmetic, O(digits)."""
    size = len('{"version":1,"partitions":{}}')
    digits, start = 1, 0
    while start < partitions:
        end = min(partitions, 10 ** digits)
        size += (end - start) * digits
        start, digits = end, digits + 1
    per_partition = len('"":[],') + rf + max(rf - 1, 0)     # quotes, colon, brackets, comma; ids; commas
    return size + partitions * per_partition - (1 if partitions else 0)


def check_partition_count(n: int, rf: int | None = None, max_bytes: int = ZNODE_LIMIT) -> None:
    """At least one partition, at most Kafka's INT, and (given ``rf``) few enough that the topic
    znode fits."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise InvalidInput(f"Number of partitions {n!r} is not a whole number")
    if n <= 0:
        raise InvalidInput("Number of partitions must be larger than 0.")
    if n > INT_MAX:
        raise InvalidInput(f"Number of partitions {n} is more than Kafka allows ({INT_MAX}, an INT)")
    if rf is None:
        return
    need = min_topic_znode_bytes(n, max(rf, 1))
    if need > max_bytes:
        raise ZnodeTooLarge(f"{n} partitions with replication factor {max(rf, 1)} need a topic znode of at least "
                            f"{need} bytes, over the znode limit of {max_bytes} bytes (ZooKeeper jute.maxbuffer); "
                            "use fewer partitions")
