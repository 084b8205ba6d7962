"""The catalogue of Kafka 2.4 topic configs and ZooKeeper-settable broker configs, with validators.

Every topic-level key of Kafka 2.4's ``LogConfig`` is listed with its type and range, as the
broker's ``ConfigDef`` checks them; values are strings in ZooKeeper and are parsed the way
``ConfigDef`` parses them (trimmed; booleans case-insensitive). Broker keys are the three
dynamic throttle rates, the only broker configs ``kafka-configs --zookeeper`` may set on a
running broker (docs/zookeeper.md §3.1, §7.4).

The types are ConfigDef's: SHORT, INT, LONG (ASCII digits with an optional sign, within the
Java type), DOUBLE (a finite decimal: no NaN, no infinity, no Java suffixes), BOOLEAN, STRING,
LIST (comma-separated), CLASS (a Java class name) and PASSWORD (any string). Stricter than Kafka
where Kafka would take a value no broker means (NaN ratios). ``message.format.version`` must
name a version Kafka 2.4.1's ``ApiVersion`` knows (0.8.0 … 2.4-IV1), parsed as ``ApiVersion.apply``
does: the first three dot-separated parts for 0.x versions, two otherwise, then looked up among
the full and the short version names (so ``2.4.1`` is 2.4, ``2.4-IV9`` and ``2.9`` are refused).
:func:`check_rate` is the one check of a throttle rate (a LONG ≥ 0) used by the CLI and the DAGs.

Failure: :class:`InvalidConfig` with Kafka's wording — ``Unknown topic config name: foo`` or
``Invalid value x for configuration retention.ms: Not a number of type LONG`` — plus what to
write instead.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Mapping

from kafka_zk.errors import InvalidConfig, InvalidInput
from kafka_zk.throttle_lists import FOLLOWER_KEY, LEADER_KEY, parse_replica_list

SHORT_MIN, SHORT_MAX = -(2**15), 2**15 - 1
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
_RANGES = {"short": (SHORT_MIN, SHORT_MAX), "int": (INT_MIN, INT_MAX), "long": (LONG_MIN, LONG_MAX)}
_WHOLE = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_JAVA_CLASS = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(\.[A-Za-z_$][A-Za-z0-9_$]*)*")

# kafka.api.ApiVersion.allVersions of Kafka 2.4.1, in order (full names; short names derived)
KAFKA_2_4_VERSIONS = ("0.8.0", "0.8.1", "0.8.2", "0.9.0", "0.10.0-IV0", "0.10.0-IV1", "0.10.1-IV0",
                      "0.10.1-IV1", "0.10.1-IV2", "0.10.2-IV0", "0.11.0-IV0", "0.11.0-IV1", "0.11.0-IV2",
                      "1.0-IV0", "1.1-IV0", "2.0-IV0", "2.0-IV1", "2.1-IV0", "2.1-IV1", "2.1-IV2", "2.2-IV0",
                      "2.2-IV1", "2.3-IV0", "2.3-IV1", "2.4-IV0", "2.4-IV1")
_VERSION_KEYS = frozenset(KAFKA_2_4_VERSIONS) | {v.split("-")[0] for v in KAFKA_2_4_VERSIONS}

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LOG_DIRS_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
BROKER_THROTTLE_KEYS = (LEADER_RATE, FOLLOWER_RATE, LOG_DIRS_RATE)



def shown(value: str) -> str:
    """A value as an error message shows it: itself, or quoted when it holds control characters."""
    return value if value.isprintable() and value.strip() == value else repr(value)


def kafka_2_4_version(text: str) -> str | None:
    """The ``ApiVersion`` (full name) Kafka 2.4.1 maps ``text`` to, or ``None`` (ApiVersion.apply)."""
    text = text.strip()
    segments = text.split(".")
    while segments and segments[-1] == "":      # Java's String.split drops trailing empty strings
        segments.pop()
    key = ".".join(segments[:3 if text.startswith("0.") else 2])
    if key not in _VERSION_KEYS:
        return None
    return key if key in KAFKA_2_4_VERSIONS else [v for v in KAFKA_2_4_VERSIONS if v.split("-")[0] == key][-1]


@dataclass(frozen=True)
class ConfigKey:
    """One config: its type (``int``, ``long``, ``double``, ``boolean``, ``string``, ``list``),
    inclusive bounds for numbers, allowed values for strings/lists, a custom check."""

    name: str
    type: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    check: Callable[[str], None] | None = None

    def expected(self) -> str:
        if self.choices:
            return "one of " + ", ".join(self.choices)
        if self.minimum is not None and self.maximum is not None and self.type == "double":
            return f"a number in [{self.minimum:g},{self.maximum:g}]"
        if self.minimum is not None:
            return f"a {self.type.upper()} of at least {self.minimum:g}"
        return f"a value of type {self.type.upper()}"

    def validate(self, value: str) -> None:
        if not isinstance(value, str):
            raise InvalidConfig(f"Invalid value {value!r} for configuration {self.name}: values are strings")
        text = value.strip()
        bad = f"Invalid value {shown(value)} for configuration {self.name}"
        if self.type in _RANGES:
            lo, hi = _RANGES[self.type]
            if not _WHOLE.fullmatch(text) or not lo <= int(text) <= hi:
                raise InvalidConfig(f"{bad}: Not a number of type {self.type.upper()}; expected "
                                    f"{self.expected()} (at most {hi})")
            number: float = int(text)
        elif self.type == "double":
            if not _DECIMAL.fullmatch(text) or not math.isfinite(float(text)):
                raise InvalidConfig(f"{bad}: Not a finite number of type DOUBLE (no NaN or infinity); "
                                    f"expected {self.expected()}")
            number = float(text)
        elif self.type == "boolean":
            if text.lower() not in ("true", "false"):
                raise InvalidConfig(f"{bad}: Expected value to be either true or false")
            return
        elif self.type == "list":
            items = [s.strip() for s in text.split(",") if s.strip()] if text else []
            bad_items = [s for s in items if self.choices and s not in self.choices]
            if bad_items:
                raise InvalidConfig(f"{bad}: String must be one of: {', '.join(self.choices)}")
            if self.check:
                self.check(value)
            return
        elif self.type == "class":
            if not _JAVA_CLASS.fullmatch(text):
                raise InvalidConfig(f"{bad}: not a Java class name; write e.g. org.example.MyClass")
            return
        elif self.type == "password":
            return
        else:
            if self.choices and text not in self.choices:
                raise InvalidConfig(f"{bad}: String must be one of: {', '.join(self.choices)}")
            if self.check:
                self.check(text)
            return
        if self.minimum is not None and number < self.minimum:
            raise InvalidConfig(f"{bad}: Value must be at least {self.minimum:g}")
        if self.maximum is not None and number > self.maximum:
            raise InvalidConfig(f"{bad}: Value must be no more than {self.maximum:g}")


def _throttled_list(name: str) -> Callable[[str], None]:
    def check(value: str) -> None:
        try:
            parse_replica_list(value)
        except InvalidConfig:
            raise InvalidConfig(
                f"Invalid value {shown(value)} for configuration {name}: must be the literal '*' or a list of "
                "replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...") from None
    return check


def _message_format(value: str) -> None:
    if kafka_2_4_version(value) is None:
        raise InvalidConfig(f"Invalid value {shown(value)} for configuration message.format.version: not a Kafka version "
                            "2.4 knows (0.8.0 ... 2.4-IV1); write e.g. 2.4 or 2.3-IV1")


def _keys(*keys: ConfigKey) -> dict[str, ConfigKey]:
    return {k.name: k for k in keys}


TOPIC_CONFIGS: dict[str, ConfigKey] = _keys(
    ConfigKey("cleanup.policy", "list", choices=("compact", "delete")),
    ConfigKey("compression.type", "string",
              choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    ConfigKey("delete.retention.ms", "long", 0),
    ConfigKey("file.delete.delay.ms", "long", 0),
    ConfigKey("flush.messages", "long", 0),
    ConfigKey("flush.ms", "long", 0),
    ConfigKey(FOLLOWER_KEY, "list", check=_throttled_list(FOLLOWER_KEY)),
    ConfigKey("index.interval.bytes", "int", 0),
    ConfigKey(LEADER_KEY, "list", check=_throttled_list(LEADER_KEY)),
    ConfigKey("max.compaction.lag.ms", "long", 1),
    ConfigKey("max.message.bytes", "int", 0),
    ConfigKey("message.downconversion.enable", "boolean"),
    ConfigKey("message.format.version", "string", check=_message_format),
    ConfigKey("message.timestamp.difference.max.ms", "long", 0),
    ConfigKey("message.timestamp.type", "string", choices=("CreateTime", "LogAppendTime")),
    ConfigKey("min.cleanable.dirty.ratio", "double", 0, 1),
    ConfigKey("min.compaction.lag.ms", "long", 0),
    ConfigKey("min.insync.replicas", "int", 1),
    ConfigKey("preallocate", "boolean"),
    ConfigKey("retention.bytes", "long"),
    ConfigKey("retention.ms", "long", -1),
    ConfigKey("segment.bytes", "int", 14),
    ConfigKey("segment.index.bytes", "int", 0),
    ConfigKey("segment.jitter.ms", "long", 0),
    ConfigKey("segment.ms", "long", 1),
    ConfigKey("unclean.leader.election.enable", "boolean"),
)

BROKER_CONFIGS: dict[str, ConfigKey] = _keys(
    ConfigKey(LEADER_RATE, "long", 0),
    ConfigKey(FOLLOWER_RATE, "long", 0),
    ConfigKey(LOG_DIRS_RATE, "long", 0),
)


def validate_topic_config(cfg: Mapping[str, str]) -> None:
    """Every key known to Kafka 2.4 and every value valid for it."""
    for key in sorted(cfg):
        spec = TOPIC_CONFIGS.get(key)
        if spec is None:
            raise InvalidConfig(f"Unknown topic config name: {shown(key)}; valid names are listed by "
                                "'kafka-runbook configs --help' (e.g. retention.ms, cleanup.policy)")
        spec.validate(cfg[key])


def validate_broker_config(cfg: Mapping[str, str]) -> None:
    """Only the three dynamic throttle rates may be set on brokers through ZooKeeper here."""
    for key in sorted(cfg):
        spec = BROKER_CONFIGS.get(key)
        if spec is None:
            raise InvalidConfig(f"Unknown broker config name: {shown(key)}; through ZooKeeper only "
                                f"{', '.join(BROKER_THROTTLE_KEYS)} can be set (use --bootstrap-server tooling "
                                "for other dynamic broker configs)")
        spec.validate(cfg[key])


def check_rate(rate: object, what: str = "throttle rate") -> int:
    """A replication throttle in bytes/s as brokers parse it: a LONG ≥ 0 (``bool`` refused)."""
    if isinstance(rate, bool) or not isinstance(rate, int) or not 0 <= rate <= LONG_MAX:
        raise InvalidInput(f"{what}={rate!r}: give a whole number of bytes per second from 0 to {LONG_MAX} "
                           "(Kafka's LONG), e.g. 52428800 for 50 MiB/s")
    return rate


def check_changed_config(entity_type: str, before: Mapping[str, str], after: Mapping[str, str]) -> None:
    """Every key a write adds or changes, if Kafka parses it, holds a value Kafka can parse.

    Used by the write gate: values already stored (set by others) are left to their owners."""
    catalogue = TOPIC_CONFIGS if entity_type == "topics" else BROKER_CONFIGS if entity_type == "brokers" else {}
    for key in sorted(after):
        if key in catalogue and before.get(key) != after[key]:
            catalogue[key].validate(after[key])
