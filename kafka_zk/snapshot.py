"""The fast snapshot reader: a whole :class:`ClusterSnapshot` from ZooKeeper with pipelined reads.

Reads are pipelined instead of one blocking round trip per znode. On ZooKeeper ≥ 3.6 (which
has the ``multiRead`` operation) znode data is fetched in batches of many ``getData`` ops per
request, several batches in flight; on older servers (Kafka 2.4 ships ZooKeeper 3.5)
bulk getData runs on short sessions of the reader's own (:mod:`kafka_zk.bulk_reader`, several
at once, many requests in flight on each, replies parsed in chunks), with kazoo's pipelined ``get_async`` for what it
could not read.
Which one is used is decided once per ensemble without touching the working session
(:mod:`kafka_zk.server_features`). Reads lost with the connection are sent again under the
project's retry policy until the timeout. Order of reads: live brokers, topic names, delete
markers, controller and admin nodes; then every broker registration, topic znode and config;
then the partition states wanted (every one by default; :func:`read_snapshot`'s ``states``
reads none or some, :func:`with_states` adds states read later).

A znode that vanishes between listing and reading (a broker dying, a topic being deleted) is
skipped as absent; a topic whose topic znode vanished is left out. This is a consistent-enough
view, not an atomic one: ``taken_at_ms`` says when reading started.

Failure: a payload Kafka would not have written raises :class:`InvalidPayload` naming its path;
ZooKeeper not answering within ``timeout`` raises :class:`ZkUnavailable`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Callable, Iterable, Mapping, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import (ConnectionLoss, KazooException, NoNodeError, OperationTimeoutError,
                              SessionExpiredError)
from kazoo.retry import RetryFailedError

from kafka_zk import bulk_reader, codecs, paths, server_features
from kafka_zk import multi_read as _multi
from kafka_zk.codecs import PartitionState, TopicAssignment, TopicPartition
from kafka_zk.connect import retry_policy
from kafka_zk.errors import InvalidPayload, ZkUnavailable, translate
from kafka_zk.in_flight import Gathered, keep_in_flight
from kafka_zk.multi_read import MultiReadUnsupported
from kafka_zk.server_features import supports_multi_read
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic

T = TypeVar("T")
WINDOW = 4096
BULK_MIN = 64  # below this, a session of its own costs more than it saves
logger = logging.getLogger(__name__)
TIMEOUT = 30.0
# what a read may meet while the connection drops and kazoo reconnects (reads are idempotent,
# so a session that expired and was replaced by kazoo is fine to read on too)
_RETRYABLE = (ConnectionLoss, OperationTimeoutError, SessionExpiredError)
_READ_RETRY = retry_policy(TIMEOUT)  # the one policy; each read copies it with its own deadline


def _retrying(client: KazooClient, read_some: Callable[[list[str]], tuple[dict, list[str], Exception | None]],
              znodes: Iterable[str], deadline: float) -> dict[str, object]:
    """Run ``read_some(paths) -> (results, unread paths, first error)`` until every path is read.

    Paths that met a connection loss are read again under the project's one retry policy
    (:func:`kafka_zk.connect.retry_policy`, copied per call with ``deadline``); any other
    error is translated and raised at once.
    """
    pending = list(znodes)
    out: dict[str, object] = {}

    def attempt() -> None:
        nonlocal pending
        got, unread, error = read_some(pending)
        out.update(got)
        if unread:
            if not isinstance(error, _RETRYABLE):
                raise translate(error, unread[0]) from error
            pending = unread
            raise ConnectionLoss(f"{len(unread)} reads lost with the connection ({type(error).__name__})")
        pending = []

    if not pending:
        return out
    try:
        policy = _READ_RETRY.copy()
        policy.deadline = deadline
        policy(attempt)
    except RetryFailedError as exc:
        raise ZkUnavailable(f"[{pending[0]}] ZooKeeper did not answer within {deadline:g}s "
                            f"({len(pending)} reads left): check that the ensemble is up") from exc
    return out


def _pipelined_once(client: KazooClient, method: str, znodes: list[str], window: int,
                    timeout: float) -> tuple[dict[str, object], list[str], Exception | None]:
    call = getattr(client, f"{method}_async")
    got = Gathered()

    def collect(path: str, r) -> None:
        try:
            got.out[path] = r.get(timeout=timeout)
        except NoNodeError:
            got.out[path] = None
        except Exception as exc:  # noqa: BLE001 - the retry loop decides
            got.lost((path,), exc)

    keep_in_flight(znodes, call, collect, window)
    return got.as_tuple()


def pipelined(client: KazooClient, method: str, znodes: Iterable[str], window: int = WINDOW,
              timeout: float = TIMEOUT) -> dict[str, object]:
    """``{path: result}`` of ``client.<method>_async(path)`` for every path, ``window`` in flight.

    ``method`` is ``"get"`` (result ``(data, stat)``), ``"get_children"`` (a list) or
    ``"exists"`` (a stat). Missing nodes map to ``None``. Reads lost with the connection are
    sent again until ``timeout`` (then :class:`ZkUnavailable`).
    """
    return _retrying(client, lambda todo: _pipelined_once(client, method, todo, window, timeout),
                     znodes, timeout)


def multi_read(client: KazooClient, znodes: Iterable[str], batch: int = 1000, window: int = 8,
               timeout: float = TIMEOUT) -> dict[str, object]:
    """``{path: (data, stat) | None}`` with ``batch`` getData ops per multiRead, ``window`` in flight.

    Only for servers that have multiRead (:func:`supports_multi_read`); one that refuses it
    raises :class:`MultiReadUnsupported`.
    """
    def read_some(todo: list[str]):
        try:
            return _multi.multi_read(client, todo, batch, window, timeout)
        except KazooException as exc:
            raise translate(exc, todo[0]) from exc
    return _retrying(client, read_some, znodes, timeout)


def read_data(client: KazooClient, znodes: Iterable[str], window: int = WINDOW, batch: int = 1000,
              multi: bool | None = None) -> dict[str, object]:
    """``{path: (data, stat) | None}``: by multiRead when the server has it, else (from
    :data:`BULK_MIN` znodes) by :mod:`kafka_zk.bulk_reader` on a session of its own, anything
    it could not read (and short lists) by pipelined kazoo gets.

    A server that refuses multiRead after all (the ensemble was downgraded) is remembered as
    lacking it and the read is done again with plain gets.
    """
    znodes = list(znodes)
    if multi is None:
        multi = supports_multi_read(client)
    if multi:
        try:
            return multi_read(client, znodes, batch=batch)
        except MultiReadUnsupported:
            server_features.forget(client, multi_read=False)
    if len(znodes) < BULK_MIN:
        return pipelined(client, "get", znodes, window)
    bulk = bulk_reader.read_many(client, znodes, timeout=TIMEOUT)
    if bulk.unread:
        logger.info("bulk reader left %d of %d znodes (%s); reading them through kazoo",
                    len(bulk.unread), len(znodes), bulk.reason)
        bulk.found.update(pipelined(client, "get", bulk.unread, window))
    return bulk.found


def _decode(decoder: Callable[[bytes], T], data: bytes | None, path: str) -> T:
    try:
        return decoder(data)
    except InvalidPayload as exc:
        raise InvalidPayload(f"[{path}] {exc}") from None


def decode_states(raw: dict[str, object], by_path: dict[str, TopicPartition]
                  ) -> dict[TopicPartition, PartitionState | None]:
    """``{partition: state | None}`` from ``{state path: (data, stat) | None}`` as read."""
    out: dict[TopicPartition, PartitionState | None] = {}
    for path, tp in by_path.items():
        got = raw[path]
        out[tp] = None if got is None or not got[0] else _decode(codecs.decode_partition_state, got[0], path)
    return out


def read_partition_states(client: KazooClient, partitions: Iterable[TopicPartition],
                          window: int = WINDOW, multi: bool | None = None
                          ) -> dict[TopicPartition, PartitionState | None]:
    """Pipelined: the state of every partition (``None`` where no state znode exists).

    ``multi``: force multiRead (True) or plain pipelined gets (False); default probes the server.
    """
    tps = list(partitions)
    by_path = {paths.partition_state(tp.topic, tp.partition): tp for tp in tps}
    return decode_states(read_data(client, by_path, window, multi=multi), by_path)


def read_partition_states_one_by_one(client: KazooClient, partitions: Iterable[TopicPartition]
                                     ) -> dict[TopicPartition, PartitionState | None]:
    """The baseline the benchmark compares with: one blocking ``get`` per state znode."""
    out: dict[TopicPartition, PartitionState | None] = {}
    for tp in partitions:
        path = paths.partition_state(tp.topic, tp.partition)
        try:
            data, _ = client.get(path)
        except NoNodeError:
            out[tp] = None
            continue
        out[tp] = _decode(codecs.decode_partition_state, data, path) if data else None
    return out


def _children(raw: dict[str, object], path: str) -> list[str]:
    got = raw.get(path)
    return sorted(got) if isinstance(got, list) else []


def _data(raw: dict[str, object], path: str) -> bytes | None:
    got = raw.get(path)
    return got[0] if got is not None and got[0] else None


def read_snapshot(client: KazooClient, topics: Iterable[str] | None = None,
                  with_configs: bool = True, window: int = WINDOW, multi: bool | None = None,
                  states: bool | Callable[[TopicPartition, tuple[int, ...]], bool] = True) -> ClusterSnapshot:
    """Read brokers, topics (all, or only ``topics``), partition states, configs and admin nodes.

    ``states``: every partition's state (True), none (False: assignments only, as Kafka's own
    ``--generate`` reads; leaders unknown), or those of the partitions ``states(tp, replicas)``
    picks. The others' leader is ``None`` and their ISR empty; :func:`with_states` adds states
    read later (:func:`read_partition_states`).
    """
    taken = int(time.time() * 1000)
    lists = pipelined(client, "get_children",
                      [paths.BROKER_IDS, paths.BROKER_TOPICS, paths.DELETE_TOPICS, paths.CONFIG_BROKERS])
    singles = pipelined(client, "get", [paths.CONTROLLER, paths.CONTROLLER_EPOCH,
                                        paths.REASSIGN_PARTITIONS, paths.PREFERRED_REPLICA_ELECTION])
    broker_ids = sorted(int(c) for c in _children(lists, paths.BROKER_IDS) if c.isdigit())
    names = _children(lists, paths.BROKER_TOPICS)
    if topics is not None:
        wanted = set(topics)
        names = [n for n in names if n in wanted]
    markers = frozenset(_children(lists, paths.DELETE_TOPICS))
    broker_entities = _children(lists, paths.CONFIG_BROKERS) if with_configs else []

    second = [paths.broker(b) for b in broker_ids] + [paths.topic(n) for n in names]
    if with_configs:
        second += [paths.topic_config(n) for n in names] + [paths.broker_config(e) for e in broker_entities]
    raw = read_data(client, second, window, batch=200, multi=multi)

    brokers: dict[int, Broker] = {}
    for b in broker_ids:
        data = _data(raw, paths.broker(b))
        if data is not None:
            brokers[b] = Broker.from_registration(
                b, _decode(codecs.decode_broker_registration, data, paths.broker(b)))
    assignments: dict[str, TopicAssignment] = {}
    for n in names:
        data = _data(raw, paths.topic(n))
        if data is not None:
            assignments[n] = _decode(codecs.decode_topic_assignment, data, paths.topic(n))

    if states is True:
        wanted = [TopicPartition(n, p) for n, a in assignments.items() for p in a.partitions]
    elif states is False:
        wanted = []
    else:
        wanted = [TopicPartition(n, p) for n, a in assignments.items() for p, r in a.partitions.items()
                  if states(TopicPartition(n, p), r)]
    read = read_partition_states(client, wanted, window, multi) if wanted else {}

    built: dict[str, Topic] = {}
    for n, a in assignments.items():
        config = {}
        if with_configs:
            cfg_data = _data(raw, paths.topic_config(n))
            config = dict(_decode(codecs.decode_entity_config, cfg_data, paths.topic_config(n)).config) \
                if cfg_data else {}
        parts = {}
        adding, removing = a.adding, a.removing
        if not read:            # assignments only: no state to look up
            for p, replicas in a.partitions.items():
                parts[p] = Partition(n, p, replicas, adding.get(p, ()), removing.get(p, ()))
        for p, replicas in a.partitions.items() if read else ():
            st = read.get(TopicPartition(n, p))
            parts[p] = Partition(n, p, replicas, adding.get(p, ()), removing.get(p, ()),
                                 st.leader if st else None, st.leader_epoch if st else None,
                                 st.isr if st else (), st.controller_epoch if st else None)
        built[n] = Topic(n, parts, config, a.topic_id, n in markers, a.version)

    broker_configs = {}
    for e in broker_entities:
        data = _data(raw, paths.broker_config(e))
        if data is not None:
            broker_configs[e] = dict(_decode(codecs.decode_entity_config, data, paths.broker_config(e)).config)

    controller = _data(singles, paths.CONTROLLER)
    epoch = _data(singles, paths.CONTROLLER_EPOCH)
    reassign = _data(singles, paths.REASSIGN_PARTITIONS)
    election = _data(singles, paths.PREFERRED_REPLICA_ELECTION)
    return ClusterSnapshot(
        brokers=brokers, topics=built, broker_configs=broker_configs,
        reassignment=_lenient_reassignment(reassign) if reassign else None,
        preferred_election=_decode(codecs.decode_preferred_election, election,
                                   paths.PREFERRED_REPLICA_ELECTION) if election else None,
        delete_markers=markers,
        controller_id=_decode(codecs.decode_controller, controller, paths.CONTROLLER).broker_id
        if controller else None,
        controller_epoch=_decode(codecs.decode_controller_epoch, epoch, paths.CONTROLLER_EPOCH)
        if epoch else None,
        taken_at_ms=taken)


def with_states(snapshot: ClusterSnapshot, states: Mapping[TopicPartition, PartitionState | None]
                ) -> ClusterSnapshot:
    """``snapshot`` with the leader, epochs and ISR of every partition ``states`` names (a ``None``
    state: no state znode, so no leader); other partitions are kept as they are."""
    by_topic: dict[str, dict[TopicPartition, PartitionState | None]] = {}
    for tp, st in states.items():
        by_topic.setdefault(tp.topic, {})[tp] = st
    topics = dict(snapshot.topics)
    for name, given in by_topic.items():
        t = topics.get(name)
        if t is None:
            continue
        parts = dict(t.partitions)
        for tp, st in given.items():
            p = parts.get(tp.partition)
            if p is not None:       # a new Partition directly: dataclasses.replace costs ~4x more
                parts[tp.partition] = Partition(p.topic, p.partition, p.replicas, p.adding, p.removing,
                                                st.leader if st else None, st.leader_epoch if st else None,
                                                st.isr if st else (), st.controller_epoch if st else None)
        topics[name] = replace(t, partitions=parts)
    return replace(snapshot, topics=topics)


def _lenient_reassignment(data: bytes) -> codecs.ReassignmentRequest:
    """A live reassignment node read leniently: a stuck node with ``log_dirs`` is still shown."""
    return _decode(lambda d: codecs.decode_reassignment(d, strict=False), data, paths.REASSIGN_PARTITIONS)
