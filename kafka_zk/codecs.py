"""JSON codecs for every znode payload of docs/zookeeper.md §1: one frozen dataclass per payload.

Each ``decode_*`` reads every version Kafka 1.x–3.x ever wrote (lenient: extra keys ignored,
optional keys defaulted) except ``/admin/reassign_partitions``, which Kafka 2.0+ binds
strictly (``strict=True`` reproduces that). Each ``encode`` writes what a Kafka 2.4+ cluster
accepts, compactly (no whitespace), as Kafka's Jackson writer does.

Failure: a payload that is not JSON, or lacks a mandatory field, raises
:class:`kafka_zk.errors.InvalidPayload` naming the path kind and the problem.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple

import msgspec

from kafka_zk.errors import InvalidPayload


class TopicPartition(NamedTuple):
    """A (topic, partition) pair; sorts by topic then partition id."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def tp_key(tp: TopicPartition) -> str:
    """``topic:partition``, the key of a partition in JSON artifacts (a topic name never contains ``:``,
    docs/zookeeper.md §6.2)."""
    return f"{tp.topic}:{tp.partition}"


def tp_of(key: str) -> TopicPartition:
    """The partition a :func:`tp_key` names."""
    topic, _, partition = key.rpartition(":")
    return TopicPartition(topic, int(partition))


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON, as Kafka writes it."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _loads(data: bytes | str | None, what: str) -> Any:
    if data is None or data == b"" or data == "":
        raise InvalidPayload(f"{what}: the znode has no data")
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidPayload(f"{what}: not valid JSON ({exc})") from None
    except RecursionError:
        raise InvalidPayload(f"{what}: JSON nested too deeply to be a Kafka payload") from None


def _obj(data: bytes | str | None, what: str) -> dict[str, Any]:
    doc = _loads(data, what)
    if not isinstance(doc, dict):
        raise InvalidPayload(f"{what}: expected a JSON object, got {type(doc).__name__}")
    return doc


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value.strip()):
            return int(value)
        raise InvalidPayload(f"{what}: expected an integer, got {value!r}")
    return value


def _int_list(value: Any, what: str) -> tuple[int, ...]:
    if type(value) is list:         # the usual case: plain ints, checked without a call per id
        for v in value:
            if type(v) is not int:
                break
        else:
            return tuple(value)
    elif not isinstance(value, list):
        raise InvalidPayload(f"{what}: expected a list of broker ids, got {value!r}")
    return tuple(_int(v, what) for v in value)


def _partition_map(value: Any, what: str) -> dict[int, tuple[int, ...]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidPayload(f"{what}: expected an object keyed by partition id, got {value!r}")
    out: dict[int, tuple[int, ...]] = {}
    for key, replicas in value.items():
        try:
            pid = int(key)
        except (TypeError, ValueError):
            raise InvalidPayload(f"{what}: partition key {key!r} is not an integer") from None
        out[pid] = _int_list(replicas, f"{what}[{key}]")
    return dict(sorted(out.items()))


def _encode_partition_map(m: Mapping[int, tuple[int, ...]]) -> dict[str, list[int]]:
    return {str(p): list(r) for p, r in sorted(m.items())}


# --------------------------------------------------------------------------------------------
# /controller and /controller_epoch


@dataclass(frozen=True)
class ControllerInfo:
    """``/controller`` (ephemeral): the active controller. v1 (1.x–3.3), v2 adds kraftControllerEpoch."""

    broker_id: int
    timestamp: str = "0"
    version: int = 1
    kraft_controller_epoch: int | None = None

    def encode(self) -> bytes:
        doc: dict[str, Any] = {"version": self.version, "brokerid": self.broker_id,
                               "timestamp": self.timestamp}
        if self.version >= 2:
            doc["kraftControllerEpoch"] = (-1 if self.kraft_controller_epoch is None
                                           else self.kraft_controller_epoch)
        return dumps(doc)


def decode_controller(data: bytes | str | None) -> ControllerInfo:
    doc = _obj(data, "/controller")
    if "brokerid" not in doc:
        raise InvalidPayload("/controller: missing 'brokerid'")
    kce = doc.get("kraftControllerEpoch")
    return ControllerInfo(
        broker_id=_int(doc["brokerid"], "/controller brokerid"),
        timestamp=str(doc.get("timestamp", "0")),
        version=_int(doc.get("version", 1), "/controller version"),
        kraft_controller_epoch=None if kce is None else _int(kce, "kraftControllerEpoch"),
    )


def encode_controller_epoch(epoch: int) -> bytes:
    """``/controller_epoch`` is a plain decimal integer, not JSON."""
    return str(int(epoch)).encode("ascii")


def decode_controller_epoch(data: bytes | str | None) -> int:
    if data is None or data in (b"", ""):
        raise InvalidPayload("/controller_epoch: the znode has no data")
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    try:
        return int(text.strip())
    except ValueError:
        raise InvalidPayload(f"/controller_epoch: {text!r} is not an integer") from None


# --------------------------------------------------------------------------------------------
# /brokers/ids/<id>


@dataclass(frozen=True)
class BrokerRegistration:
    """``/brokers/ids/<id>`` (ephemeral). Read v1–v5; write v4 (IBP 0.10.0+) or v5 (2.7+)."""

    host: str | None
    port: int
    endpoints: tuple[str, ...] = ()
    rack: str | None = None
    jmx_port: int = -1
    timestamp: str = "0"
    listener_security_protocol_map: Mapping[str, str] | None = None
    features: Mapping[str, Any] | None = None
    version: int = 4

    def encode(self) -> bytes:
        doc: dict[str, Any] = {"version": self.version, "host": self.host, "port": self.port,
                               "jmx_port": self.jmx_port, "timestamp": self.timestamp}
        if self.version >= 2:
            doc["endpoints"] = list(self.endpoints)
        if self.version >= 4:
            doc["listener_security_protocol_map"] = dict(
                self.listener_security_protocol_map
                or {e.split("://", 1)[0]: e.split("://", 1)[0] for e in self.endpoints})
        if self.version >= 5:
            doc["features"] = dict(self.features or {})
        if self.rack is not None and self.version >= 3:
            doc["rack"] = self.rack
        return dumps(doc)


def decode_broker_registration(data: bytes | str | None) -> BrokerRegistration:
    doc = _obj(data, "/brokers/ids/<id>")
    endpoints = doc.get("endpoints") or []
    if not isinstance(endpoints, list):
        raise InvalidPayload("/brokers/ids/<id>: 'endpoints' must be a list")
    lspm = doc.get("listener_security_protocol_map")
    return BrokerRegistration(
        host=doc.get("host"),
        port=_int(doc.get("port", -1), "/brokers/ids/<id> port"),
        endpoints=tuple(str(e) for e in endpoints),
        rack=doc.get("rack"),
        jmx_port=_int(doc.get("jmx_port", -1), "/brokers/ids/<id> jmx_port"),
        timestamp=str(doc.get("timestamp", "0")),
        listener_security_protocol_map=dict(lspm) if isinstance(lspm, dict) else None,
        features=doc.get("features") if isinstance(doc.get("features"), dict) else None,
        version=_int(doc.get("version", 1), "/brokers/ids/<id> version"),
    )


# --------------------------------------------------------------------------------------------
# /brokers/topics/<t>


@dataclass(frozen=True)
class TopicAssignment:
    """``/brokers/topics/<t>``: replica assignment; v2 (2.4+) adds adding/removing, v3 topic_id.

    ``partitions[p]`` is the ordered replica list (first = preferred leader); during a 2.4+
    reassignment it is target ∪ origin, with ``adding``/``removing`` holding the differences.
    """

    partitions: Mapping[int, tuple[int, ...]]
    adding: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    removing: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    topic_id: str | None = None
    version: int = 1

    def origin(self, p: int) -> tuple[int, ...]:
        """Replicas before the in-flight reassignment: RS − ARS."""
        adding = set(self.adding.get(p, ()))
        return tuple(r for r in self.partitions[p] if r not in adding)

    def target(self, p: int) -> tuple[int, ...]:
        """Replicas after the in-flight reassignment: RS − RRS."""
        removing = set(self.removing.get(p, ()))
        return tuple(r for r in self.partitions[p] if r not in removing)

    def is_reassigning(self, p: int) -> bool:
        return bool(self.adding.get(p)) or bool(self.removing.get(p))

    def encode(self, version: int | None = None) -> bytes:
        """Write ``version`` (default: the smallest that holds every field: 1, 2 or 3).

        The controller emulator passes 2 (what a 2.4–2.7 controller always writes).
        """
        if version is None:
            version = 3 if self.topic_id else (2 if (self.adding or self.removing) else 1)
        doc: dict[str, Any] = {"version": version}
        if version >= 3 and self.topic_id:
            doc["topic_id"] = self.topic_id
        doc["partitions"] = _encode_partition_map(self.partitions)
        if version >= 2:
            doc["adding_replicas"] = _encode_partition_map(
                {p: r for p, r in self.adding.items() if r})
            doc["removing_replicas"] = _encode_partition_map(
                {p: r for p, r in self.removing.items() if r})
        return dumps(doc)


class _TopicDoc(msgspec.Struct):
    """The usual topic znode, typed: decoded and checked in one pass, ~2x faster than the general
    path (a million partitions read per plan). Whatever it does not accept exactly (a lenient
    value, a bad one) goes through the general path, which accepts or refuses it as always. Keys
    stay strings here and are read by ``int`` as the general path reads them, so two spellings of
    one partition id ("0", "-0") resolve the same way."""

    partitions: dict[str, tuple[int, ...]]
    adding_replicas: dict[str, tuple[int, ...]] | None = None
    removing_replicas: dict[str, tuple[int, ...]] | None = None
    topic_id: str | None = None
    version: int = 1


_TOPIC_DOC = msgspec.json.Decoder(_TopicDoc)


def _by_int_key(m: Mapping[str, tuple[int, ...]] | None) -> dict[int, tuple[int, ...]]:
    out: dict[int, tuple[int, ...]] = {}
    for key, replicas in (m or {}).items():
        out[int(key)] = replicas
    return dict(sorted(out.items()))


def decode_topic_assignment(data: bytes | str | None) -> TopicAssignment:
    if data:
        try:
            doc = _TOPIC_DOC.decode(data)
            partitions, adding, removing = (_by_int_key(doc.partitions), _by_int_key(doc.adding_replicas),
                                            _by_int_key(doc.removing_replicas))
        except (msgspec.MsgspecError, ValueError):
            pass
        else:
            return TopicAssignment(partitions=partitions, adding={p: r for p, r in adding.items() if r},
                                   removing={p: r for p, r in removing.items() if r},
                                   topic_id=doc.topic_id, version=doc.version)
    return _decode_topic_assignment_checked(data)


def _decode_topic_assignment_checked(data: bytes | str | None) -> TopicAssignment:
    doc = _obj(data, "/brokers/topics/<t>")
    if "partitions" not in doc:
        raise InvalidPayload("/brokers/topics/<t>: missing 'partitions'")
    adding = _partition_map(doc.get("adding_replicas"), "adding_replicas")
    removing = _partition_map(doc.get("removing_replicas"), "removing_replicas")
    return TopicAssignment(
        partitions=_partition_map(doc["partitions"], "partitions"),
        adding={p: r for p, r in adding.items() if r},
        removing={p: r for p, r in removing.items() if r},
        topic_id=doc.get("topic_id"),
        version=_int(doc.get("version", 1), "/brokers/topics/<t> version"),
    )


# --------------------------------------------------------------------------------------------
# /brokers/topics/<t>/partitions/<p>/state


@dataclass(frozen=True)
class PartitionState:
    """``/brokers/topics/<t>/partitions/<p>/state``: leader (−1 = none), leader epoch, ISR."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    version: int = 1
    leader_recovery_state: int | None = None

    def encode(self) -> bytes:
        doc: dict[str, Any] = {"controller_epoch": self.controller_epoch, "leader": self.leader,
                               "version": self.version, "leader_epoch": self.leader_epoch,
                               "isr": list(self.isr)}
        if self.leader_recovery_state:
            doc["leader_recovery_state"] = self.leader_recovery_state
        return dumps(doc)


class _StateDoc(msgspec.Struct):
    """The usual partition-state znode, typed (as :class:`_TopicDoc`: anything it does not accept
    exactly goes through the checked path; a plan reads up to hundreds of thousands of these)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int = 0
    version: int = 1
    leader_recovery_state: int | None = None


_STATE_DOC = msgspec.json.Decoder(_StateDoc)


def decode_partition_state(data: bytes | str | None) -> PartitionState:
    if data:
        try:
            d = _STATE_DOC.decode(data)
        except msgspec.MsgspecError:
            pass
        else:
            lrs = d.leader_recovery_state
            return PartitionState(d.leader, d.leader_epoch, d.isr, d.controller_epoch, d.version, lrs or None)
    return _decode_partition_state_checked(data)


def _decode_partition_state_checked(data: bytes | str | None) -> PartitionState:
    doc = _obj(data, "partition state")
    for key in ("leader", "leader_epoch", "isr"):
        if key not in doc:
            raise InvalidPayload(f"partition state: missing {key!r}")
    lrs = doc.get("leader_recovery_state")
    return PartitionState(
        leader=_int(doc["leader"], "leader"),
        leader_epoch=_int(doc["leader_epoch"], "leader_epoch"),
        isr=_int_list(doc["isr"], "isr"),
        controller_epoch=_int(doc.get("controller_epoch", 0), "controller_epoch"),
        version=_int(doc.get("version", 1), "version"),
        leader_recovery_state=None if lrs in (None, 0) else _int(lrs, "leader_recovery_state"),
    )


# --------------------------------------------------------------------------------------------
# /admin/reassign_partitions


@dataclass(frozen=True)
class ReassignmentEntry:
    """One entry of ``/admin/reassign_partitions``: exactly topic, partition, replicas."""

    topic: str
    partition: int
    replicas: tuple[int, ...]

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class ReassignmentRequest:
    """``/admin/reassign_partitions``: ``{"version":1,"partitions":[{topic,partition,replicas}]}``.

    Never carries ``log_dirs``: 2.0+ controllers reject unknown fields and 2.4+ then leave the
    node in place forever (docs/zookeeper.md §1.7).
    """

    entries: tuple[ReassignmentEntry, ...]
    version: int = 1

    def targets(self) -> dict[TopicPartition, tuple[int, ...]]:
        return {e.tp: e.replicas for e in self.entries}

    def encode(self) -> bytes:
        return dumps({"version": self.version, "partitions": [
            {"topic": e.topic, "partition": e.partition, "replicas": list(e.replicas)}
            for e in self.entries]})


_REASSIGN_ENTRY_KEYS = {"topic", "partition", "replicas"}


def decode_reassignment(data: bytes | str | None, strict: bool = True) -> ReassignmentRequest:
    """Decode ``/admin/reassign_partitions``; ``strict`` rejects unknown keys as 2.0+ does."""
    doc = _obj(data, "/admin/reassign_partitions")
    if strict:
        unknown = set(doc) - {"version", "partitions"}
        if unknown:
            raise InvalidPayload(f"/admin/reassign_partitions: unrecognized field {sorted(unknown)[0]!r}")
    parts = doc.get("partitions")
    if not isinstance(parts, list):
        raise InvalidPayload("/admin/reassign_partitions: 'partitions' must be a list")
    entries = []
    for i, item in enumerate(parts):
        if not isinstance(item, dict):
            raise InvalidPayload(f"/admin/reassign_partitions: entry {i} is not an object")
        if strict:
            unknown = set(item) - _REASSIGN_ENTRY_KEYS
            if unknown:
                raise InvalidPayload(
                    f"/admin/reassign_partitions: unrecognized field {sorted(unknown)[0]!r} in entry {i}")
        missing = _REASSIGN_ENTRY_KEYS - set(item)
        if missing:
            raise InvalidPayload(f"/admin/reassign_partitions: entry {i} lacks {sorted(missing)}")
        entries.append(ReassignmentEntry(str(item["topic"]), _int(item["partition"], "partition"),
                                         _int_list(item["replicas"], "replicas")))
    return ReassignmentRequest(tuple(entries), _int(doc.get("version", 1), "version"))


# --------------------------------------------------------------------------------------------
# /admin/preferred_replica_election


@dataclass(frozen=True)
class PreferredElectionRequest:
    """``/admin/preferred_replica_election``: ``{"version":1,"partitions":[{topic,partition}]}``."""

    partitions: tuple[TopicPartition, ...]
    version: int = 1

    def encode(self) -> bytes:
        return dumps({"version": self.version, "partitions": [
            {"topic": tp.topic, "partition": tp.partition} for tp in self.partitions]})


def decode_preferred_election(data: bytes | str | None) -> PreferredElectionRequest:
    doc = _obj(data, "/admin/preferred_replica_election")
    parts = doc.get("partitions")
    if not isinstance(parts, list):
        raise InvalidPayload("/admin/preferred_replica_election: 'partitions' must be a list")
    out = []
    for i, item in enumerate(parts):
        if not isinstance(item, dict) or "topic" not in item or "partition" not in item:
            raise InvalidPayload(f"/admin/preferred_replica_election: entry {i} needs topic and partition")
        out.append(TopicPartition(str(item["topic"]), _int(item["partition"], "partition")))
    return PreferredElectionRequest(tuple(out), _int(doc.get("version", 1), "version"))


# --------------------------------------------------------------------------------------------
# /config/<type>/<name> and /config/changes/config_change_<seq>


@dataclass(frozen=True)
class EntityConfig:
    """``/config/<type>/<name>``: the complete override set; every value is a string."""

    config: Mapping[str, str]
    version: int = 1

    def encode(self) -> bytes:
        return dumps({"version": self.version, "config": {k: self.config[k] for k in sorted(self.config)}})


def decode_entity_config(data: bytes | str | None) -> EntityConfig:
    if data is None or data in (b"", ""):
        return EntityConfig({})
    doc = _obj(data, "/config/<type>/<name>")
    cfg = doc.get("config") or {}
    if not isinstance(cfg, dict):
        raise InvalidPayload("/config/<type>/<name>: 'config' must be an object")
    return EntityConfig({str(k): "" if v is None else str(v) for k, v in cfg.items()},
                        _int(doc.get("version", 1), "version"))


@dataclass(frozen=True)
class ConfigChangeNotification:
    """``/config/changes/config_change_<seq>``: v2 ``{"version":2,"entity_path":"topics/foo"}``.

    v1 (``entity_type`` + ``entity_name``, topics and clients only) is read, never written.
    """

    entity_path: str
    version: int = 2

    @property
    def entity_type(self) -> str:
        return self.entity_path.split("/", 1)[0]

    @property
    def entity_name(self) -> str:
        return self.entity_path.split("/", 1)[1] if "/" in self.entity_path else ""

    def encode(self) -> bytes:
        return dumps({"version": 2, "entity_path": self.entity_path})


def decode_config_change(data: bytes | str | None) -> ConfigChangeNotification:
    doc = _obj(data, "config change notification")
    version = _int(doc.get("version", 1), "version")
    if version == 1:
        etype, ename = doc.get("entity_type"), doc.get("entity_name")
        if etype not in ("topics", "clients") or not isinstance(ename, str):
            raise InvalidPayload("config change v1: entity_type must be topics or clients, with entity_name")
        return ConfigChangeNotification(f"{etype}/{ename}", 1)
    path = doc.get("entity_path")
    if not isinstance(path, str) or "/" not in path:
        raise InvalidPayload("config change v2: 'entity_path' must look like '<type>/<name>'")
    return ConfigChangeNotification(path, version)


# --------------------------------------------------------------------------------------------
# notifications written by brokers


@dataclass(frozen=True)
class IsrChangeNotification:
    """``/isr_change_notification/isr_change_<seq>``: partitions whose ISR a leader changed."""

    partitions: tuple[TopicPartition, ...]
    version: int = 1

    def encode(self) -> bytes:
        return dumps({"version": self.version, "partitions": [
            {"topic": tp.topic, "partition": tp.partition} for tp in self.partitions]})


def decode_isr_change(data: bytes | str | None) -> IsrChangeNotification:
    req = decode_preferred_election(data)  # identical shape
    return IsrChangeNotification(req.partitions, req.version)


@dataclass(frozen=True)
class LogDirEvent:
    """``/log_dir_event_notification/log_dir_event_<seq>``: event 1 = log dir failure."""

    broker: int
    event: int = 1
    version: int = 1

    def encode(self) -> bytes:
        return dumps({"version": self.version, "broker": self.broker, "event": self.event})


def decode_log_dir_event(data: bytes | str | None) -> LogDirEvent:
    doc = _obj(data, "log dir event")
    return LogDirEvent(_int(doc.get("broker"), "broker"), _int(doc.get("event", 1), "event"),
                       _int(doc.get("version", 1), "version"))


# --------------------------------------------------------------------------------------------
# cluster-wide singletons


@dataclass(frozen=True)
class ClusterId:
    """``/cluster/id``: ``{"version":"1","id":"<22-char base64>"}`` — version is a string."""

    id: str
    version: str = "1"

    def encode(self) -> bytes:
        return dumps({"version": self.version, "id": self.id})


def decode_cluster_id(data: bytes | str | None) -> ClusterId:
    doc = _obj(data, "/cluster/id")
    if not isinstance(doc.get("id"), str):
        raise InvalidPayload("/cluster/id: missing 'id'")
    return ClusterId(doc["id"], str(doc.get("version", "1")))


@dataclass(frozen=True)
class ProducerIdBlock:
    """``/latest_producer_id_block``: bounds are longs written as strings, both inclusive."""

    broker: int
    block_start: int
    block_end: int
    version: int = 1

    def encode(self) -> bytes:
        return dumps({"version": self.version, "broker": self.broker,
                      "block_start": str(self.block_start), "block_end": str(self.block_end)})


def decode_producer_id_block(data: bytes | str | None) -> ProducerIdBlock:
    doc = _obj(data, "/latest_producer_id_block")
    return ProducerIdBlock(_int(doc.get("broker"), "broker"), _int(doc.get("block_start"), "block_start"),
                           _int(doc.get("block_end"), "block_end"), _int(doc.get("version", 1), "version"))


# --------------------------------------------------------------------------------------------
# tool files (not znodes): the JSON users hand to kafka-reassign-partitions / election tools


@dataclass(frozen=True)
class ReassignmentFileEntry:
    """One entry of the tool's reassignment JSON (docs/zookeeper.md §5.1); ``log_dirs`` is tool-only."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...] | None = None

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


def decode_reassignment_file(text: bytes | str) -> tuple[ReassignmentFileEntry, ...]:
    """Parse what ``kafka-reassign-partitions --execute`` takes, with the tool's own checks."""
    doc = _obj(text, "reassignment JSON file")
    version = doc.get("version", 1)
    if version != 1:
        raise InvalidPayload(f"reassignment JSON file: version {version!r} is not supported (only 1)")
    parts = doc.get("partitions")
    if not isinstance(parts, list) or not parts:
        raise InvalidPayload("Partition reassignment list cannot be empty")
    out = []
    for i, item in enumerate(parts):
        if not isinstance(item, dict) or not {"topic", "partition", "replicas"} <= set(item):
            raise InvalidPayload(f"reassignment JSON file: entry {i} needs topic, partition and replicas")
        replicas = _int_list(item["replicas"], f"entry {i} replicas")
        log_dirs = item.get("log_dirs")
        if log_dirs is not None:
            if not isinstance(log_dirs, list) or len(log_dirs) != len(replicas):
                raise InvalidPayload(
                    f"Size of replicas list {list(replicas)} is different from size of log dirs list "
                    f"{log_dirs} for partition {item['topic']}-{item['partition']}")
            log_dirs = tuple(str(d) for d in log_dirs)
        out.append(ReassignmentFileEntry(str(item["topic"]), _int(item["partition"], "partition"),
                                         replicas, log_dirs))
    return tuple(out)


def encode_reassignment_file(entries: Mapping[TopicPartition, tuple[int, ...]],
                             with_log_dirs: bool = False) -> bytes:
    """Kafka's reassignment JSON, entries sorted by (topic, partition) as 2.6+ prints them."""
    items = []
    for tp in sorted(entries):
        item: dict[str, Any] = {"topic": tp.topic, "partition": tp.partition,
                                "replicas": list(entries[tp])}
        if with_log_dirs:
            item["log_dirs"] = ["any"] * len(entries[tp])
        items.append(item)
    return dumps({"version": 1, "partitions": items})


def decode_election_file(text: bytes | str) -> tuple[TopicPartition, ...]:
    """Parse the ``--path-to-json-file`` of kafka-preferred-replica-election (docs/zookeeper.md §7.1)."""
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise InvalidPayload("Preferred replica election data is empty") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("partitions"), list):
        raise InvalidPayload("Preferred replica election data is empty")
    out: list[TopicPartition] = []
    for i, item in enumerate(doc["partitions"]):
        if not isinstance(item, dict) or "topic" not in item or "partition" not in item:
            raise InvalidPayload(f"Preferred replica election data: entry {i} needs topic and partition")
        out.append(TopicPartition(str(item["topic"]), _int(item["partition"], "partition")))
    dups = sorted(tp for tp, n in Counter(out).items() if n > 1)
    if dups:
        raise InvalidPayload("Preferred replica election data contains duplicate partitions: "
                             + ",".join(str(tp) for tp in dups))
    return tuple(out)


def decode_topics_to_move(text: bytes | str) -> tuple[str, ...]:
    """Parse ``--topics-to-move-json-file``: ``{"version":1,"topics":[{"topic":"foo"}]}``."""
    doc = _obj(text, "topics-to-move JSON file")
    if doc.get("version", 1) != 1:
        raise InvalidPayload("topics-to-move JSON file: only version 1 is supported")
    topics = doc.get("topics")
    if not isinstance(topics, list) or not topics:
        raise InvalidPayload("topics-to-move JSON file: 'topics' must be a non-empty list")
    names = []
    for i, item in enumerate(topics):
        if not isinstance(item, dict) or not isinstance(item.get("topic"), str):
            raise InvalidPayload(f"topics-to-move JSON file: entry {i} needs a 'topic' string")
        names.append(item["topic"])
    dups = sorted(n for n, c in Counter(names).items() if c > 1)
    if dups:
        raise InvalidPayload(f"List of topics to reassign contains duplicate entries: {','.join(dups)}")
    return tuple(names)
