"""Topic administration through ZooKeeper, as ``kafka-topics.sh --zookeeper`` does it (2.4).

* :func:`list_topics` — names, optionally without internal topics.
* :func:`create_topic` — validate name, collisions, config, assignment (Kafka's algorithm or an
  explicit one), then write ``/config/topics/<t>`` (always, even empty; no change notification)
  and create ``/brokers/topics/<t>`` as a v1 payload (docs/zookeeper.md §2.3, §8.5). Partition and state
  znodes are the controller's job and are never written here.
* :func:`add_partitions` — rewrite the topic znode with the old map plus the new partitions
  (placed as §2.4 says), keeping every other key (adding/removing lists, topic_id) as it was;
  the write is conditional on the version read.
* :func:`delete_topic` — create ``/admin/delete_topics/<t>``; internal topics refused unless
  ``force``; a missing topic raises :class:`TopicNotFound` unless ``if_exists``.

Every function checks all input before its first write. Failure: the refusals of
:mod:`kafka_zk.validation`, :mod:`kafka_zk.assignment`, :mod:`kafka_zk.topic_configs`, plus
:class:`TopicExists`, :class:`TopicNotFound`; writes fail as :class:`kafka_zk.writer.ZkWriter` says.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Mapping, Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kafka_zk import codecs, paths
from kafka_zk.assignment import (assign_replicas, assignment_for_new_partitions,
                                 validate_manual_assignment)
from kafka_zk.errors import (InvalidInput, InvalidReplicaAssignment, TopicExists, TopicNotFound,
                             translate)
from kafka_zk.model import INTERNAL_TOPICS, Broker, ClusterSnapshot
from kafka_zk.snapshot import read_snapshot
from kafka_zk.topic_configs import validate_topic_config
from kafka_zk.validation import (check_collision, check_partition_count, check_replication_factor,
                                 collision_warning, parse_topic_regex, validate_topic_name)
from kafka_zk.writer import ZkWriter

Source = ClusterSnapshot | KazooClient


@dataclass(frozen=True)
class TopicCreation:
    """What :func:`create_topic` did: ``created`` is False when ``if_not_exists`` found the topic."""

    topic: str
    assignment: Mapping[int, tuple[int, ...]]
    config: Mapping[str, str]
    created: bool
    warning: str | None = None


@dataclass(frozen=True)
class PartitionAddition:
    topic: str
    added: Mapping[int, tuple[int, ...]]


@dataclass(frozen=True)
class DeletionRequest:
    """``outcome``: ``marked``, ``already_marked`` or ``missing`` (only with ``if_exists``)."""

    topic: str
    outcome: str


def _snapshot(source: Source, topics: Sequence[str] | None = None) -> ClusterSnapshot:
    if isinstance(source, ClusterSnapshot):
        return source
    return read_snapshot(source, topics=topics, with_configs=False)


def _topic_names(source: Source) -> list[str]:
    if isinstance(source, ClusterSnapshot):
        return sorted(source.topics)
    try:
        return sorted(source.get_children(paths.BROKER_TOPICS))
    except NoNodeError:
        return []
    except Exception as exc:  # noqa: BLE001 - translated
        raise translate(exc, paths.BROKER_TOPICS) from exc


def list_topics(source: Source, exclude_internal: bool = False) -> list[str]:
    """Topic names under ``/brokers/topics``, sorted."""
    names = _topic_names(source)
    return [n for n in names if not (exclude_internal and n in INTERNAL_TOPICS)]


def marked_for_deletion(source: Source) -> set[str]:
    """Topics with a ``/admin/delete_topics/<t>`` marker (what ``kafka-topics.sh --list`` checks;
    it reads nothing else but ``/brokers/topics``)."""
    if isinstance(source, ClusterSnapshot):
        return {n for n, t in source.topics.items() if t.marked_for_deletion}
    try:
        return set(source.get_children(paths.DELETE_TOPICS))
    except NoNodeError:
        return set()
    except Exception as exc:  # noqa: BLE001 - translated
        raise translate(exc, paths.DELETE_TOPICS) from exc


def match_topics(names: Sequence[str], pattern: str | None) -> list[str]:
    """Kafka's ``--topic`` semantics (:func:`kafka_zk.validation.parse_topic_regex`: ',' means '|',
    matched in full); no ``--topic`` selects every name, a blank one none (Kafka's empty regex)."""
    if pattern is None:
        return list(names)
    rx = parse_topic_regex(pattern, "--topic")
    return [] if rx is None else [n for n in names if rx.fullmatch(n)]


def _brokers_sorted(snap: ClusterSnapshot) -> list[Broker]:
    return [snap.brokers[b] for b in sorted(snap.brokers)]


def create_topic(writer: ZkWriter, source: Source | None, name: str, partitions: int | None, rf: int | None,
                 config: Mapping[str, str] | None = None,
                 replica_assignment: Mapping[int, Sequence[int]] | None = None,
                 disable_rack_aware: bool = False, fixed_start_index: int = -1,
                 rng: random.Random | None = None, if_not_exists: bool = False) -> TopicCreation:
    """Create a topic exactly as the 2.4 ZK tool leaves ZooKeeper (config node, then topic node)."""
    source = writer.client if source is None else source
    config = {str(k): str(v) for k, v in (config or {}).items()}
    validate_topic_name(name)
    names = _topic_names(source)
    if name in names:
        if if_not_exists:
            return TopicCreation(name, {}, config, False)
        raise TopicExists(f"Topic '{name}' already exists.")
    check_collision(name, names)
    validate_topic_config(config)
    snap = _snapshot(source, topics=[])
    if replica_assignment is not None:
        if partitions is not None or rf is not None:
            raise InvalidInput("give either --replica-assignment or --partitions/--replication-factor, not both")
        assignment = {int(p): tuple(r) for p, r in replica_assignment.items()}
        validate_manual_assignment(assignment, snap.live_broker_ids)
    else:
        if partitions is None or rf is None:
            raise InvalidInput("--partitions and --replication-factor are required when no "
                               "--replica-assignment is given")
        check_partition_count(partitions)
        check_replication_factor(rf, len(snap.brokers))
        check_partition_count(partitions, rf, max_bytes=writer.max_bytes)
        assignment = assign_replicas(_brokers_sorted(snap), partitions, rf, fixed_start_index,
                                     rng=rng, rack_mode="disabled" if disable_rack_aware else "enforced")
    config_payload = codecs.EntityConfig(config).encode()
    topic_payload = codecs.TopicAssignment(assignment).encode(version=1)
    writer.check_payload(paths.topic_config(name), config_payload)
    writer.check_payload(paths.topic(name), topic_payload)
    cfg_exists = writer.client.exists(paths.topic_config(name)) is not None
    if cfg_exists:
        writer.set(paths.topic_config(name), config_payload)
    else:
        writer.create(paths.topic_config(name), config_payload, makepath=True)
    writer.create(paths.topic(name), topic_payload, makepath=True)
    return TopicCreation(name, assignment, config, True, collision_warning(name))


def add_partitions(writer: ZkWriter, name: str, new_count: int,
                   replica_assignment: Mapping[int, Sequence[int]] | None = None,
                   disable_rack_aware: bool = False) -> PartitionAddition:
    """Grow ``name`` to ``new_count`` partitions (Kafka's ``--alter --partitions``).

    ``replica_assignment`` lists every partition as the CLI does (``0:1,1:2,...``); entries for
    existing partitions are dropped, as Kafka does.
    """
    validate_topic_name(name)
    if name in INTERNAL_TOPICS:
        raise InvalidInput(f"The number of partitions for the internal topic {name} cannot be changed.")
    path = paths.topic(name)
    try:
        data, stat = writer.client.get(path)
    except NoNodeError:
        raise TopicNotFound(f"Topic '{name}' does not exist as expected") from None
    except Exception as exc:  # noqa: BLE001 - translated
        raise translate(exc, path) from exc
    if writer.client.exists(paths.delete_topic_marker(name)) is not None:
        raise InvalidInput(f"Topic {name} is marked for deletion: partitions cannot be added "
                           "(the controller would revert them)")
    existing = codecs.decode_topic_assignment(data)
    current = len(existing.partitions)
    rf_now = len(existing.partitions[min(existing.partitions)]) if existing.partitions else 1
    check_partition_count(new_count, rf_now, max_bytes=writer.max_bytes)
    snap = read_snapshot(writer.client, topics=[], with_configs=False)
    rack_mode = "disabled" if disable_rack_aware else "enforced"
    if replica_assignment is None:
        added = assignment_for_new_partitions(existing, _brokers_sorted(snap), new_count, name, rack_mode)
    else:
        if new_count <= current:
            raise InvalidInput(f"The number of partitions for a topic can only be increased. Topic {name} "
                               f"currently has {current} partitions, {new_count} would not be an increase.")
        added = {int(p): tuple(r) for p, r in replica_assignment.items() if int(p) >= current}
        if len(added) != new_count - current or sorted(added) != list(range(current, new_count)):
            raise InvalidReplicaAssignment(
                f"Increasing the number of partitions by {new_count - current} but {len(added)} "
                "assignments provided.")
        rf = len(existing.partitions[min(existing.partitions)])
        bad = {p: r for p, r in added.items() if len(r) != rf}
        if bad:
            raise InvalidReplicaAssignment(
                f"Inconsistent replication factor between partitions, partition 0 has {rf} while partitions "
                f"[{', '.join(map(str, bad))}] have replication factors "
                f"[{', '.join(str(len(r)) for r in bad.values())}], respectively.")
        validate_manual_assignment({p - current: r for p, r in added.items()}, snap.live_broker_ids)
    doc = json.loads(data)
    doc["partitions"] = {**doc["partitions"], **{str(p): list(r) for p, r in added.items()}}
    payload = codecs.dumps(doc)
    writer.set(path, payload, version=stat.version)
    return PartitionAddition(name, added)


def delete_topic(writer: ZkWriter, source: Source | None, name: str, force: bool = False,
                 if_exists: bool = False) -> DeletionRequest:
    """Request deletion: create ``/admin/delete_topics/<t>`` (docs/zookeeper.md §2.9, §8.6)."""
    source = writer.client if source is None else source
    if name in INTERNAL_TOPICS and not force:
        raise InvalidInput(f"Topic {name} is a kafka internal topic and is not allowed to be marked for "
                           "deletion. (pass --force only if you really mean it)")
    if name not in _topic_names(source):
        if if_exists:
            return DeletionRequest(name, "missing")
        raise TopicNotFound(f"Topic '{name}' does not exist as expected (use --if-exists to ignore)")
    marker = paths.delete_topic_marker(name)
    if writer.client.exists(marker) is not None:
        return DeletionRequest(name, "already_marked")
    writer.create(marker, None, makepath=True)
    return DeletionRequest(name, "marked")
