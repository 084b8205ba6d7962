"""The controller: where it is, and the admin writes that make the brokers elect a new one (docs/zookeeper.md §2.7.1).

* :func:`read_controller` / :func:`wait_new_controller` — ``/controller``'s broker and czxid; a
  bounded wait for a controller created after a given czxid.
* :func:`reelect_controller` — delete ``/controller`` (when there is one) through the write gate
  and wait, bounded, for a new one: the way a pending ``/admin/reassign_partitions`` is re-read
  (§2.7.1, §2.7.4). A dry run records the delete and waits for nothing.
* :func:`move_controller_off` — delete ``/controller`` until a broker not in ``removed`` holds it
  (at most ``max_attempts`` deletes), for a decommission: stopping a removed broker that is the
  controller forces a failover at an unplanned moment.

Every delete goes through :class:`kafka_zk.writer.ZkWriter` (validated, audited).

Failure: :class:`ControllerNotMoved` when no controller appears within the wait, or it is still
on a removed broker after the last attempt (the cluster keeps working: stop the removed brokers
one at a time, each stop then moves the controller).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kafka_zk import paths
from kafka_zk.codecs import InvalidPayload, decode_controller
from kafka_zk.errors import KafkaZkError
from kafka_zk.writer import ZkWriter


class ControllerNotMoved(KafkaZkError):
    """The controller could not be moved off the removed brokers within the bounds."""


@dataclass(frozen=True)
class ControllerPlacement:
    """Where the controller was and is, and what this run did about it."""

    requested: bool
    before: int | None
    after: int | None
    removed: tuple[int, ...]
    attempts: int = 0
    dry_run: bool = False

    @property
    def on_removed(self) -> bool:
        return self.after is not None and self.after in self.removed

    def to_json(self) -> dict:
        return {**asdict(self), "removed": list(self.removed), "on_removed": self.on_removed}


def read_controller(client: KazooClient) -> tuple[int | None, int | None]:
    """(controller broker id, czxid of ``/controller``); (None, None) when there is none."""
    try:
        data, stat = client.retry(client.get, paths.CONTROLLER)
    except NoNodeError:
        return None, None
    try:
        return decode_controller(data).broker_id, stat.czxid
    except InvalidPayload:
        return None, stat.czxid


def wait_new_controller(client: KazooClient, old_czxid: int | None, timeout: float,
                        poll: float = 0.2) -> int | None:
    """Bounded wait for a ``/controller`` other than the one created at ``old_czxid``."""
    deadline = time.monotonic() + timeout
    while True:
        broker, czxid = read_controller(client)
        if broker is not None and czxid != old_czxid:
            return broker
        if time.monotonic() >= deadline:
            return None
        time.sleep(poll)


def move_controller_off(client: KazooClient, writer: ZkWriter, removed: frozenset[int], *,
                        max_attempts: int = 3, wait_s: float = 60.0, log: Any = None) -> ControllerPlacement:
    """Delete ``/controller`` until a kept broker holds it (at most ``max_attempts`` deletes)."""
    before, czxid = read_controller(client)
    current, attempts = before, 0
    while current is not None and current in removed:
        if attempts >= max_attempts:
            raise ControllerNotMoved(
                f"the controller is still on removed broker {current} after {attempts} re-election(s): stop the "
                "removed brokers one at a time (each stop moves the controller), or run again")
        writer.delete(paths.CONTROLLER)
        attempts += 1
        if writer.dry_run:
            return ControllerPlacement(True, before, before, tuple(sorted(removed)), attempts, dry_run=True)
        current = wait_new_controller(client, czxid, wait_s)
        if current is None:
            raise ControllerNotMoved(f"no controller was elected within {wait_s:g}s of deleting {paths.CONTROLLER}: "
                                     "check the brokers' logs; the cluster has no controller until one is")
        _, czxid = read_controller(client)
        if log is not None:
            log.info("re-election %d: controller now on broker %s", attempts, current)
    return ControllerPlacement(True, before, current, tuple(sorted(removed)), attempts)


def reelect_controller(client: KazooClient, writer: ZkWriter, wait_s: float) -> tuple[int | None, int | None]:
    """Delete ``/controller`` when there is one, then wait (bounded) for a new one: (before, after).

    ``after`` is None when no new controller appeared within ``wait_s``, and on a dry run (the
    delete is recorded, not made, so nothing is waited for)."""
    before, czxid = read_controller(client)
    if before is not None or czxid is not None:
        writer.delete(paths.CONTROLLER)
    if writer.dry_run:
        return before, None
    return before, wait_new_controller(client, czxid, wait_s)
