"""ElectionDoneTrigger: wait, without holding a worker, until the controller consumed one election batch.

The controller reads ``/admin/preferred_replica_election`` once, elects what it can and deletes
the node, success or not (docs/zookeeper.md §2.8). So the wait is for the node to disappear; then the
trigger reads the batch's partitions (pipelined, :func:`kafka_zk.snapshot.read_snapshot` on the
batch's topics only) and reports which are now led by their preferred replica — a deleted node
does not mean every partition moved (§8.4).

The trigger carries only primitives: connection id, the batch as ``"topic:partition"`` strings,
an *absolute* deadline (epoch seconds), the poll interval and the batch index. It yields one
:class:`TriggerEvent`, ``status`` being ``done`` (node gone; ``elected`` and ``not_elected`` lists,
the latter with leader/preferred/ISR), ``timeout`` (the node is still there at the deadline: no
controller is processing it) or ``error`` (ZooKeeper unreachable). ``done`` is held back until
``not_before`` (:mod:`operators.triggers.base`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator, Sequence

from airflow.triggers.base import TriggerEvent
from kazoo.client import KazooClient

from kafka_zk import paths
from kafka_zk.codecs import tp_key, tp_of
from kafka_zk.errors import KafkaZkError, translate
from kafka_zk.snapshot import read_snapshot
from kafka_zk.waits import controller_liveness
from operators.triggers.base import ZooKeeperPollTrigger


def election_outcome(client: KazooClient, partitions: Sequence[str]) -> tuple[list[str], list[dict[str, Any]]]:
    """After the controller consumed a batch: the ``"topic:partition"`` keys now led by their
    preferred replica, and for the others why not (leader, preferred, ISR, preferred live)."""
    tps = [tp_of(k) for k in partitions]
    snap = read_snapshot(client, topics={tp.topic for tp in tps}, with_configs=False)
    elected, not_elected = [], []
    for tp in tps:
        if not snap.has_partition(tp):
            not_elected.append({"tp": tp_key(tp), "reason": "partition no longer exists"})
            continue
        p = snap.partition(tp)
        if p.leader == p.preferred_leader:
            elected.append(tp_key(tp))
        else:
            not_elected.append({"tp": tp_key(tp), "leader": p.leader, "preferred": p.preferred_leader,
                                "isr": list(p.isr), "preferred_live": p.preferred_leader in snap.brokers})
    return elected, not_elected


class ElectionDoneTrigger(ZooKeeperPollTrigger):
    """Fires once the election node is gone (with the batch's outcome) or the deadline passed."""

    def __init__(self, zk_conn_id: str, partitions: Sequence[str], deadline: float, poll_interval: float = 0.5,
                 batch: int = -1, not_before: float | None = None) -> None:
        super().__init__(zk_conn_id, deadline, poll_interval, not_before)
        self.partitions = [str(p) for p in partitions]
        self.batch = int(batch)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{__name__}.ElectionDoneTrigger", {
            "zk_conn_id": self.zk_conn_id, "partitions": list(self.partitions), "deadline": self.deadline,
            "poll_interval": self.poll_interval, "batch": self.batch, "not_before": self.not_before})

    def _node_exists(self) -> bool:
        try:
            return self._client().exists(paths.PREFERRED_REPLICA_ELECTION) is not None
        except KafkaZkError:
            raise
        except Exception as exc:  # noqa: BLE001 - translated
            raise translate(exc, paths.PREFERRED_REPLICA_ELECTION) from exc

    def _outcome(self) -> tuple[list[str], list[dict[str, Any]]]:
        return election_outcome(self._client(), self.partitions)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        started = time.time()
        try:
            while True:
                try:
                    exists = await asyncio.to_thread(self._node_exists)
                    if not exists and await self._too_early(time.time()):
                        continue
                    if not exists:
                        elected, not_elected = await asyncio.to_thread(self._outcome)
                        self.log.info("election batch %d consumed: %d/%d led by their preferred replica",
                                      self.batch, len(elected), len(self.partitions))
                        yield TriggerEvent({"status": "done", "batch": self.batch, "elected": elected,
                                            "not_elected": not_elected, "elapsed_s": round(time.time() - started, 3),
                                            "at": time.time()})
                        return
                except KafkaZkError as exc:
                    yield TriggerEvent({"status": "error", "batch": self.batch, "message": f"ZooKeeper: {exc}"})
                    return
                now = time.time()
                self.log.info("election batch %d: waiting for the controller to consume the node (%.0fs)",
                              self.batch, now - started)
                if now >= self.deadline:
                    try:
                        found = await asyncio.to_thread(lambda: controller_liveness(self._client()))
                    except Exception as exc:  # noqa: BLE001 - the timeout is the news; this only adds to it
                        found = f"the controller could not be read ({type(exc).__name__}: {exc})"
                    yield TriggerEvent({"status": "timeout", "batch": self.batch, "message":
                                        "/admin/preferred_replica_election still exists at the deadline: no controller "
                                        f"processed it; {found}"})
                    return
                await self._pause(now)
        finally:
            await asyncio.to_thread(self._close)
