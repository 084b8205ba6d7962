"""What every ZooKeeper-polling trigger shares: a lazily built hook, a bounded poll pause, cleanup.

Subclasses keep only primitives in ``serialize()`` (connection id, absolute deadline, poll
interval, their own ids) and call :meth:`_client` from code they run in ``asyncio.to_thread``, so
the triggerer's event loop never blocks on ZooKeeper. The client is closed when ``run()`` ends and
in ``cleanup()`` (trigger cancelled or moved to another triggerer). Time is read and slept on
``self.clock`` (:mod:`operators.triggers.clock`: the wall clock unless a test replaces it).

``not_before`` (epoch seconds; the operator sets it to a few seconds after it defers, see
:mod:`operators.deferral`) holds a ``done`` back until then: on Airflow 3.3 a trigger that fires
before the executor has reported the deferring attempt's exit gets the resumed task failed ("finished
with state success, but the task instance's state attribute is queued"). A subclass asks
:meth:`_too_early` before it yields ``done`` and polls again when told to.
"""

from __future__ import annotations

import asyncio

from airflow.triggers.base import BaseTrigger
from kazoo.client import KazooClient
from operators.hooks.zookeeper import ZooKeeperHook
from operators.triggers.clock import WALL, Clock


class ZooKeeperPollTrigger(BaseTrigger):
    """Base of the triggers that poll a Kafka cluster's ZooKeeper until a deadline."""

    def __init__(self, zk_conn_id: str, deadline: float, poll_interval: float,
                 not_before: float | None = None) -> None:
        super().__init__()
        self.zk_conn_id = zk_conn_id
        self.deadline = float(deadline)
        self.poll_interval = float(poll_interval)
        self.not_before = None if not_before is None else float(not_before)
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

    async def _too_early(self, now: float) -> bool:
        """Whether a ``done`` seen at ``now`` comes before ``not_before``; if so, sleeps until then
        and the caller polls again (see the module docstring)."""
        if self.not_before is None or now >= self.not_before:
            return False
        await self.clock.sleep(self.not_before - now)
        return True

    async def cleanup(self) -> None:
        await asyncio.to_thread(self._close)
