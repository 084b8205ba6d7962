"""When a restarted broker went and came back, by ZooKeeper's own record (epoch seconds).

A rolling restart's timeline is read from ZooKeeper events, not from when an action returned:

* :func:`registration` — a broker's ephemeral ``/brokers/ids/<id>``: its czxid (a new one is a new
  session: the restarted process) and its ctime (when that session registered, on ZooKeeper's clock);
* :class:`DeregistrationWatch` — an exists-watch on the registration set before the restart action
  runs: the time ZooKeeper's deletion notification arrived (the old session's registration removed,
  i.e. the broker stopped); ``None`` when it was not seen (the registration already gone or replaced
  when the watch was set, or the watch lost with an expired session);
* :func:`state_times` — the partitions' state znodes with their mtime: the time of the write
  that made a broker an ISR member again, or its leader again, when read soon after it (the
  caller keeps the first mtime at which it sees the condition hold).

Failure: ZooKeeper's own (connection loss...) propagate to the caller, which rides them out
(:mod:`kafka_zk.outage`); a state payload Kafka would not write raises
:class:`~kafka_zk.errors.InvalidPayload`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Iterable

from kazoo.client import KazooClient
from kazoo.protocol.states import EventType, WatchedEvent

from kafka_zk import paths
from kafka_zk.codecs import PartitionState, TopicPartition, decode_partition_state
from kafka_zk.snapshot import pipelined


@dataclass(frozen=True)
class Registration:
    """A broker's current registration: its session's czxid and when it was created (epoch seconds)."""

    czxid: int
    created_at: float


def registration(client: KazooClient, broker: int) -> Registration | None:
    """``/brokers/ids/<broker>`` now (``None``: not registered)."""
    stat = client.exists(paths.broker(broker))
    return None if stat is None else Registration(stat.czxid, stat.ctime / 1000.0)


class DeregistrationWatch:
    """The arrival time of the deletion of ``/brokers/ids/<broker>`` (registration ``czxid``), if seen."""

    def __init__(self, client: KazooClient, broker: int, czxid: int | None) -> None:
        self.broker = broker
        self.czxid = czxid
        self.removed_at: float | None = None
        self._lock = threading.Lock()
        self._client = client
        stat = client.exists(paths.broker(broker), watch=self._fired)
        # watching another registration than ``czxid`` (already gone, or replaced) would time the wrong one
        self._armed = stat is not None and (czxid is None or stat.czxid == czxid)

    def _fired(self, event: WatchedEvent) -> None:
        now = time.time()
        if not getattr(self, "_armed", True):      # (a firing before __init__ ended is judged as armed)
            return
        if event.type == EventType.DELETED:
            with self._lock:
                if self.removed_at is None:
                    self.removed_at = now
        elif event.type == EventType.CHANGED:
            try:                  # a change of the payload: watch again (runs on kazoo's event thread)
                self._client.exists_async(paths.broker(self.broker), watch=self._fired)
            except Exception:  # noqa: BLE001 - the watch is best effort; the time then stays unknown
                pass


def state_times(client: KazooClient, tps: Iterable[TopicPartition]
                ) -> dict[TopicPartition, tuple[PartitionState, float]]:
    """Each partition's state and the mtime of its state znode (epoch seconds); absent ones left out."""
    wanted = list(tps)
    got = pipelined(client, "get", [paths.partition_state(tp.topic, tp.partition) for tp in wanted])
    out = {}
    for tp in wanted:
        found = got.get(paths.partition_state(tp.topic, tp.partition))
        if found is None:
            continue
        data, stat = found
        out[tp] = (decode_partition_state(data), stat.mtime / 1000.0)
    return out
