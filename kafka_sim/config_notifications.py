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
"""

from __future__ import annotations

import time
from typing import Callable, Iterable

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kafka_sim import zk_io
from kafka_sim.zk_io import Journal
from kafka_zk import paths

PREFIX = "config_change_"
PURGE_FIRST_READS = 8       # notifications a purge reads at once (pipelined), doubling each round
PURGE_MAX_READS = 256


def notification_names(children: Iterable[str]) -> list[str]:
    """The ``config_change_<10 digits>`` children, sorted by name (= by sequence number)."""
    return sorted(k for k in children if k.startswith(PREFIX) and k[len(PREFIX):].isdigit()
                  and len(k) == len(PREFIX) + 10)


def process(client: KazooClient, names: list[str], last_seq: int,
            handle: Callable[[str, bytes | None, int], None]) -> int:
    """Hand each notification newer than ``last_seq`` to ``handle(path, data, seq)``.

    Returns the new last processed sequence number. A child gone before its read is skipped
    (its number still counts as processed, as in Kafka). The reads are pipelined (all sent, then
    handled in order; Kafka awaits each before the next): a notification's data never changes once
    created, so each handler sees what a one-by-one read would have shown — and 96 brokers reading
    a thousand throttle notifications each pay one round trip apiece instead of a thousand.
    """
    pending = []
    for name in names:
        seq = paths.sequence_of(name)
        if seq <= last_seq:
            continue
        last_seq = seq
        path = f"{paths.CONFIG_CHANGES}/{name}"
        pending.append((path, seq, client.get_async(path)))
    for path, seq, res in pending:
        try:
            data, _ = res.get(timeout=30)
        except NoNodeError:
            continue
        handle(path, data, seq)
    return last_seq


def purge_obsolete(client: KazooClient, names: list[str], now: float, max_age: float,
                   journal: Journal, writer: str) -> list[str]:
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
        pending = [(f"{paths.CONFIG_CHANGES}/{name}", client.get_async(f"{paths.CONFIG_CHANGES}/{name}"))
                   for name in names[start:start + chunk]]
        start, chunk = start + chunk, min(2 * chunk, PURGE_MAX_READS)
        for path, res in pending:
            try:
                data, stat = res.get(timeout=30)
            except NoNodeError:
                continue
            if data is None:
                continue
            if now * 1000.0 - stat.ctime <= max_age * 1000.0:
                return deleted
            if zk_io.plain_delete(client, path, journal, writer):
                deleted.append(path)
    return deleted


def wall_now() -> float:
    """The wall clock ZooKeeper's ctime is compared with (seconds)."""
    return time.time()
