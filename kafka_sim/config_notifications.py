"""A broker's ``/config/changes`` listener, as Kafka 2.4.1's ZkNodeChangeNotificationListener.

Each time the children of ``/config/changes`` change, and once per new session (startup, and a
session re-established after expiry), a broker:

1. takes ``now`` (wall clock, before processing), reads the children sorted by name;
2. hands every notification whose sequence number is above the last one it processed to its
   config handler, in order (their reads pipelined; the entity's config is read fresh; see broker.py);
3. purges: every child, processed now or long ago, is deleted when ``now - ctime`` exceeds the
   expiry (15 minutes, ``CONFIG_NOTIFICATION_MAX_AGE``); a child with null data is left alone
   (Kafka checks ``data.isDefined``). Kafka reads every child's data and stat, awaiting each read
   and delete before the next; here the reads are pipelined a chunk at a time (8, then doubling) and stop at the
   first child young enough to stay (ctime grows with the sequence number, so the rest stay too):
   the same deletes in the same order, nothing else writes between.

Every broker does this, so the brokers race on the same old children: the first delete wins,
the others meet NoNode and ignore it silently (Kafka's ``deletePath``). Nothing here raises on
a child that vanished between the listing and the read or the delete.

The brokers of one emulator share their reads (:class:`NotificationReads`): a notification's data
and ctime never change once created, so the first broker's read answers every other broker's
read of that child until the emulator deletes it (48 brokers × 248 throttle notifications were
11,904 of a 20,000-partition rehearsal's 76,000 ZooKeeper requests). What each broker does with
them, and every delete, is unchanged.
"""

from __future__ import annotations

import time
from typing import Callable, Iterable, Iterator

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kafka_sim import zk_io
from kafka_sim.zk_io import Journal
from kafka_zk import paths

PREFIX = "config_change_"
PURGE_FIRST_READS = 8       # notifications a purge reads at once (pipelined), doubling each round
PURGE_MAX_READS = 256


class NotificationReads:
    """Notifications one emulator's brokers read: path -> (data, ctime in ms). Only the engine
    thread uses it. An entry goes when the emulator deletes that child (:meth:`forget`, from the
    journal of its writes); a child deleted by someone else stays readable here, which only a
    broker more than the expiry (15 min) behind its peers could tell apart."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[bytes | None, int]] = {}

    def get(self, path: str) -> tuple[bytes | None, int] | None:
        return self._known.get(path)

    def put(self, path: str, data: bytes | None, ctime: int) -> None:
        self._known[path] = (data, ctime)

    def forget(self, path: str) -> None:
        self._known.pop(path, None)


def _read(client: KazooClient, paths_: list[str], known: NotificationReads | None
          ) -> Iterator[tuple[str, tuple[bytes | None, int] | None]]:
    """(path, (data, ctime) or None when gone) for each path in order: from ``known`` or a
    pipelined read (all sent first, then awaited in order)."""
    pending = []
    for path in paths_:
        hit = known.get(path) if known is not None else None
        pending.append((path, hit, None if hit is not None else client.get_async(path)))
    for path, hit, res in pending:
        if hit is None:
            try:
                data, stat = res.get(timeout=30)
            except NoNodeError:
                yield path, None
                continue
            hit = (data, stat.ctime)
            if known is not None:
                known.put(path, *hit)
        yield path, hit


def notification_names(children: Iterable[str]) -> list[str]:
    """The ``config_change_<10 digits>`` children, sorted by name (= by sequence number)."""
    return sorted(k for k in children if k.startswith(PREFIX) and k[len(PREFIX):].isdigit()
                  and len(k) == len(PREFIX) + 10)


def process(client: KazooClient, names: list[str], last_seq: int,
            handle: Callable[[str, bytes | None, int], None], known: NotificationReads | None = None) -> int:
    """Hand each notification newer than ``last_seq`` to ``handle(path, data, seq)``.

    Returns the new last processed sequence number. A child gone before its read is skipped
    (its number still counts as processed, as in Kafka). The reads are pipelined (all sent, then
    handled in order; Kafka awaits each before the next): a notification's data never changes once
    created, so each handler sees what a one-by-one read would have shown — and 96 brokers reading
    a thousand throttle notifications each pay one round trip apiece instead of a thousand.
    """
    todo: dict[str, int] = {}
    for name in names:
        seq = paths.sequence_of(name)
        if seq <= last_seq:
            continue
        last_seq = seq
        todo[f"{paths.CONFIG_CHANGES}/{name}"] = seq
    for path, hit in _read(client, list(todo), known):
        if hit is not None:
            handle(path, hit[0], todo[path])
    return last_seq


def purge_obsolete(client: KazooClient, names: list[str], now: float, max_age: float,
                   journal: Journal, writer: str, known: NotificationReads | None = None) -> list[str]:
    """Delete the children whose ctime is more than ``max_age`` seconds before ``now``.

    ``now`` is wall-clock seconds taken before processing. Returns the paths this broker
    deleted (a delete lost to another broker is not among them and is not an error).
    """
    deleted: list[str] = []
    # the reads are pipelined (sent in order, not each awaited before the next), a chunk at a time;
    # the deletes follow in the same order as Kafka's. Kafka reads every child; here the reads stop
    # at the first child young enough to stay: ZooKeeper stamps ctime in creation (= sequence)
    # order, so every later child stays too — the same deletes, without 96 brokers each reading a
    # thousand live throttle notifications after every new one
    start, chunk = 0, PURGE_FIRST_READS
    while start < len(names):
        batch = [f"{paths.CONFIG_CHANGES}/{name}" for name in names[start:start + chunk]]
        start, chunk = start + chunk, min(2 * chunk, PURGE_MAX_READS)
        for path, hit in list(_read(client, batch, known)):
            if hit is None or hit[0] is None:
                continue
            if now * 1000.0 - hit[1] <= max_age * 1000.0:
                return deleted
            if zk_io.plain_delete(client, path, journal, writer):
                deleted.append(path)
    return deleted


def wall_now() -> float:
    """The wall clock ZooKeeper's ctime is compared with (seconds)."""
    return time.time()
