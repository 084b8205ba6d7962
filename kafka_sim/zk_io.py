"""Every ZooKeeper write the emulator makes, in the shapes a Kafka 2.4 cluster makes them.

* Controller writes (:class:`Fenced`): each one its own 2-op multi ``[check /controller_epoch
  <zkVersion>, op]`` (docs/zookeeper.md §0, §10). A failed check raises :class:`ControllerMoved`; a failed
  op comes back as the kazoo exception instance for that op (NodeExists, NoNode, BadVersion).
* Broker writes: registration as ``[create ephemeral null, setData payload]`` (zkVersion 1),
  leader-driven ISR rewrites (plain conditional setData), ``isr_change_`` notifications, plain
  deletes of old config notifications, startup paths, ``/cluster/id``.
* Election: ``[create ephemeral /controller, setData /controller_epoch]`` conditioned on the
  epoch node's version.
* Seeding (what ``kafka-topics --create`` would write) and the emulator-only ``/kafka-sim``
  publication area.

Every node is created with the ACLs Kafka 2.4 gives it (:func:`kafka_zk.acls.acls_for`: open on
an unsecured cluster; creator-all plus world-read, or creator-only under the sensitive roots,
when the emulator's sessions were connected with ``set_acl``).
Znodes Kafka creates with null data are created with a null payload (kazoo's public API only
sends bytes, so :func:`_null_create` adds the raw request to a transaction).
Every committed write can be appended to a :class:`Journal` (tests, debugging), and a committed
``set`` recorded in the engine's :class:`EventReads` (what the emulator itself just wrote, so the
same event does not read it back from ZooKeeper).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from kazoo.client import KazooClient, TransactionRequest, _prefix_root
from kazoo.exceptions import (BadVersionError, ConnectionClosedError, ConnectionLoss, NodeExistsError, NoNodeError,
                              OperationTimeoutError, RolledBackError, SessionExpiredError)
from kazoo.protocol.serialization import Create
from kafka_zk import paths
from kafka_zk.acls import acls_for
from kafka_zk.codecs import ProducerIdBlock, decode_producer_id_block, encode_controller_epoch
from kafka_zk.log_dirs import PUBLISHED_PATH


#: what a request answers when ZooKeeper could not be reached: Kafka's ZooKeeperClient never lets
#: its controller see these (it waits for the session and sends the request again); the emulator's
#: controller gives the event up and handles it again when the session answers
#: (:meth:`kafka_sim.controller.Controller.resync`), or is elected again after an expiry
CONNECTION_LOST = (ConnectionLoss, OperationTimeoutError, ConnectionClosedError)
SESSION_GONE = CONNECTION_LOST + (SessionExpiredError,)


class ControllerMoved(Exception):
    """The fencing check on /controller_epoch failed: this controller must resign."""


@dataclass(frozen=True)
class Write:
    """One committed emulator write: who, what, where, with which payload."""

    seq: int
    writer: str
    op: str          # create | set | delete
    path: str
    data: bytes | None
    t: float = 0.0   # time.monotonic() when recorded (just after the commit)


class Journal:
    """Bounded, thread-safe list of committed writes (disabled unless asked for). Every emulator
    write is told to it, so it also tells ``on_write`` (op, path) of each, enabled or not: the
    engine's way to know its own writes (:meth:`kafka_sim.engine.Engine.settle_own_watches`)."""

    def __init__(self, enabled: bool, maxlen: int = 500_000) -> None:
        self.enabled = enabled
        self.on_write: Callable[[str, str], None] | None = None
        self._items: deque[Write] = deque(maxlen=maxlen)
        self._lock = threading.Lock()
        self._seq = 0

    def add(self, writer: str, op: str, path: str, data: bytes | None) -> None:
        if self.on_write is not None:
            self.on_write(op, path)
        if not self.enabled:
            return
        with self._lock:
            self._seq += 1
            self._items.append(Write(self._seq, writer, op, path, data, time.monotonic()))

    def items(self) -> list[Write]:
        with self._lock:
            return list(self._items)


class EventReads:
    """Partition-state znodes as read or written by the emulator during the current engine event.

    A 2.4 controller reads a reassigning partition's state znode up to five times in one handler
    (the watch, ``isReassignmentComplete`` twice, the pre-write read of each state update); all
    those reads see the same bytes unless someone writes in between, and every emulator write
    goes through this module. So within one event (the engine clears this before each queued
    event, each timer and each ISR join) a read of a node the event already read or wrote is
    answered from here; a watch is still set on ZooKeeper (an asynchronous get, sent in order on
    the session, so it lands after every write the event made). What is written, and in what
    order, does not change. A write that fails (BADVERSION, NONODE) drops the entry: the retry
    reads ZooKeeper. Only the engine thread uses it.

    It also remembers the data watches this event set (:meth:`needs_watch`): a ZooKeeper data
    watch stays set until a write fires it, and the same callback set twice on one session is one
    watch (ZooKeeper's watch table and kazoo's watcher set both hold it once), so asking for it
    again before any emulator write to that node (:meth:`written`, told by the journal of every
    emulator write) sets nothing new and is not sent. A write by someone else fires the watch and
    queues its event, whose handler reads and sets it again, as before.
    """

    def __init__(self) -> None:
        self._entries: dict[str, tuple[bytes, int]] = {}
        self._watched: dict[str, set[int]] = {}

    def clear(self) -> None:
        self._entries.clear()
        self._watched.clear()

    def needs_watch(self, path: str, watch: Callable) -> bool:
        """Whether ``watch`` must be set on ``path`` (False: this event set it, and no emulator
        write to ``path`` fired it since); counts it as set from now on."""
        ids = self._watched.setdefault(path, set())
        if id(watch) in ids:
            return False
        ids.add(id(watch))
        return True

    def written(self, path: str) -> None:
        """An emulator write to ``path`` committed: the data watches on it fired."""
        self._watched.pop(path, None)

    def get(self, path: str) -> tuple[bytes, int] | None:
        return self._entries.get(path)

    def put(self, path: str, data: bytes, version: int) -> None:
        self._entries[path] = (data, version)

    def drop(self, path: str) -> None:
        self._entries.pop(path, None)


@dataclass(frozen=True)
class Op:
    """One operation of a fenced multi: ``create`` (data None = null), ``set``, ``delete``."""

    kind: str
    path: str
    data: bytes | None = None
    version: int = -1
    ephemeral: bool = False


def _null_create(txn: TransactionRequest, client: KazooClient, path: str,
                 ephemeral: bool = False) -> None:
    txn.operations.append(Create(_prefix_root(client.chroot, path), None, acls_for(client, path),
                                 1 if ephemeral else 0))


def _add(txn: TransactionRequest, client: KazooClient, op: Op) -> None:
    if op.kind == "create":
        if op.data is None:
            _null_create(txn, client, op.path, op.ephemeral)
        else:
            txn.create(op.path, op.data, acl=acls_for(client, op.path), ephemeral=op.ephemeral)
    elif op.kind == "set":
        txn.set_data(op.path, op.data or b"", op.version)
    elif op.kind == "delete":
        txn.delete(op.path, op.version)
    else:  # pragma: no cover - programming error
        raise ValueError(f"unknown op kind {op.kind!r}")


class Fenced:
    """The controller's write path: one ``[check /controller_epoch, op]`` multi per write."""

    def __init__(self, client: KazooClient, epoch_zk_version: int, journal: Journal,
                 writer: str, reads: EventReads | None = None) -> None:
        self.client = client
        self.epoch_zk_version = epoch_zk_version
        self.journal = journal
        self.writer = writer
        self.reads = reads if reads is not None else EventReads()

    def _txn(self, op: Op) -> TransactionRequest:
        txn = self.client.transaction()
        txn.check(paths.CONTROLLER_EPOCH, self.epoch_zk_version)
        _add(txn, self.client, op)
        return txn

    def _result(self, op: Op, results: Sequence[Any]) -> Any:
        first, second = results[0], results[1]
        self.reads.drop(op.path)
        if isinstance(first, BadVersionError):
            raise ControllerMoved(f"/controller_epoch is no longer at version {self.epoch_zk_version}")
        if isinstance(second, Exception) and not isinstance(second, RolledBackError):
            return second
        if isinstance(first, Exception) and not isinstance(first, RolledBackError):
            return first
        self.journal.add(self.writer, op.kind, op.path, op.data)
        if op.kind == "set" and hasattr(second, "version"):
            self.reads.put(op.path, op.data or b"", second.version)
        return second

    def write(self, op: Op) -> Any:
        """Commit one fenced write; returns the op's result or its kazoo exception instance."""
        return self._result(op, self._txn(op).commit())

    def write_many(self, ops: Iterable[Op]) -> list[Any]:
        """Pipeline many fenced writes (each its own multi), in order; results in order."""
        pending = [(op, self._txn(op).commit_async()) for op in ops]
        out = []
        moved = None
        for op, res in pending:
            try:
                out.append(self._result(op, res.get(timeout=60)))
            except ControllerMoved as exc:
                moved = exc
                out.append(exc)
        if moved is not None:
            raise moved
        return out


def failed(result: Any) -> bool:
    return isinstance(result, Exception)


# ---------------------------------------------------------------------------------------------
# broker writes


def _create_null_path(client: KazooClient, path: str, journal: Journal, writer: str) -> None:
    """Create ``path`` and missing parents with null data, as Kafka's createRecursive does."""
    parent = path.rsplit("/", 1)[0]
    if parent and client.exists(parent) is None:
        _create_null_path(client, parent, journal, writer)
    try:
        client._create_async_inner(path, None, acls_for(client, path), 0).get(timeout=30)
        journal.add(writer, "create", path, None)
    except NodeExistsError:
        pass


def ensure_startup_paths(client: KazooClient, journal: Journal, writer: str) -> None:
    """Persistent paths every broker creates at startup when missing (docs/zookeeper.md §0), null data."""
    for path in paths.BROKER_STARTUP_PATHS:
        if client.exists(path) is None:
            _create_null_path(client, path, journal, writer)


def claim_producer_id_block(client: KazooClient, broker_id: int, journal: Journal, writer: str,
                            block_size: int = 1000) -> ProducerIdBlock:
    """A 2.4 broker claims the next producer-id block at startup (§1.15): conditional set."""
    for _ in range(10):
        data, stat = client.get(paths.LATEST_PRODUCER_ID_BLOCK)
        start = decode_producer_id_block(data).block_end + 1 if data else 0
        block = ProducerIdBlock(broker_id, start, start + block_size - 1)
        try:
            client.set(paths.LATEST_PRODUCER_ID_BLOCK, block.encode(), version=stat.version)
        except BadVersionError:
            continue
        journal.add(writer, "set", paths.LATEST_PRODUCER_ID_BLOCK, block.encode())
        return block
    raise RuntimeError("could not claim a producer id block after 10 attempts")


def ensure_cluster_id(client: KazooClient, cluster_id: bytes, journal: Journal, writer: str) -> None:
    """``/cluster/id``: created by the first broker that finds it absent."""
    if client.exists(paths.CLUSTER_ID) is None:
        try:
            client.create(paths.CLUSTER_ID, cluster_id, makepath=True, acl=acls_for(client, paths.CLUSTER_ID))
            journal.add(writer, "create", paths.CLUSTER_ID, cluster_id)
        except NodeExistsError:
            pass


def register_broker(client: KazooClient, broker_id: int, payload: bytes, journal: Journal,
                    writer: str) -> None:
    """``[create ephemeral /brokers/ids/<id> null, setData payload]``: zkVersion ends at 1."""
    path = paths.broker(broker_id)
    txn = client.transaction()
    _null_create(txn, client, path, ephemeral=True)
    txn.set_data(path, payload, -1)
    results = txn.commit()
    for r in results:
        if isinstance(r, Exception) and not isinstance(r, RolledBackError):
            raise r
    journal.add(writer, "create", path, None)
    journal.add(writer, "set", path, payload)


def leader_isr_write(client: KazooClient, path: str, payload: bytes, version: int,
                     journal: Journal, writer: str) -> int | None:
    """A leader's own conditional ISR rewrite (IBP < 2.7); new zkVersion, or None on BadVersion."""
    try:
        stat = client.set(path, payload, version=version)
    except (BadVersionError, NoNodeError):
        return None
    journal.add(writer, "set", path, payload)
    return stat.version


def create_sequential(client: KazooClient, prefix: str, payload: bytes, journal: Journal,
                      writer: str) -> str:
    """A persistent sequential notification (``isr_change_``, ``log_dir_event_``)."""
    created = client.create(prefix, payload, sequence=True, acl=acls_for(client, prefix))
    journal.add(writer, "create", created, payload)
    return created


def plain_delete(client: KazooClient, path: str, journal: Journal, writer: str) -> bool:
    """A broker's plain (unfenced) delete, e.g. of an old config notification."""
    try:
        client.delete(path)
    except NoNodeError:
        return False
    journal.add(writer, "delete", path, None)
    return True


# ---------------------------------------------------------------------------------------------
# controller election


def ensure_epoch_node(client: KazooClient, journal: Journal, writer: str) -> None:
    """2.1+: ``/controller_epoch`` is created with 0 before the first election."""
    if client.exists(paths.CONTROLLER_EPOCH) is None:
        try:
            client.create(paths.CONTROLLER_EPOCH, encode_controller_epoch(0),
                          acl=acls_for(client, paths.CONTROLLER_EPOCH))
            journal.add(writer, "create", paths.CONTROLLER_EPOCH, encode_controller_epoch(0))
        except NodeExistsError:
            pass


def try_elect(client: KazooClient, controller_payload: bytes, epoch: int, epoch_version: int,
              journal: Journal, writer: str) -> int | None:
    """One election attempt; the new epoch's zkVersion when won, None when lost."""
    txn = client.transaction()
    txn.create(paths.CONTROLLER, controller_payload, acl=acls_for(client, paths.CONTROLLER), ephemeral=True)
    txn.set_data(paths.CONTROLLER_EPOCH, encode_controller_epoch(epoch + 1), epoch_version)
    results = txn.commit()
    if any(isinstance(r, Exception) for r in results):
        return None
    journal.add(writer, "create", paths.CONTROLLER, controller_payload)
    journal.add(writer, "set", paths.CONTROLLER_EPOCH, encode_controller_epoch(epoch + 1))
    return epoch_version + 1


# ---------------------------------------------------------------------------------------------
# tool-like writes (seeding) and the emulator's own publication area

SIM_ROOT = "/kafka-sim"
SIM_LOG_DIRS = PUBLISHED_PATH   # the contract layer owns the publication's format (kafka_zk.log_dirs)


def seed_topics(client: KazooClient, topics: Sequence[tuple[str, bytes, bytes]],
                journal: Journal) -> None:
    """Like ``kafka-topics --create``: ``/config/topics/<t>`` then ``/brokers/topics/<t>``.

    Pipelined: all config nodes, then all topic nodes. An existing config node is overwritten.
    """
    pending = [(name, cfg, client.create_async(paths.topic_config(name), cfg, makepath=True,
                                               acl=acls_for(client, paths.topic_config(name))))
               for name, cfg, _ in topics]
    for name, cfg, res in pending:
        try:
            res.get(timeout=60)
        except NodeExistsError:
            client.set(paths.topic_config(name), cfg)
        journal.add("tool", "create", paths.topic_config(name), cfg)
    pending2 = [(name, data, client.create_async(paths.topic(name), data, makepath=True,
                                                 acl=acls_for(client, paths.topic(name))))
                for name, _, data in topics]
    for name, data, res in pending2:
        res.get(timeout=60)
        journal.add("tool", "create", paths.topic(name), data)


def tool_delete(client: KazooClient, path: str, journal: Journal) -> bool:
    """A tool's plain delete (e.g. of ``/controller`` to move the controller)."""
    try:
        client.delete(path)
    except NoNodeError:
        return False
    journal.add("tool", "delete", path, None)
    return True


def publish_chunks(client: KazooClient, base: str, header: bytes, chunks: Sequence[bytes]) -> None:
    """Replace ``base`` (header) and ``base/chunk-NNNN`` children with new content."""
    client.ensure_path(base, acl=acls_for(client, base))
    existing = set(client.get_children(base))
    for i, chunk in enumerate(chunks):
        name = f"chunk-{i:04d}"
        if name in existing:
            client.set(f"{base}/{name}", chunk)
        else:
            client.create(f"{base}/{name}", chunk, acl=acls_for(client, f"{base}/{name}"))
    for name in sorted(existing):
        if name.startswith("chunk-") and int(name[6:]) >= len(chunks):
            client.delete(f"{base}/{name}")
    client.set(base, header)


def ensure_path(client: KazooClient, path: str) -> None:
    """Create an emulator-only path (``/kafka-sim/...``) or a chroot when missing."""
    client.ensure_path(path, acl=acls_for(client, path))


def create_command(client: KazooClient, prefix: str, payload: bytes) -> str:
    """A fault request for a running emulator (``/kafka-sim/commands/command_<seq>``)."""
    return client.create(prefix, payload, sequence=True, makepath=True, acl=acls_for(client, prefix))


def answer_command(client: KazooClient, path: str, payload: bytes) -> None:
    """The emulator's answer to a fault request, written into the request node."""
    client.set(path, payload)
