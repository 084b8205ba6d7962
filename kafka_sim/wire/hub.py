"""The emulated brokers' listeners and the data faults they serve, owned by the engine.

A broker's listener opens when the broker starts (before it registers, so ``/brokers/ids/<id>``
carries the real port) and closes when the process dies (kill, controlled shutdown, stop): a
dead broker answers nothing. Restarted, it listens on the same port when that port is still
free. Corrupt records (``corrupt_record``) are per (partition, broker): that replica serves a
different value at that offset (hence a different batch CRC), or the batch holding it damaged
(bytes flipped, or its header garbled: :func:`kafka_sim.wire.records.damage`). A topic's batches
are compressed as its ``compression.type`` says, read from ``/config/topics/<t>`` by the serving
broker the first time it serves the topic and read again after a config change notification.

A spec with ``listeners=False`` (a rehearsal's copy: nobody reads its records) opens none: its
brokers register port 0 and kafka-python, which the listeners' codecs need, is never loaded.

Failure: a request that cannot read the engine in time (engine stopped) closes its connection;
an unreadable or unknown ``compression.type`` serves uncompressed batches (logged).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from kazoo.exceptions import KazooException, NoNodeError

from kafka_zk import paths
from kafka_zk.codecs import TopicPartition, decode_entity_config
from kafka_zk.errors import InvalidPayload

if TYPE_CHECKING:
    from kafka_sim.engine import Engine
    from kafka_sim.wire.listener import Listener
    from kafka_sim.wire.state import ClusterView, ReplicaLog

log = logging.getLogger(__name__)
_ENGINE_WAIT = 10.0


class WireHub:
    def __init__(self, engine: "Engine") -> None:
        self._engine = engine
        self._listeners: dict[int, Listener] = {}
        self._lock = threading.Lock()
        self.corrupt: dict[tuple[TopicPartition, int], frozenset[int]] = {}   # engine thread only
        self.damaged: dict[tuple[TopicPartition, int], frozenset[tuple[int, str]]] = {}   # engine thread only
        self._codecs: dict[str, str] = {}          # topic -> codec, under _lock

    def open(self, broker_id: int) -> int:
        """Start (or keep) broker ``broker_id``'s listener; its port (0: the spec has no listeners)."""
        if not self._engine.spec.listeners:
            return 0
        # here, not at the top: kafka-python (the wire's codecs) loads only when a broker listens
        from kafka_sim.wire.handlers import BrokerState, handle
        from kafka_sim.wire.listener import Listener

        with self._lock:
            lst = self._listeners.get(broker_id)
            if lst is None:
                state = BrokerState(broker_id, self._engine.spec.seed, self._view,
                                    lambda tps, b=broker_id: self._logs(b, tps),
                                    lambda topic, b=broker_id: self.codec(b, topic))
                base = self._engine.spec.listener_base_port
                port = base + sorted(self._engine.spec.brokers).index(broker_id) if base else 0
                lst = self._listeners[broker_id] = Listener(lambda frame, s=state: handle(s, frame),
                                                            f"broker-{broker_id}", port, strict=bool(base))
        return lst.start()

    def close(self, broker_id: int) -> None:
        with self._lock:
            lst = self._listeners.get(broker_id)
        if lst is not None:
            lst.stop()

    def close_all(self) -> None:
        with self._lock:
            listeners = list(self._listeners.values())
        for lst in listeners:
            lst.stop()

    def port(self, broker_id: int) -> int:
        with self._lock:
            lst = self._listeners.get(broker_id)
        return lst.port if lst is not None and lst.running else 0

    def ports(self) -> dict[int, int]:
        with self._lock:
            return {b: lst.port for b, lst in self._listeners.items() if lst.running}

    def known_ports(self) -> dict[int, int]:
        """Every broker's port, running or not (a killed broker's registration still names it)."""
        with self._lock:
            return {b: lst.port for b, lst in self._listeners.items() if lst.port}

    def corrupt_record(self, tp: TopicPartition, broker_id: int, offset: int, how: str = "value") -> None:
        """(engine thread) ``broker_id``'s replica of ``tp`` serves another value at ``offset``
        (``how="value"``), or the batch holding ``offset`` damaged (``"bytes"``, ``"header"``)."""
        from kafka_sim.wire.records import CORRUPTIONS

        if how not in CORRUPTIONS:
            raise ValueError(f"unknown corruption {how!r}; one of {', '.join(CORRUPTIONS)}")
        key = (tp, broker_id)
        if how == "value":
            self.corrupt[key] = self.corrupt.get(key, frozenset()) | {offset}
        else:
            self.damaged[key] = self.damaged.get(key, frozenset()) | {(offset, how)}

    def codec(self, broker_id: int, topic: str) -> str:
        """The codec ``topic``'s batches are served with (its ``compression.type``)."""
        with self._lock:
            known = self._codecs.get(topic)
        if known is not None:
            return known
        broker = self._engine.brokers.get(broker_id)
        client = broker.client if broker is not None else None
        value = None
        if client is not None:
            try:
                data, _ = client.get(paths.topic_config(topic))
                value = decode_entity_config(data).config.get("compression.type")
            except (NoNodeError, InvalidPayload):
                value = None
            except KazooException:
                return "none"                       # not cached: asked again on the next fetch
        from kafka_sim.wire.records import codec_for

        try:
            codec = codec_for(value)
        except ValueError as exc:
            log.warning("topic %s: %s; serving uncompressed batches", topic, exc)
            codec = "none"
        with self._lock:
            self._codecs[topic] = codec
        return codec

    def topic_config_changed(self, topic: str) -> None:
        """A config change notification for ``topic``: its codec is read again."""
        with self._lock:
            self._codecs.pop(topic, None)

    def _view(self) -> ClusterView:
        from kafka_sim.wire.state import cluster_view

        ports = self.known_ports()
        return self._engine.call(lambda: cluster_view(self._engine, ports), timeout=_ENGINE_WAIT)

    def _logs(self, broker_id: int, tps: list[TopicPartition]) -> dict[TopicPartition, ReplicaLog | None]:
        from kafka_sim.wire.state import replica_logs

        eng = self._engine
        return eng.call(lambda: replica_logs(eng, broker_id, tps, self.corrupt, self.damaged),
                        timeout=_ENGINE_WAIT)
