"""TopicsDeletedTrigger: wait, without holding a worker, until a batch of topics is deleted.

A topic is deleted when its topic znode, its config node and its delete marker are all gone
(docs/zookeeper.md §2.9, §8.6; :func:`kafka_zk.admin.deletion.deletion_status`). The trigger carries
only primitives — connection id, topic names, an *absolute* deadline (epoch seconds) and poll
timings — so a restarted triggerer resumes the same wait with the same clock. Each poll runs in
a worker thread (``asyncio.to_thread``; kazoo never blocks the event loop) and logs one line:
topics deleted / total and the ones still pending.

It yields exactly one :class:`TriggerEvent`, ``status`` being:

* ``done`` — every topic is deleted;
* ``not_deleted`` — some topic's marker is gone but the topic is still in ``/brokers/topics``
  on two polls in a row: a 2.4+ controller with ``delete.topic.enable=false`` deletes markers
  at once and leaves the topic (§1.9, §2.9). A successful deletion removes the marker *last*,
  so this state never occurs on the way to success;
* ``timeout`` — the deadline passed with topics still there (marked or not): an older
  controller with deletion disabled keeps markers, or a replica is on a dead broker;
* ``error`` — ZooKeeper unreachable (the message says which call failed).

The payload lists ``deleted``, ``pending`` (still marked) and ``not_deleted`` topics. ``done`` is
held back until ``not_before`` (:mod:`operators.triggers.base`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator, Sequence

from airflow.triggers.base import TriggerEvent

from kafka_zk.admin.deletion import deletion_status
from kafka_zk.errors import KafkaZkError
from operators.triggers.base import ZooKeeperPollTrigger


class TopicsDeletedTrigger(ZooKeeperPollTrigger):
    """Fires once every topic of ``topics`` is deleted, or deletion is shown not to happen."""

    def __init__(self, zk_conn_id: str, topics: Sequence[str], deadline: float, poll_interval: float = 1.0,
                 batch: int = -1, not_before: float | None = None) -> None:
        super().__init__(zk_conn_id, deadline, poll_interval, not_before)
        self.topics = [str(t) for t in topics]
        self.batch = int(batch)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{__name__}.TopicsDeletedTrigger", {
            "zk_conn_id": self.zk_conn_id, "topics": list(self.topics), "deadline": self.deadline,
            "poll_interval": self.poll_interval, "batch": self.batch, "not_before": self.not_before})

    def _poll(self) -> dict[str, str]:
        status = deletion_status(self._client(), self.topics)
        return {t: s.state for t, s in status.items()}

    def _event(self, status: str, states: dict[str, str], message: str, started: float) -> TriggerEvent:
        return TriggerEvent({
            "status": status, "batch": self.batch, "message": message,
            "deleted": sorted(t for t, s in states.items() if s == "deleted"),
            "pending": sorted(t for t, s in states.items() if s == "pending"),
            "not_deleted": sorted(t for t, s in states.items() if s == "not_deleted"),
            "elapsed_s": round(time.time() - started, 3), "at": time.time()})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        started = time.time()
        states: dict[str, str] = {}
        suspect: set[str] = set()
        try:
            while True:
                try:
                    states = await asyncio.to_thread(self._poll)
                except KafkaZkError as exc:
                    yield self._event("error", states, f"ZooKeeper: {exc}", started)
                    return
                deleted = [t for t, s in states.items() if s == "deleted"]
                left = sorted(t for t, s in states.items() if s != "deleted")
                self.log.info("batch %d: %d/%d topics deleted%s", self.batch, len(deleted), len(states),
                              f"; waiting for {', '.join(left[:10])}" + (" …" if len(left) > 10 else "")
                              if left else "")
                if not left and await self._too_early(time.time()):
                    continue
                if not left:
                    yield self._event("done", states, f"batch {self.batch}: {len(deleted)} topic(s) deleted", started)
                    return
                now_not_deleted = {t for t, s in states.items() if s == "not_deleted"}
                confirmed = sorted(now_not_deleted & suspect)
                if confirmed:
                    gone = ", ".join(confirmed)
                    yield self._event("not_deleted", states,
                                      f"the controller removed the marker(s) of {gone} but kept the topic(s)", started)
                    return
                suspect = now_not_deleted
                now = time.time()
                if now >= self.deadline:
                    yield self._event("timeout", states, f"topic(s) {', '.join(left)} still present after the "
                                      "deletion timeout", started)
                    return
                await self._pause(now)
        finally:
            await asyncio.to_thread(self._close)
