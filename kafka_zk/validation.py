"""Input checks shared by every admin action, the CLI and the DAGs: names, ids, counts.

One parser per input, used alike by the CLI's flags, the DAGs' Param checks and the plan job, so
a value is accepted or refused the same way wherever it is typed, with one refusal text
(:class:`InputRefused`: ``"<input>: <reason>"``, only the input's name differs):
:func:`parse_broker_ids` (lists of broker ids), :func:`parse_throttle` (a replication rate),
:func:`parse_size` (byte sizes and budgets), :func:`parse_topic_names` and
:func:`parse_topic_regex` (topic selection, read as Kafka's ``--topic``). A list is a list, or
text with entries separated by commas (optionally in one pair of brackets); no entry may be
empty, none may repeat (Kafka's tools refuse a list with "duplicate entries").

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
:class:`InvalidReplicationFactor`, :class:`InputRefused` (the parsers), :class:`InvalidInput`,
:class:`ZnodeTooLarge` — each naming the input and the fix.
"""

from __future__ import annotations

import re
from typing import Any, Collection, Iterable, Mapping

from kafka_zk.errors import (BrokerNotAvailable, InputRefused, InvalidInput, InvalidReplicationFactor,
                             InvalidTopicName, TopicCollision, ZnodeTooLarge)

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
_BROKER_ID = re.compile(r"0|[1-9][0-9]*")
INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
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


def check_brokers_to_remove(brokers: Any, what: str = "brokers_to_remove") -> list[int]:
    """The brokers a runbook removes (or adds: ``what`` names the Param), sorted: :func:`parse_broker_ids`."""
    return sorted(parse_broker_ids(brokers, what))


def check_removal_against_cluster(removed: Iterable[int], racks: Mapping[int, str | None],
                                  allow_rack_removal: bool = False, param: str = "brokers_to_remove",
                                  hosting: Mapping[int, int] | None = None) -> None:
    """A decommission of ``removed`` against the registered brokers (id → rack): every id
    registered or, when down (dead), still holding replicas (``hosting``: unregistered id →
    replicas it holds), at least one broker left, and no rack emptied unless ``allow_rack_removal``.

    ``param`` names the input in messages (a DAG Param, or a CLI flag)."""
    removed = sorted(set(removed))
    hosting = hosting or {}
    unknown = [b for b in removed if b not in racks and not hosting.get(b)]
    if unknown:
        raise BrokerNotAvailable(
            f"{param}={removed}: broker id(s) {','.join(map(str, unknown))} are neither registered under "
            f"/brokers/ids (registered: {','.join(map(str, sorted(racks))) or 'none'}) nor hold any replica; "
            "remove only brokers of this cluster (a dead broker is accepted while it still holds replicas)")
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


def parse_replacements(old: object, new: object, what_old: str = "brokers_to_remove",
                        what_new: str = "replace_with") -> dict[int, int]:
    """"replace 4 with 7": ``old`` and ``new`` broker-id lists (:func:`parse_broker_ids`, order
    kept) paired in order, ``{4: 7}``; refused (naming both inputs) when their lengths differ."""
    olds, news = parse_broker_ids(old, what_old), parse_broker_ids(new, what_new)
    if len(olds) != len(news):
        raise InputRefused(what_new, f"{len(news)} broker(s) {news} for {len(olds)} in {what_old} {olds}: give one "
                                     f"new broker per broker replaced, in the same order (replace 4 with 7: "
                                     f"{what_old}=4, {what_new}=7)")
    return dict(zip(olds, news))


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


BROKER_ID_RULE = (f"broker ids are 0..{INT_MAX} in ASCII digits without sign or leading zeros "
                  "(as a broker registers under /brokers/ids), e.g. 3")


def _as_typed(value: object) -> str:
    """One item of an input as a refusal quotes it: the text as typed (a number as its digits)."""
    return repr(value.strip() if isinstance(value, str) else str(value))


def parse_broker_id(text: object, what: str = "broker id") -> int:
    """One broker id (module docstring); ``what`` names the input (a CLI flag or a DAG Param)."""
    if isinstance(text, int) and not isinstance(text, bool) and 0 <= text <= INT_MAX:
        return text
    if isinstance(text, str) and _BROKER_ID.fullmatch(text.strip()) and int(text.strip()) <= INT_MAX:
        return int(text.strip())
    raise InputRefused(what, f"{_as_typed(text)} is not a broker id; {BROKER_ID_RULE}")


def _list_items(items: object, what: str, kind: str, example: str) -> list[object]:
    """The entries of a list input: a list/tuple/set, one bare value, or text separated by commas
    (optionally in one pair of brackets, as a rendered Param shows a list). No entry may be empty."""
    if isinstance(items, str):   # spaces around entries go; other whitespace is left for the entry's own check
        text = items.strip(" ")
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1].strip(" ")
        parts: list[object] = [x.strip(" ") for x in text.split(",")] if text else []
        if "" in parts:
            raise InputRefused(what, f"{items.strip()!r} has an empty entry; separate {kind}s with single commas, "
                                     f"e.g. {example}")
    elif isinstance(items, (list, tuple)):
        parts = list(items)
    elif isinstance(items, (set, frozenset)):
        parts = sorted(items, key=str)
    elif isinstance(items, int) and not isinstance(items, bool):   # "4" typed in the form, rendered natively
        parts = [items]
    else:
        raise InputRefused(what, f"{items!r} is not a list of {kind}s; give e.g. {example}")
    if not parts:
        raise InputRefused(what, f"empty; give at least one {kind}, e.g. {example}")
    return parts


def _no_duplicates(values: list, what: str, kind: str) -> None:
    seen: set = set()
    dups = [v for v in values if v in seen or seen.add(v)]
    if dups:
        listed = ",".join(map(str, dict.fromkeys(dups)))
        raise InputRefused(what, f"duplicate entries: {listed}; list each {kind} once")


def parse_broker_ids(items: object, what: str = "broker ids") -> list[int]:
    """Broker ids, order kept: ``"4,5"``, ``"[4, 5]"``, ``[4, 5]`` or one id; each as
    :func:`parse_broker_id` reads it; none empty, none twice (Kafka's tools refuse a broker list
    with "duplicate entries"). :class:`InputRefused` names ``what`` with one text per problem."""
    ids = [parse_broker_id(x, what) for x in _list_items(items, what, "broker id", "4,5")]
    _no_duplicates(ids, what, "broker")
    return ids


def parse_throttle(value: object, what: str = "throttle_bytes_per_sec") -> int:
    """A replication throttle in bytes/s: a whole number 1..2^63-1 (Kafka's LONG), an int or ASCII
    digits. 0 is refused: it would stop replication and the reassignment with it."""
    rate = value.strip() if isinstance(value, str) else value
    if isinstance(rate, str) and rate.isascii() and rate.isdigit():
        rate = int(rate)
    if isinstance(rate, int) and not isinstance(rate, bool) and 1 <= rate <= LONG_MAX:
        return rate
    raise InputRefused(what, f"{_as_typed(value)} is not a throttle; give a whole number of bytes per second from "
                             f"1 to {LONG_MAX} (Kafka's LONG), e.g. 52428800 for 50 MiB/s")


_SIZE = re.compile(r"([0-9]+)\s*(B|KiB|MiB|GiB|TiB)?")
SIZE_UNITS = {None: 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def parse_size(value: object, what: str, minimum: int = 0, maximum: int = LONG_MAX) -> int:
    """A size in bytes: an int, ASCII digits, or digits with a binary unit (``50GiB``; B, KiB, MiB,
    GiB, TiB), within ``[minimum, maximum]``. :class:`InputRefused` names ``what``."""
    if isinstance(value, int) and not isinstance(value, bool):
        size: int | None = value
    else:
        m = _SIZE.fullmatch(value.strip()) if isinstance(value, str) else None
        size = int(m.group(1)) * SIZE_UNITS[m.group(2)] if m else None
    if size is None:
        raise InputRefused(what, f"{_as_typed(value)} is not a size; write bytes or a size like 50GiB "
                                 "(B, KiB, MiB, GiB, TiB)")
    if not minimum <= size <= maximum:
        raise InputRefused(what, f"{_as_typed(value)} is out of range; give a size from {minimum} to {maximum} bytes")
    return size


def parse_topic_names(items: object, what: str = "topics", required: bool = False) -> list[str]:
    """Topic names, order kept: a list, or names separated by commas (a command line); ``None``
    or nothing given is ``[]`` (refused when ``required``). Each a legal topic name (Kafka's
    message), none twice."""
    if not required and (items is None or (isinstance(items, (str, list, tuple))
                                           and not (items.strip() if isinstance(items, str) else items))):
        return []
    names = _list_items(items, what, "topic name", "orders,payments")
    for name in names:
        if not isinstance(name, str):
            raise InputRefused(what, f"{name!r} is not a topic name; give names as text, e.g. orders,payments")
        try:
            validate_topic_name(name)
        except InvalidTopicName as exc:
            raise InputRefused(what, f"{exc}; fix the name") from None
    _no_duplicates(names, what, "topic")
    return [str(n) for n in names]


def check_topics_exist(names: Iterable[str], existing: Collection[str], what: str = "topics") -> None:
    """Every named topic is in ``/brokers/topics``; :class:`InputRefused` lists the missing ones."""
    missing = [t for t in names if t not in existing]
    if missing:
        raise InputRefused(what, f"topic(s) {', '.join(missing)} do not exist; remove them (list the cluster's "
                                 "topics with kafka-runbook topics --list)")


#: Python-only regex syntax that Java's Pattern (Kafka's tools) refuses or reads otherwise.
_PYTHON_ONLY = {"(?P<": "a named group only Python reads; use a plain group (...)",
                "(?P=": "a named back-reference only Python reads; use a numbered one, e.g. \\1",
                "(?#": "an inline comment only Python reads; remove it",
                "(?(": "a conditional group only Python reads; spell out the alternatives with |"}


def parse_topic_regex(text: object, what: str = "topic_regex") -> re.Pattern[str] | None:
    """A topic selection expression, read as Kafka's tools read ``--topic``/``--include``
    (``TopicFilter``): trimmed, every ',' read as '|', spaces removed, quotes at either end dropped;
    then compiled and matched against the *whole* topic name. ``None`` or nothing left: no
    expression. Syntax only Python reads is refused, so an expression means the same here and in
    Kafka's tools; one Python cannot read (``\\p{Alpha}``, ``\\z``) is refused by the compiler."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise InputRefused(what, f"{text!r} is not a regular expression; give text, e.g. 'orders-.*'")
    rx = re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "", text.strip().replace(",", "|").replace(" ", "")))
    if not rx:
        return None
    for construct, why in _PYTHON_ONLY.items():
        if construct in rx:
            raise InputRefused(what, f"{text.strip()!r} uses {construct}, {why}")
    try:
        return re.compile(rx)
    except re.error as exc:
        raise InputRefused(what, f"{text.strip()!r} is not a valid regular expression ({exc}); escape special "
                                 "characters, e.g. test\\.topic") from None


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
