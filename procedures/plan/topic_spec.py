"""The topic spec of the topic_changes runbook: which topics should exist, and how.

YAML, one entry per topic (docs/runbooks/topic_changes.md shows a full example)::

    topics:
      orders:
        partitions: 12            # create with, or grow to, this many (never fewer: Kafka cannot shrink)
        replication_factor: 3     # for a new topic; a change of an existing one goes to change_replication_factor
        configs:                  # the overrides this spec manages (others are left as they are)
          retention.ms: "604800000"
      legacy-events:
        delete: true              # only when said so, through delete_topics' protections

Every key is checked with the project's validation (Kafka's topic-name rules, the topic config
keys and values Kafka 2.4 accepts, counts in range) before anything is read from the cluster.

Failure: :class:`TopicSpecError` naming the file, the line and the fix; a spec with any problem
is refused whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import yaml

from kafka_zk.errors import InvalidInput
from kafka_zk.topic_configs import validate_topic_config
from kafka_zk.validation import INT_MAX, validate_topic_name
from procedures.plan.declarative import spec_entries
from procedures.reports.yaml_lines import LineReader

_TOPIC_KEYS = {"partitions", "replication_factor", "configs", "delete"}


class TopicSpecError(InvalidInput):
    """The topic spec is malformed; the message names the line and the fix."""


@dataclass(frozen=True)
class TopicSpec:
    """What the spec says about one topic."""

    name: str
    partitions: int | None = None
    replication_factor: int | None = None
    configs: Mapping[str, str] = field(default_factory=dict)
    delete: bool = False


def parse_topic_spec(text: str, path: str = "topic spec") -> tuple[TopicSpec, ...]:
    """Parse and check the whole spec (see module docstring)."""
    reader, topics = spec_entries(text, path, TopicSpecError, "topics", "topics", "name at least one topic")
    return tuple(_topic(reader, name, node) for name, node in topics.items())


def _topic(reader: LineReader, name: str, node: yaml.Node) -> TopicSpec:
    try:
        validate_topic_name(name)
    except InvalidInput as e:
        raise reader.error(node, f"topic {name!r}: {e}", "rename it") from None
    f = reader.mapping(node, f"topic {name!r}", _TOPIC_KEYS)
    if not f:
        raise reader.error(node, f"topic {name!r} says nothing", "give partitions/replication_factor/configs or "
                                                                   "delete: true")
    delete = reader.boolean(f["delete"], f"delete of {name!r}") if "delete" in f else False
    if delete and len(f) > 1:
        raise reader.error(node, f"topic {name!r} is to be deleted and also configured",
                           "keep only 'delete: true', or remove it")
    partitions = _count(reader, f, "partitions", name, INT_MAX)
    rf = _count(reader, f, "replication_factor", name, 32767)
    configs: dict[str, str] = {}
    if "configs" in f:
        entries = reader.mapping(f["configs"], f"configs of {name!r}", None)
        for key, value_node in entries.items():
            configs[key] = reader.scalar(value_node, f"config {key!r} of {name!r}")
        try:
            validate_topic_config(configs)
        except InvalidInput as e:
            raise reader.error(f["configs"], f"configs of {name!r}: {e}", "fix the key or value") from None
    return TopicSpec(name, partitions, rf, configs, delete)


def _count(reader: LineReader, f: Mapping[str, yaml.Node], key: str, name: str, maximum: int) -> int | None:
    if key not in f:
        return None
    value = reader.integer(f[key], f"{key} of {name!r}", 1)
    if value > maximum:
        raise reader.error(f[key], f"{key} of {name!r} is {value}, more than {maximum}", f"give at most {maximum}")
    return value
