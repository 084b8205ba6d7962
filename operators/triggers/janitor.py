"""ReassignmentGoneTrigger: wait, holding no worker, until no partition of a run is still being
reassigned — the moment its throttles may go.

A wave of ours left in ``/admin/reassign_partitions`` (the task waiting on it failed, timed out or
was marked failed) keeps copying in Kafka: a ZooKeeper-mode reassignment cannot be stopped. Its
throttles must stay until it ends, or the rest of the copy runs at full speed. The throttle
teardown defers on this trigger instead of removing them, and removes them when it fires.

The trigger carries primitives only (connection id, run folder, absolute deadline, poll
interval). Each poll reads the run's partitions from ``waves.json`` and
``/admin/reassign_partitions`` in a worker thread. A ZooKeeper error is logged with its cause and
retried at the next poll until the deadline: a blip never ends the wait early.

It yields one :class:`TriggerEvent`: ``done`` (no partition of the run listed, or the node gone),
or ``timeout`` (the deadline passed while some still were; the payload lists them).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, AsyncIterator

from airflow.triggers.base import TriggerEvent
from kazoo.exceptions import KazooException

from kafka_zk import paths
from kafka_zk.codecs import decode_reassignment
from kafka_zk.errors import KafkaZkError
from procedures.run_folder import RunFolder
from procedures.waves.book import WaveBook
from operators.triggers.base import ZooKeeperPollTrigger


def ours_in_flight(client, run_dir: str | Path) -> list[str]:
    """Partitions of the run (its ``waves.json``) that ``/admin/reassign_partitions`` lists."""
    from kazoo.exceptions import NoNodeError


    book = WaveBook.load(RunFolder(Path(run_dir)).wave_progress)
    if book is None:
        return []
    try:
        data, _ = client.retry(client.get, paths.REASSIGN_PARTITIONS)
    except NoNodeError:
        return []
    ours = {m.tp for w in book.waves for m in w.moves}
    return sorted(str(e.tp) for e in decode_reassignment(data, strict=False).entries if e.tp in ours)


class ReassignmentGoneTrigger(ZooKeeperPollTrigger):
    """Fires once no partition of the run in ``run_dir`` is in ``/admin/reassign_partitions``."""

    def __init__(self, zk_conn_id: str, run_dir: str, deadline: float, poll_interval: float = 5.0,
                 not_before: float | None = None) -> None:
        super().__init__(zk_conn_id, deadline, poll_interval, not_before)
        self.run_dir = str(run_dir)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{__name__}.ReassignmentGoneTrigger", {
            "zk_conn_id": self.zk_conn_id, "run_dir": self.run_dir, "deadline": self.deadline,
            "poll_interval": self.poll_interval, "not_before": self.not_before})

    def _poll(self) -> list[str]:
        return ours_in_flight(self._client(), self.run_dir)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        listed: list[str] = []
        try:
            while True:
                try:
                    listed = await asyncio.to_thread(self._poll)
                    if not listed and await self._too_early(time.time()):
                        continue
                    if not listed:
                        yield TriggerEvent({"status": "done", "run_dir": self.run_dir})
                        return
                except (KafkaZkError, KazooException) as exc:
                    self.log.warning("reading /admin/reassign_partitions failed (%s: %s); retrying at the next poll",
                                     type(exc).__name__, exc)
                    await asyncio.to_thread(self._close)
                now = time.time()
                if now >= self.deadline:
                    yield TriggerEvent({"status": "timeout", "run_dir": self.run_dir, "listed": listed})
                    return
                await self._pause(now)
        finally:
            await asyncio.to_thread(self._close)
