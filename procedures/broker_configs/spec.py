"""The broker config spec of the broker_configs runbook: which dynamic overrides to set or delete.

YAML, one entry per entity: a broker id, or ``default`` (``<default>`` also accepted) for the
cluster-wide default of ``/config/brokers/<default>`` (docs/runbooks/broker_configs.md shows a
full example)::

    brokers:
      default:
        set:
          log.cleaner.threads: "2"
        delete: [log.retention.ms]
      3:
        set:
          num.io.threads: "16"

Every key is checked against Kafka 2.4's dynamic broker configs (:mod:`kafka_zk.broker_configs`:
unknown, read-only, throttle, security and per-broker-only-at-the-default keys refused; values as
Kafka parses them) before anything is read from the cluster.

Failure: :class:`BrokerConfigSpecError` naming the file, the line, the problem and the fix; a spec
with any problem is refused whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import yaml

from kafka_zk import paths
from kafka_zk.admin.configs import check_entity
from kafka_zk.broker_configs import check_override
from kafka_zk.errors import InvalidInput
from procedures.plan.declarative import spec_entries
from procedures.reports.yaml_lines import LineReader

_ENTITY_KEYS = {"set", "delete"}


class BrokerConfigSpecError(InvalidInput):
    """The broker config spec is malformed; the message names the line and the fix."""


@dataclass(frozen=True)
class EntitySpec:
    """What the spec says about one entity (a broker id or ``<default>``)."""

    entity: str
    set: Mapping[str, str] = field(default_factory=dict)
    delete: tuple[str, ...] = ()


def parse_broker_config_spec(text: str, path: str = "broker config spec") -> tuple[EntitySpec, ...]:
    """Parse and check the whole spec (see module docstring)."""
    reader, entities = spec_entries(text, path, BrokerConfigSpecError, "brokers", "broker ids or default",
                                    "name a broker id or default")
    out = [_entity(reader, name, node) for name, node in entities.items()]
    seen: dict[str, str] = {}
    for (name, node), spec in zip(entities.items(), out):
        if spec.entity in seen:
            raise reader.error(node, f"{name!r} and {seen[spec.entity]!r} name the same entity", "merge them")
        seen[spec.entity] = name
    return tuple(out)


def _entity(reader: LineReader, name: str, node: yaml.Node) -> EntitySpec:
    entity = paths.BROKER_DEFAULT_ENTITY if name in ("default", paths.BROKER_DEFAULT_ENTITY) else name
    try:
        check_entity("brokers", entity)
    except InvalidInput as e:
        raise reader.error(node, f"entity {name!r}: {e}", "write a broker id or default") from None
    f = reader.mapping(node, f"entity {name!r}", _ENTITY_KEYS)
    if not f:
        raise reader.error(node, f"entity {name!r} says nothing", "give set: and/or delete:")
    wanted: dict[str, str] = {}
    if "set" in f:
        for key, value_node in reader.mapping(f["set"], f"set of {name!r}", None).items():
            wanted[key] = reader.scalar(value_node, f"{key} of {name!r}")
            _check(reader, value_node, entity, key, wanted[key])
    deleted: list[str] = []
    if "delete" in f:
        if not isinstance(f["delete"], yaml.SequenceNode) or not f["delete"].value:
            raise reader.error(f["delete"], f"delete of {name!r} must be a non-empty list of keys",
                               "write e.g. delete: [log.retention.ms]")
        for item in f["delete"].value:
            key = reader.scalar(item, f"an entry of delete of {name!r}")
            if key in wanted or key in deleted:
                raise reader.error(item, f"{key} of {name!r} is listed twice (set and delete, or delete twice)",
                                   "keep one")
            _check(reader, item, entity, key, None)
            deleted.append(key)
    return EntitySpec(entity, wanted, tuple(deleted))


def _check(reader: LineReader, node: yaml.Node, entity: str, key: str, value: str | None) -> None:
    try:
        check_override(entity, key, value)
    except InvalidInput as e:
        raise BrokerConfigSpecError(f"{reader.path}, line {node.start_mark.line + 1}: {e}") from None
