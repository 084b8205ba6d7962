"""Riding out a ZooKeeper outage: which errors are one, and a bounded wait for the session to answer again.

Every step that waits on the cluster waits out an outage for a bounded time (:data:`ZK_OUTAGE_S`,
two minutes, the wave trigger's bound too) and then goes on from where it was. The parts:

* :func:`is_outage` — whether an error is ZooKeeper not answering (kazoo's connection loss,
  session expiry, operation timeout, an exhausted retry, or this project's
  :class:`~kafka_zk.errors.ZkUnavailable` wrapping one), as opposed to an answer that refuses;
* :func:`zk_cause` — the underlying error of a wrapped one, as ``Type: text`` (what a log or a
  message names);
* :func:`wait_for_session` — until a started kazoo client is connected again (kazoo reconnects by
  itself and replaces an expired session with a new one), bounded; one probe read proves it;
* :class:`OutageRider` — the bookkeeping of one wait's outages: the first failure starts the
  clock, a success resets it; :meth:`OutageRider.ride` waits for the session for what is left of
  the bound and says how long it waited (a caller's own deadline moves by that much: an outage is
  not the cluster being slow).

Failure: :class:`ZkOutageTooLong` (a :class:`~kafka_zk.errors.ZkUnavailable`) when ZooKeeper
did not answer within the bound, naming how long, the last error and ``where``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError, ConnectionLoss, OperationTimeoutError, SessionExpiredError

from kafka_zk.errors import ZkUnavailable

#: seconds an outage is waited out before a step gives up (the wave trigger's ``zk_outage_s`` default)
ZK_OUTAGE_S = 120.0
_KAZOO_OUTAGE = (ConnectionLoss, SessionExpiredError, OperationTimeoutError, ConnectionClosedError)


class ZkOutageTooLong(ZkUnavailable):
    """ZooKeeper did not answer again within the bound of an outage wait."""


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` means ZooKeeper did not answer (retrying later may succeed)."""
    if isinstance(exc, (ZkUnavailable, *_KAZOO_OUTAGE)):
        return True
    return type(exc).__name__ in ("KazooTimeoutError", "RetryFailedError")


def zk_cause(exc: BaseException) -> str:
    """The underlying ZooKeeper error of ``exc`` (kazoo's, when ours wraps one), as ``Type: text``."""
    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    text = str(root) if root is not exc else str(exc)
    return f"{type(root).__name__}: {text}" if text else type(root).__name__


def wait_for_session(client: KazooClient, timeout: float, poll: float = 0.2,
                     sleep: Callable[[float], None] = time.sleep) -> bool:
    """Whether ``client`` answers a read again within ``timeout`` seconds (kazoo reconnects on its own)."""
    deadline = time.monotonic() + max(0.0, timeout)
    while True:
        if client.connected:
            try:
                client.exists("/")
                return True
            except Exception as exc:  # noqa: BLE001 - any answer but an outage is an answer
                if not is_outage(exc):
                    return True
        if time.monotonic() >= deadline:
            return False
        sleep(min(poll, max(0.0, deadline - time.monotonic())))


@dataclass
class OutageRider:
    """One wait's outages against one bound (see module docstring)."""

    client: KazooClient
    bound_s: float = ZK_OUTAGE_S
    log: Callable[[str], None] = print
    sleep: Callable[[float], None] = time.sleep
    since: float | None = field(default=None)       # monotonic time of the first failure of this outage
    outages: int = 0

    def ok(self) -> None:
        """A read answered: the outage (if any) is over."""
        self.since = None

    def ride(self, exc: BaseException, where: str) -> float:
        """Wait for the session after ``exc`` (an outage, :func:`is_outage`) for what is left of the
        bound; the seconds waited. :class:`ZkOutageTooLong` when it does not answer in time."""
        started = time.monotonic()
        if self.since is None:
            self.since = started
            self.outages += 1
        left = self.bound_s - (started - self.since)
        self.log(f"ZooKeeper did not answer at {where} ({zk_cause(exc)}); waiting up to {max(left, 0):.0f}s "
                 "for the session, then going on from there")
        if left <= 0 or not wait_for_session(self.client, left, sleep=self.sleep):
            raise ZkOutageTooLong(
                f"ZooKeeper did not answer for {time.monotonic() - self.since:.0f}s at {where} (bound "
                f"{self.bound_s:g}s; last error {zk_cause(exc)}): check that the ensemble is up") from exc
        return time.monotonic() - started
