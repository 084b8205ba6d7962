"""The rolling-restart scenario shared by its CLI and DAG tests: 6 brokers in 3 racks with data and traffic.

:func:`start_roll_cluster` starts the emulator (brokers 1-6, racks a/b/c, a producer-like load:
every partition with a live leader grows at ``PRODUCE_RATE``), seeds two rack-aware RF-3 topics with
data (``orders`` with ``min.insync.replicas=2``, ``events``) and serves the fault commands that
``kafka-runbook sim fault restart`` sends (:class:`kafka_sim.control.CommandQueue`, as the running
``kafka-runbook sim`` does) on a thread. :class:`OfflineSampler` reads every partition state through
its own kazoo client on a thread, as a monitoring probe would, and keeps the offline partitions of
every sample. :func:`restart_action` is the command template the roll runs per broker.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from kazoo.client import KazooClient

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_sim.control import CommandQueue
from procedures.restart.gates import offline
from kafka_zk.snapshot import read_snapshot
from tests.zk_helpers import ZkSampler, sampling_client

REPO = Path(__file__).resolve().parents[1]
RACKS = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}
PRODUCE_RATE = 256 * 1024
MB = 1024 * 1024


def rack_aware(partitions: int, shift: int = 0) -> dict[int, list[int]]:
    """RF 3, one replica per rack, preferred leaders spread over the six brokers."""
    by_rack = [[1, 4], [2, 5], [3, 6]]
    out = {}
    for p in range(partitions):
        k = p + shift
        racks = [by_rack[(k + i) % 3] for i in range(3)]
        out[p] = [r[(k // 3 + i) % 2] for i, r in enumerate(racks)]
    return out


@contextmanager
def start_roll_cluster(connect: str, speed: float = 20.0) -> Iterator[EmulatedCluster]:
    cluster = EmulatedCluster(connect, ClusterSpec(brokers=RACKS, speed=speed, seed=0, produce_rate=PRODUCE_RATE))
    cluster.start()
    stop = threading.Event()
    try:
        orders = rack_aware(6)
        events = rack_aware(12, shift=1)
        cluster.create_topics({
            "orders": (orders, {p: 40 * MB for p in orders}, {"min.insync.replicas": "2"}),
            "events": (events, {p: 10 * MB for p in events}, None)})
        queue = CommandQueue(cluster.tool_client)
        server = threading.Thread(target=lambda: [queue.run_pending(cluster, 0.2) for _ in iter(stop.is_set, True)],
                                  daemon=True, name="sim-commands")
        server.start()
        yield cluster
    finally:
        stop.set()
        cluster.stop()


def restart_action(connect: str) -> str:
    """The roll's action on the emulator: ``kafka-runbook sim fault restart {broker}`` in a new process."""
    return f"{sys.executable} -m cli.main sim fault --zookeeper {connect} --timeout 60 restart {{broker}}"


class OfflineSampler:
    """Samples every partition's state on a thread (a :class:`~tests.zk_helpers.ZkSampler`: it outlives
    a session expiry under load); ``offline`` holds what any sample found offline."""

    def __init__(self, connect: str) -> None:
        self.offline: set[str] = set()
        self._sampler = ZkSampler(sampling_client(connect), self._sample, name="offline-sampler")

    @property
    def samples(self) -> int:
        return self._sampler.samples

    def _sample(self, zk: KazooClient) -> None:
        self.offline.update(map(str, offline(read_snapshot(zk, with_configs=False))))

    def __enter__(self) -> "OfflineSampler":
        self._sampler.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._sampler.stop()
        finally:
            self._sampler.close()


def preferred_leaders(zk: KazooClient) -> dict[str, tuple[int | None, int | None]]:
    """Every partition's (preferred replica, leader)."""
    return {str(p.tp): (p.preferred_leader, p.leader) for p in read_snapshot(zk, with_configs=False).partitions()}


def process_starts(cluster: EmulatedCluster) -> dict[int, int]:
    """How many times each broker's process was started since the cluster came up (the emulator's record)."""
    out: dict[int, int] = {}
    for e in cluster.history():
        if e.kind == "broker_started" and e.broker is not None:
            out[e.broker] = out.get(e.broker, 0) + 1
    return out


def engine_roll(connect: str, action, progress: Path, batches, log_name: str = "roll-test", **settings):
    """The roll engine without Airflow, as ``kafka-runbook restart`` runs it: (roll, book, client).

    The client is the project's (kafka_zk.connect: kazoo reconnecting by itself); the writer writes
    as a person at the keyboard; the progress file is ``progress``. Close the client when done."""
    import logging

    from kafka_zk.authority import PersonAtKeyboard
    from kafka_zk.connect import connect as zk_connect
    from kafka_zk.writer import ZkWriter
    from procedures.restart.roll import Roll, RollSettings, load_progress

    client = zk_connect(connect, timeout=30)
    writer = ZkWriter(client, authority=PersonAtKeyboard("the test"))
    book = load_progress(progress, batches)
    roll = Roll(client, writer, action, RollSettings(**{"poll_s": 0.1, **settings}), lambda b: b.save(progress),
                logging.getLogger(log_name))
    return roll, book, client
