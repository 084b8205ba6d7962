"""What every ZooKeeper-polling trigger shares: a lazily built hook, a bounded poll pause, cleanup.

Subclasses keep only primitives in ``serialize()`` (connection id, absolute deadline, poll
interval, their own ids) and call :meth:`_client` from code they run in ``asyncio.to_thread``, so
the triggerer's event loop never blocks on ZooKeeper. The client is closed when ``run()`` ends and
in ``cleanup()`` (trigger cancelled or moved to another triggerer). Time is read and slept on
``self.clock`` (:mod:`operators.triggers.clock`: the wall clock unless a test replaces it).
"""

from __future__ import annotations

import asyncio

from airflow.triggers.base import BaseTrigger
from kazoo.client import KazooClient
from operators.hooks.zookeeper import ZooKeeperHook
from operators.triggers.clock import WALL, Clock


class ZooKeeperPollTrigger(BaseTrigger):
    """Base of the triggers that poll a Kafka cluster's ZooKeeper until a deadline."""

    def __init__(self, zk_conn_id: str, deadline: float, poll_interval: float) -> None:
        super().__init__()
        self.zk_conn_id = zk_conn_id
        self.deadline = float(deadline)
        self.poll_interval = float(poll_interval)
        self._hook = None
        self.clock: Clock = WALL   # not serialized: a triggerer always runs on the wall clock

    def _client(self) -> KazooClient:
        """The hook's client (blocking: call it from a worker thread)."""
        if self._hook is None:
            self._hook = ZooKeeperHook(self.zk_conn_id)
        return self._hook.get_conn()

    def _close(self) -> None:
        if self._hook is not None:
            hook, self._hook = self._hook, None
            hook.close()

    async def _pause(self, now: float) -> None:
        """Sleep one poll interval, never past the deadline."""
        await self.clock.sleep(min(self.poll_interval, max(0.0, self.deadline - now)))

    async def cleanup(self) -> None:
        await asyncio.to_thread(self._close)
