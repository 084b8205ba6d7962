"""Test helpers that write what a Kafka broker would, with plain kazoo (not our admin layer).

Used by tests that need registered brokers without running the emulator; and :class:`ZkSampler`,
the thread a test reads ZooKeeper with while a run goes on (it outlives a session expiry under load).
"""

from __future__ import annotations

import json
import threading
from typing import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException

STARTUP_PATHS = ("/consumers", "/brokers/ids", "/brokers/topics", "/brokers/seqid", "/config/changes",
                 "/config/topics", "/config/clients", "/config/users", "/config/brokers",
                 "/admin/delete_topics", "/isr_change_notification", "/latest_producer_id_block",
                 "/log_dir_event_notification")


def register_brokers(zk: KazooClient, racks: dict[int, str | None]) -> None:
    """Create the startup paths and a v4 registration per broker (docs/zookeeper.md §1.3), ephemeral."""
    for path in STARTUP_PATHS:
        zk.ensure_path(path)
    for broker_id, rack in racks.items():
        doc = {"listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
               "endpoints": [f"PLAINTEXT://127.0.0.1:{19092 + broker_id}"], "jmx_port": -1,
               "host": "127.0.0.1", "port": 19092 + broker_id, "version": 4,
               "timestamp": "1600000000000"}
        if rack is not None:
            doc["rack"] = rack
        zk.create(f"/brokers/ids/{broker_id}", json.dumps(doc).encode(), ephemeral=True)


def create_topic_by_hand(zk: KazooClient, name: str, assignment: dict[int, list[int]]) -> None:
    """A v1 topic znode and a state znode per partition (first replica leads, all in ISR), as a
    2.4 controller leaves them after creating the topic."""
    zk.create(f"/brokers/topics/{name}", json.dumps({"version": 1, "partitions": {
        str(p): r for p, r in assignment.items()}}).encode(), makepath=True)
    for p, r in assignment.items():
        zk.create(f"/brokers/topics/{name}/partitions/{p}/state", json.dumps({
            "controller_epoch": 1, "leader": r[0], "version": 1, "leader_epoch": 0, "isr": r}).encode(),
            makepath=True)


def read_json(zk: KazooClient, path: str):
    data, _ = zk.get(path)
    return json.loads(data) if data else None


def tree(zk: KazooClient, path: str = "/") -> dict[str, bytes | None]:
    """Every znode under ``path`` with its data: to assert that nothing was written."""
    out: dict[str, bytes | None] = {}

    def walk(p: str) -> None:
        data, _ = zk.get(p)
        out[p] = data
        for child in sorted(zk.get_children(p)):
            walk(p.rstrip("/") + "/" + child)

    walk(path)
    return out


def set_config_by_hand(zk: KazooClient, entity_path: str, config: dict[str, str]) -> None:
    """What ``kafka-configs --zookeeper --alter`` writes for ``entity_path`` (e.g. ``topics/t``):
    the entity znode, then a change notification."""
    path = f"/config/{entity_path}"
    data = json.dumps({"version": 1, "config": config}).encode()
    if zk.exists(path):
        zk.set(path, data)
    else:
        zk.create(path, data, makepath=True)
    zk.create("/config/changes/config_change_", json.dumps({"version": 2, "entity_path": entity_path}).encode(),
              sequence=True, makepath=True)


def sampling_client(connect: str, timeout: float = 30.0) -> KazooClient:
    """A plain kazoo client for a test's sampler thread: a 30 s session (the test ZooKeeper allows up
    to 60 s) and connection retries without end, so a loaded machine that starves the client's
    heartbeats costs a few samples, not the sampler (kazoo opens a new session after an expiry)."""
    from kazoo.retry import KazooRetry

    client = KazooClient(hosts=connect, timeout=timeout,
                         connection_retry=KazooRetry(max_tries=-1, max_delay=1.0))
    client.start(timeout=timeout)
    return client


class ZkSampler(threading.Thread):
    """Calls ``sample(zk)`` every ``period`` s on a daemon thread until :meth:`stop`, surviving what a
    load spike does to its session: a read that fails with a kazoo error (connection loss, an expired
    session, while kazoo reconnects with a new one) is counted in ``errors`` and sampling goes on.
    ``samples`` counts the reads that succeeded; anything else the sample raises ends the thread and
    is raised again by :meth:`stop` (a bug in the test, not the load)."""

    def __init__(self, zk: KazooClient, sample: Callable[[KazooClient], None], period: float = 0.05,
                 name: str = "zk-sampler") -> None:
        super().__init__(daemon=True, name=name)
        self.zk, self.sample, self.period = zk, sample, period
        self.samples = 0
        self.errors: list[str] = []
        self.failure: BaseException | None = None
        self._stopping = threading.Event()

    def run(self) -> None:
        while not self._stopping.is_set():
            try:
                self.sample(self.zk)
                self.samples += 1
            except KazooException as e:
                self.errors.append(type(e).__name__)
            except BaseException as e:  # noqa: BLE001 - kept and raised by stop()
                self.failure = e
                return
            self._stopping.wait(self.period)

    def stop(self, timeout: float = 10.0) -> None:
        """Stops sampling; raises what ended the thread, if anything did."""
        self._stopping.set()
        if self.ident is not None:
            self.join(timeout)
        if self.failure is not None:
            raise self.failure

    def close(self) -> None:
        """Stops sampling (raising nothing: for a ``finally``) and closes the client."""
        self._stopping.set()
        if self.ident is not None:
            self.join(10)
        self.zk.stop()
        self.zk.close()
