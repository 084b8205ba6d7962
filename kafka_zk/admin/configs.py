"""Topic and broker config overrides, as ``kafka-configs.sh --zookeeper`` handles them (docs/zookeeper.md §7.4).

* :func:`describe_config` — the overrides in ``/config/<type>/<name>`` (``{}`` when none).
* :func:`alter_config` — read-modify-write of the whole override map (add/overwrite keys, then
  delete keys), then ONE v2 change notification, through :meth:`ZkWriter.write_config`.
  Topic keys and values are checked against Kafka 2.4's catalogue; broker entities are a
  broker id or ``<default>`` and accept the three throttle rates (``kafka-configs --zookeeper`` on
  running brokers), or with ``dynamic=True`` (the broker_configs runbook) the other dynamic broker
  configs of :mod:`kafka_zk.broker_configs` and not the throttles.

Failure: deleting a key that is not set raises :class:`InvalidConfig` ``Invalid config(s): k``;
unknown keys or bad values raise :class:`InvalidConfig`; a missing topic raises
:class:`TopicNotFound`; all before anything is written.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kafka_zk import codecs, paths
from kafka_zk.broker_configs import check_override, validate_dynamic_broker_config
from kafka_zk.errors import InvalidConfig, InvalidInput, TopicNotFound, translate
from kafka_zk.topic_configs import validate_broker_config, validate_topic_config
from kafka_zk.validation import check_entity_name, validate_topic_name
from kafka_zk.writer import ZkWriter

ENTITY_TYPES = ("topics", "brokers")
_BROKER_ID = re.compile(r"0|[1-9][0-9]*")


def check_entity(entity_type: str, entity_name: str) -> None:
    """A known entity type and a well-formed name for it."""
    if entity_type not in ENTITY_TYPES:
        raise InvalidInput(f"--entity-type {entity_type!r} is not supported: use one of {', '.join(ENTITY_TYPES)}")
    if entity_type == "topics":
        validate_topic_name(entity_name)
    elif entity_name != paths.BROKER_DEFAULT_ENTITY and not _BROKER_ID.fullmatch(entity_name):
        raise InvalidInput(f"The entity name for brokers must be a valid integer broker id or "
                           f"{paths.BROKER_DEFAULT_ENTITY}, found: {entity_name!r} (ASCII digits, e.g. 3)")
    else:
        check_entity_name(entity_type, entity_name)


def describe_config(client: KazooClient, entity_type: str, entity_name: str) -> dict[str, str]:
    """The overrides stored for one entity, in the znode's JSON order (as Kafka reads them)."""
    check_entity(entity_type, entity_name)
    path = paths.entity_config(entity_type, entity_name)
    try:
        data, _ = client.get(path)
    except NoNodeError:
        return {}
    except Exception as exc:  # noqa: BLE001 - translated
        raise translate(exc, path) from exc
    cfg = codecs.decode_entity_config(data).config
    return dict(cfg)


def list_entities(client: KazooClient, entity_type: str) -> list[str]:
    """Entities that have a config node (``/config/<type>`` children), in the server's order
    (Kafka's kafka-configs lists them unsorted, as ZooKeeper returns them)."""
    try:
        return list(client.get_children(f"{paths.CONFIG}/{entity_type}"))
    except NoNodeError:
        return []


def alter_config(writer: ZkWriter, entity_type: str, entity_name: str,
                 add: Mapping[str, str] | None = None, delete: Iterable[str] = (),
                 dynamic: bool = False) -> dict[str, str]:
    """Apply ``add`` then ``delete`` to the stored overrides; returns the new override map.

    ``dynamic`` (brokers only): check the keys as the broker_configs runbook may change them
    (:func:`kafka_zk.broker_configs.check_override`) instead of the three throttle rates."""
    add = {str(k): str(v) for k, v in (add or {}).items()}
    delete = list(dict.fromkeys(delete))
    check_entity(entity_type, entity_name)
    if not add and not delete:
        raise InvalidInput("nothing to alter: give --add-config k=v and/or --delete-config k")
    if entity_type == "topics":
        if writer.client.exists(paths.topic(entity_name)) is None:
            raise TopicNotFound(f"Topic \"{entity_name}\" does not exist.")
        validate_topic_config(add)
    elif dynamic:
        validate_dynamic_broker_config(entity_name, add)
        for key in delete:
            check_override(entity_name, key, None)
    else:
        validate_broker_config(add)
    current = describe_config(writer.client, entity_type, entity_name)
    missing = [k for k in delete if k not in current]
    if missing:
        raise InvalidConfig(f"Invalid config(s): {','.join(missing)}")
    new = {**current, **add}
    for k in delete:
        new.pop(k, None)
    writer.write_config(entity_type, entity_name, new)
    return {k: new[k] for k in sorted(new)}


def parse_config_pairs(text: str) -> dict[str, str]:
    """``k1=v1,k2=[a,b]`` as kafka-configs takes it (square brackets group values with commas)."""
    out: dict[str, str] = {}
    depth, item, items = 0, "", []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(item)
            item = ""
        else:
            item += ch
    items.append(item)
    for raw in items:
        raw = raw.strip()
        if not raw:
            continue
        if "=" not in raw:
            raise InvalidConfig(f"config {raw!r} is not key=value; write e.g. retention.ms=86400000")
        key, value = raw.split("=", 1)
        key, value = key.strip(), value.strip()
        if not key:
            raise InvalidConfig(f"config {raw!r} has an empty key; write e.g. retention.ms=86400000")
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        out[key] = value
    return out
