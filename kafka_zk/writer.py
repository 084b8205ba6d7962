"""The one write gate: every ZooKeeper write of the product goes through :class:`ZkWriter`.

For each write it (1) validates the payload with the codec matching the path kind (a topic
znode must decode as a topic assignment, ``/admin/reassign_partitions`` strictly and without
``log_dirs``, a config as a config, ...), (2) refuses payloads over ``max_bytes`` (ZooKeeper's
1 MB ``jute.maxbuffer`` minus headroom), (3) reads the node's current payload (``before``),
(4) asks the writer's :class:`~kafka_zk.authority.WriteAuthority` whether this write may happen
(:mod:`kafka_zk.authority`: a run's approval of the plan it acts on, a teardown's own throttles,
or the person at the keyboard; a writer cannot be built without one), (5) appends an audit record, (6) writes — unless ``dry_run``, in which case nothing is written
and the audit record says ``dry_run: true``. :attr:`ZkWriter.planned` lists every write made or
planned, in order. In a dry run a create of a node the same writer planned to delete is planned
as if the delete had happened (delete-then-create sequences dry-run as they would run).

``/admin/*`` request znodes are *created*, never set: an existing
``/admin/reassign_partitions`` raises :class:`ReassignmentInProgress`, an existing
``/admin/preferred_replica_election`` :class:`ElectionInProgress`, and an existing
``/admin/delete_topics/<t>`` means the deletion was already requested (no error, nothing written).
Config writes (:meth:`ZkWriter.write_config`) also check the entity name (a topic name, a
canonical broker id or ``<default>``) and every value they add or change against Kafka 2.4's
config catalogue (:mod:`kafka_zk.topic_configs`), so no caller can write a value Kafka cannot
parse (a 2^63 throttle, a NaN ratio). Transient connection loss is retried with the client's retry policy; a create whose reply was
lost is recognised as ours when the node holds our exact payload.

On a secured cluster (the client was connected with ``set_acl``, see :mod:`kafka_zk.acls`) every
node created here, and every missing parent created on the way, carries the ACLs Kafka 2.4 would
give it (:func:`kafka_zk.acls.default_acls`); ``set`` and ``delete`` leave a node's ACLs alone.

Failure: every refusal is a :mod:`kafka_zk.errors` type naming the path; kazoo errors are
translated with :func:`kafka_zk.errors.translate`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Mapping

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError

from kafka_zk import acls, codecs, paths
from kafka_zk.authority import WriteAuthority
from kafka_zk.audit import AuditLog, AuditRecord, decode_for_audit
from kafka_zk.errors import (ElectionInProgress, InvalidInput, InvalidPayload, KafkaZkError,
                             ReassignmentInProgress, TopicExists, ZnodeTooLarge, translate)
from kafka_zk.topic_configs import check_changed_config
from kafka_zk.validation import check_entity_name

DEFAULT_MAX_BYTES = 1_048_576 - 4096

_TOPIC = re.compile(r"^/brokers/topics/([^/]+)$")
_NO_DATA = re.compile(r"^(/brokers/topics/[^/]+/partitions(/[0-9]+)?|/admin/delete_topics/[^/]+"
                      r"|/brokers/seqid)$")
_STATE = re.compile(r"^/brokers/topics/[^/]+/partitions/[0-9]+/state$")
_BROKER = re.compile(r"^/brokers/ids/[0-9]+$")
_CONFIG = re.compile(r"^/config/(topics|clients|users|brokers|ips)/.+$")


@dataclass(frozen=True)
class PlannedWrite:
    """One write, made or (dry run) planned: ``op`` create/set/delete, payloads as bytes."""

    op: str
    path: str
    data: bytes | None
    before: bytes | None


def _validator(path: str) -> Callable[[bytes], object] | None:
    """The codec that must accept a payload written at ``path`` (``None``: any payload)."""
    if _TOPIC.match(path):
        return codecs.decode_topic_assignment
    if _STATE.match(path):
        return codecs.decode_partition_state
    if path == paths.REASSIGN_PARTITIONS:
        return _check_reassignment
    if path == paths.PREFERRED_REPLICA_ELECTION:
        return codecs.decode_preferred_election
    if path.startswith(paths.CONFIG_CHANGE_PREFIX):
        return codecs.decode_config_change
    if path.startswith(paths.CONFIG_CHANGES + "/"):
        raise InvalidInput(f"[{path}] config change notifications must be created as "
                           f"{paths.CONFIG_CHANGE_PREFIX}<seq> with sequence=True")
    if _CONFIG.match(path):
        return _check_config
    if _BROKER.match(path):
        return codecs.decode_broker_registration
    if path == paths.CONTROLLER:
        return codecs.decode_controller
    if path == paths.CONTROLLER_EPOCH:
        return codecs.decode_controller_epoch
    if path == paths.CLUSTER_ID:
        return codecs.decode_cluster_id
    if path.startswith(paths.ISR_CHANGE_PREFIX):
        return codecs.decode_isr_change
    if path.startswith(paths.LOG_DIR_EVENT_PREFIX):
        return codecs.decode_log_dir_event
    if path == paths.LATEST_PRODUCER_ID_BLOCK:
        return codecs.decode_producer_id_block
    return None


def _check_reassignment(data: bytes) -> object:
    if b"log_dirs" in data:
        try:
            doc = codecs._obj(data, paths.REASSIGN_PARTITIONS)
            has_log_dirs = any(isinstance(e, dict) and "log_dirs" in e for e in doc.get("partitions") or [])
        except InvalidPayload:
            has_log_dirs = False
        if has_log_dirs:
            raise InvalidInput(
                f"[{paths.REASSIGN_PARTITIONS}] refusing a payload with 'log_dirs': Kafka 2.0+ controllers "
                "reject unknown fields and 2.4+ then leave the node in place forever; remove log_dirs "
                "(log-dir placement needs --bootstrap-server)")
    return codecs.decode_reassignment(data, strict=True)


def _check_config(data: bytes) -> object:
    doc = codecs._obj(data, "/config/<type>/<name>")
    if not isinstance(doc.get("config"), dict):
        raise InvalidPayload("/config/<type>/<name>: 'config' must be an object")
    if any(not isinstance(v, str) for v in doc["config"].values()):
        raise InvalidPayload("/config/<type>/<name>: every config value must be a string")
    return codecs.decode_entity_config(data)


class ZkWriter:
    """Validate, size-check, audit, then write (or only plan, when ``dry_run``)."""

    def __init__(self, client: KazooClient, audit: AuditLog | None = None, actor: str = "kafka-runbook",
                 dry_run: bool = False, max_bytes: int = DEFAULT_MAX_BYTES, *, authority: WriteAuthority) -> None:
        if authority is None or not callable(getattr(authority, "authorise", None)):
            raise TypeError("ZkWriter needs an authority (kafka_zk.authority): the approval it writes under")
        self.client = client
        self.authority = authority
        self.audit = audit
        self.actor = actor
        self.dry_run = dry_run
        self.max_bytes = max_bytes
        self.planned: list[PlannedWrite] = []

    # ------------------------------------------------------------------ checks and bookkeeping

    def check_payload(self, path: str, data: bytes | None) -> None:
        """Refuse a payload the matching codec rejects, or one over ``max_bytes``."""
        if data is not None and not isinstance(data, bytes):
            raise InvalidInput(f"[{path}] payload must be bytes, got {type(data).__name__}")
        size = len(data or b"")
        if size > self.max_bytes:
            raise ZnodeTooLarge(f"[{path}] payload is {size} bytes, over the znode limit of {self.max_bytes} "
                                "bytes (ZooKeeper jute.maxbuffer): split into batches")
        if _NO_DATA.match(path):
            if data:
                raise InvalidInput(f"[{path}] Kafka creates this znode without data; write None")
            return
        validate = _validator(path)
        if validate is not None:
            if not data:
                raise InvalidPayload(f"[{path}] payload is empty")
            try:
                validate(data)
            except InvalidPayload as exc:
                raise InvalidPayload(f"[{path}] {exc}") from None

    def _read(self, path: str) -> tuple[bool, bytes | None]:
        try:
            data, _ = self.client.retry(self.client.get, path)
            return True, data
        except NoNodeError:
            return False, None
        except Exception as exc:  # noqa: BLE001 - translated
            raise translate(exc, path) from exc

    def dry_twin(self) -> "ZkWriter":
        """A dry-run twin (same client, authority and limits; no audit): run a command's writes through
        it first, so every check and payload is passed before the first real write."""
        return ZkWriter(self.client, audit=None, actor=self.actor, dry_run=True, max_bytes=self.max_bytes,
                        authority=self.authority)

    def _record(self, op: str, path: str, data: bytes | None, before: bytes | None) -> None:
        if not self.dry_run:     # a dry run writes nothing, so it needs no authority
            self.authority.authorise(op, path, data, before)
        self.planned.append(PlannedWrite(op, path, data, before))
        if self.audit is not None:
            self.audit.append(AuditRecord(path=path, op=op, before=decode_for_audit(before),
                                          after=decode_for_audit(data), actor=self.actor,
                                          dry_run=self.dry_run))

    def _deleted_in_dry_run(self, path: str) -> bool:
        """In a dry run: the last write planned on ``path`` deletes it (so it counts as absent)."""
        last = next((w for w in reversed(self.planned) if w.path == path), None)
        return self.dry_run and last is not None and last.op == "delete"

    def _exists_error(self, path: str) -> KafkaZkError | None:
        if path == paths.REASSIGN_PARTITIONS:
            return ReassignmentInProgress(
                f"[{path}] exists: a partition reassignment is already in progress; wait for it to finish "
                "(or verify it) before submitting another")
        if path == paths.PREFERRED_REPLICA_ELECTION:
            return ElectionInProgress(
                f"[{path}] exists: a preferred replica election is in progress; wait until the controller "
                "deletes the node, then retry")
        m = _TOPIC.match(path)
        if m:
            return TopicExists(f"Topic '{m.group(1)}' already exists.")
        return None

    # ------------------------------------------------------------------ writes

    def create(self, path: str, data: bytes | None, *, sequence: bool = False, makepath: bool = True) -> str:
        """Create ``path`` and return the created path (the prefix itself in a dry run)."""
        self.check_payload(path, data)
        is_marker = path.startswith(paths.DELETE_TOPICS + "/")
        if not sequence:
            exists, _ = self._read(path)
            if exists and not self._deleted_in_dry_run(path):
                if is_marker:
                    return path
                raise self._exists_error(path) or KafkaZkError(
                    f"[{path}] already exists; refusing to overwrite with create")
        self._record("create", path, data, None)
        if self.dry_run:
            return path
        attempts = 0

        def op() -> str:
            nonlocal attempts
            attempts += 1
            secure = acls.is_secure(self.client)
            if secure and makepath:
                self._create_parents(path)
            try:
                return self.client.create(path, data if data is not None else b"", sequence=sequence,
                                          makepath=makepath and not secure,
                                          acl=acls.default_acls(path, secure))
            except NodeExistsError:
                if attempts > 1 and not sequence:
                    current, _ = self.client.get(path)
                    if (current or b"") == (data or b""):
                        return path  # our own create whose reply was lost
                raise

        try:
            return self.client.retry(op)
        except NodeExistsError:
            if is_marker:
                return path
            raise self._exists_error(path) or KafkaZkError(f"[{path}] already exists") from None
        except Exception as exc:  # noqa: BLE001 - translated
            raise translate(exc, path) from exc

    def _create_parents(self, path: str) -> None:
        """Missing ancestors of ``path``, top down, each with its own Kafka ACLs (as Kafka's
        ``createRecursive`` does); a parent created meanwhile by someone else is fine."""
        missing, parent = [], path.rsplit("/", 1)[0]
        while parent and self.client.exists(parent) is None:
            missing.append(parent)
            parent = parent.rsplit("/", 1)[0]
        for node in reversed(missing):
            try:
                self.client.create(node, b"", acl=acls.default_acls(node, True))
            except NodeExistsError:
                pass

    def set(self, path: str, data: bytes, *, version: int = -1) -> None:
        """Overwrite an existing node (``version`` ≥ 0: only if unchanged since read)."""
        if path in (paths.REASSIGN_PARTITIONS, paths.PREFERRED_REPLICA_ELECTION):
            raise InvalidInput(f"[{path}] is create-only: the controller ignores edits of an existing node")
        self.check_payload(path, data)
        exists, before = self._read(path)
        if not exists:
            raise translate(NoNodeError(), path)
        self._record("set", path, data, before)
        if self.dry_run:
            return
        try:
            self.client.retry(self.client.set, path, data, version=version)
        except Exception as exc:  # noqa: BLE001 - translated
            raise translate(exc, path) from exc

    def delete(self, path: str, *, version: int = -1) -> None:
        """Delete one node (no recursion). Topic znodes are refused: deleting them only makes the
        controller forget the topic (docs/zookeeper.md §2.3); request deletion with a delete marker."""
        if path.startswith(paths.BROKER_TOPICS + "/"):
            topic = path.split("/")[3]
            raise InvalidInput(f"[{path}] tools never delete topic znodes (the controller would only forget "
                               f"the topic); request deletion with {paths.delete_topic_marker(topic)}")
        exists, before = self._read(path)
        if not exists:
            raise translate(NoNodeError(), path)
        self._record("delete", path, None, before)
        if self.dry_run:
            return
        try:
            self.client.retry(self.client.delete, path, version=version)
        except Exception as exc:  # noqa: BLE001 - translated
            raise translate(exc, path) from exc

    def write_config(self, entity_type: str, entity_name: str, new_config: Mapping[str, str]) -> str:
        """Write the full override set of ``/config/<type>/<name>``, then ONE v2 change notification.

        Returns the notification's path. Both payloads are checked before the first write.
        """
        check_entity_name(entity_type, entity_name)
        path = paths.entity_config(entity_type, entity_name)
        config = {str(k): str(v) for k, v in new_config.items()}
        payload = codecs.EntityConfig(config).encode()
        note = codecs.ConfigChangeNotification(f"{entity_type}/{entity_name}").encode()
        self.check_payload(path, payload)
        self.check_payload(paths.CONFIG_CHANGE_PREFIX, note)
        exists, before = self._read(path)
        stored = codecs.decode_entity_config(before).config if exists and before else {}
        check_changed_config(entity_type, stored, config)
        if exists:
            self.set(path, payload)
        else:
            self.create(path, payload, makepath=True)
        return self.create(paths.CONFIG_CHANGE_PREFIX, note, sequence=True, makepath=True)
