"""The catalogue of Kafka 2.4 topic configs and ZooKeeper-settable broker configs, with validators.

Every topic-level key of Kafka 2.4's ``LogConfig`` is listed with its type and range, as the
broker's ``ConfigDef`` checks them; values are strings in ZooKeeper and are parsed the way
``ConfigDef`` parses them (trimmed; booleans case-insensitive). Broker keys are the three
dynamic throttle rates, the only broker configs ``kafka-configs --zookeeper`` may set on a
running broker (docs/zookeeper.md §3.1, §7.4).

Failure: :class:`InvalidConfig` with Kafka's wording — ``Unknown topic config name: foo`` or
``Invalid value x for configuration retention.ms: Not a number of type LONG`` — plus what to
write instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Mapping

from kafka_zk.errors import InvalidConfig
from kafka_zk.throttle_lists import FOLLOWER_KEY, LEADER_KEY, parse_replica_list

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LOG_DIRS_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
BROKER_THROTTLE_KEYS = (LEADER_RATE, FOLLOWER_RATE, LOG_DIRS_RATE)

_VERSION = re.compile(r"^(0\.8\.[0-2]|0\.9\.0|0\.10\.[0-2]|0\.11\.0|[1-3]\.[0-9]+)(\.[0-9]+)?(-IV[0-9]+)?$")


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
        bad = f"Invalid value {value} for configuration {self.name}"
        if self.type in ("int", "long"):
            lo, hi = (INT_MIN, INT_MAX) if self.type == "int" else (LONG_MIN, LONG_MAX)
            if not re.fullmatch(r"[+-]?[0-9]+", text) or not lo <= int(text) <= hi:
                raise InvalidConfig(f"{bad}: Not a number of type {self.type.upper()}; expected {self.expected()}")
            number: float = int(text)
        elif self.type == "double":
            try:
                number = float(text)
            except ValueError:
                raise InvalidConfig(f"{bad}: Not a number of type DOUBLE; expected {self.expected()}") from None
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
                f"Invalid value {value} for configuration {name}: must be the literal '*' or a list of "
                "replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...") from None
    return check


def _message_format(value: str) -> None:
    if not _VERSION.match(value):
        raise InvalidConfig(f"Invalid value {value} for configuration message.format.version: not a Kafka "
                            "version; write e.g. 2.4 or 2.4-IV1")


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
            raise InvalidConfig(f"Unknown topic config name: {key}; valid names are listed by "
                                "'kafka-runbook configs --help' (e.g. retention.ms, cleanup.policy)")
        spec.validate(cfg[key])


def validate_broker_config(cfg: Mapping[str, str]) -> None:
    """Only the three dynamic throttle rates may be set on brokers through ZooKeeper here."""
    for key in sorted(cfg):
        spec = BROKER_CONFIGS.get(key)
        if spec is None:
            raise InvalidConfig(f"Unknown broker config name: {key}; through ZooKeeper only "
                                f"{', '.join(BROKER_THROTTLE_KEYS)} can be set (use --bootstrap-server tooling "
                                "for other dynamic broker configs)")
        spec.validate(cfg[key])
