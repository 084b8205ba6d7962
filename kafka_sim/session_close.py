"""End another client's ZooKeeper session from outside, as ZooKeeper's expiry would (the
emulator's :meth:`kafka_sim.faults.FaultsMixin.expire_session`).

A second client joins the session (same id and password) and closes it. The joining client
talks to the server without the chroot: kazoo's ``start`` with a chroot sends a request of its
own between the join and the close, and the owner, whose connection the join cut, takes the
session back within milliseconds — that request then fails (ConnectionLoss), and a joiner that
was never stopped goes on reconnecting to the session forever: the two clients hand it back and
forth, ZooKeeper never expires it, and the owner's state changes flood whoever listens to them
(campaign seed 200 under load: the emulator's clock stood still and the wave never moved). So
here the joiner is always stopped, whatever happened (stopping sends the close when it is
connected, and ends its reconnecting when not), and an attempt counts only once the owner saw its
session end (``gone()``); otherwise it is tried again, until ``timeout``.

Failure: nothing raises; :func:`close_session` returns why the session could not be ended within
``timeout`` (None: it ended).
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from kafka_sim.wait import wait_until

ATTEMPT_S = 10.0        # wall seconds one join may take
SEEN_S = 5.0            # wall seconds the owner has to see its session end after a close
RETRY_S = 0.2

log = logging.getLogger(__name__)


def discard(client: KazooClient) -> None:
    """Stop then close ``client``; never raises (kazoo's ``close`` refuses a client not stopped,
    and one not stopped keeps reconnecting)."""
    for step in (client.stop, client.close):
        try:
            step()
        except Exception as exc:  # noqa: BLE001 - a client being thrown away: only its end matters
            log.warning("closing a session-closing client: %s: %s", type(exc).__name__, exc)


def session_ended(client: KazooClient, session_id: int) -> bool:
    """Whether ``client`` has seen session ``session_id`` end: LOST, or connected on another session.
    A client cut off from the server (SUSPENDED, ``client_id`` None) has not: its session may answer."""
    if client.state == KazooState.LOST:
        return True
    now = client.client_id
    return client.state == KazooState.CONNECTED and now is not None and now[0] != session_id


def close_session(hosts: str, session: tuple[int, bytes], gone: Callable[[], bool], timeout: float,
                  client_kwargs: dict[str, Any] | None = None) -> str | None:
    """Close ``session`` (id, password) on the servers ``hosts`` (``host:port,...``, no chroot).

    ``gone()`` tells whether the owner has seen its session end. Returns None once it has, or why
    it had not within ``timeout`` wall seconds (each failed attempt is retried)."""
    deadline = time.monotonic() + timeout
    why = "its owner did not see it end"
    while True:
        if gone():
            return None
        other = KazooClient(hosts=hosts, client_id=session, timeout=ATTEMPT_S,
                            connection_retry=KazooRetry(max_tries=3, delay=0.1, max_delay=1.0),
                            **(client_kwargs or {}))
        try:
            other.start(timeout=min(ATTEMPT_S, max(deadline - time.monotonic(), 1.0)))
        except (KazooException, KazooTimeoutError) as exc:
            why = f"{type(exc).__name__}: {exc}"
        finally:
            discard(other)          # sends the close when connected; ends any reconnecting
        if wait_until(gone, min(SEEN_S, max(deadline - time.monotonic(), 0.0))):
            return None
        if time.monotonic() >= deadline:
            return why
        time.sleep(RETRY_S)
