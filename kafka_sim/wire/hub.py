"""The emulated brokers' listeners and the data faults they serve, owned by the engine.

A broker's listener opens when the broker starts (before it registers, so ``/brokers/ids/<id>``
carries the real port) and closes when the process dies (kill, controlled shutdown, stop): a
dead broker answers nothing. Restarted, it listens on the same port when that port is still
free. Corrupt records (``corrupt_record``) are per (partition, broker): that replica serves a
different value at that offset, hence a different batch CRC.

Failure: a request that cannot read the engine in time (engine stopped) closes its connection.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from kafka_sim.wire.handlers import BrokerState, handle
from kafka_sim.wire.listener import Listener
from kafka_sim.wire.state import ClusterView, ReplicaLog, cluster_view, replica_logs
from kafka_zk.codecs import TopicPartition

if TYPE_CHECKING:
    from kafka_sim.engine import Engine

_ENGINE_WAIT = 10.0


class WireHub:
    def __init__(self, engine: "Engine") -> None:
        self._engine = engine
        self._listeners: dict[int, Listener] = {}
        self._lock = threading.Lock()
        self.corrupt: dict[tuple[TopicPartition, int], frozenset[int]] = {}   # engine thread only

    def open(self, broker_id: int) -> int:
        """Start (or keep) broker ``broker_id``'s listener; its port."""
        with self._lock:
            lst = self._listeners.get(broker_id)
            if lst is None:
                state = BrokerState(broker_id, self._engine.spec.seed, self._view,
                                    lambda tps, b=broker_id: self._logs(b, tps))
                lst = self._listeners[broker_id] = Listener(lambda frame, s=state: handle(s, frame),
                                                            f"broker-{broker_id}")
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

    def corrupt_record(self, tp: TopicPartition, broker_id: int, offset: int) -> None:
        """(engine thread) ``broker_id``'s replica of ``tp`` serves another value at ``offset``."""
        key = (tp, broker_id)
        self.corrupt[key] = self.corrupt.get(key, frozenset()) | {offset}

    def _view(self) -> ClusterView:
        ports = self.known_ports()
        return self._engine.call(lambda: cluster_view(self._engine, ports), timeout=_ENGINE_WAIT)

    def _logs(self, broker_id: int, tps: list[TopicPartition]) -> dict[TopicPartition, ReplicaLog | None]:
        eng = self._engine
        return eng.call(lambda: replica_logs(eng, broker_id, tps, self.corrupt), timeout=_ENGINE_WAIT)
