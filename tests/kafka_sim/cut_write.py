"""Cut one exact controller write of the emulator off in flight (tests only).

The first fenced write (``Fenced.write``) or pipelined batch (``Fenced.write_many``) of the
emulator's controller that holds an op of ``kind`` at ``path`` (the ``nth`` such, counting from 0)
is sent while the loopback proxy holds every byte (:meth:`BlipProxy.hold`); once the request sits
in the proxy, a blip cuts every connection: ZooKeeper never sees the write, kazoo answers
ConnectionLoss, the sessions survive (the blip is shorter than their timeout). With
``lost="reply"`` the proxy forwards the request and keeps the reply: ZooKeeper did the write (a
pipelined batch: its first multi at least), the controller hears ConnectionLoss all the same. Kafka's
controller never sees that (its ZooKeeperClient sends the request again); the emulator's gives
the event up and runs it again when the session answers.

Failure: :func:`cut_first_write` returns a list that gets the write's outcome (its exception, or
its result if the cut did not land): the test asserts on it.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Iterable

import pytest

from kafka_sim.zk_io import Fenced, Op
from tests.campaign.blip_proxy import BlipProxy

MULTI = 14      # ZooKeeper's opcode for a multi: every controller write is one ([check epoch, op])
#: what the controller's broker records when its session answers after a cut (the re-run)
CAUGHT_UP = ("controller_resync", "controller_failover_redone")


def caught_up(cluster: Any) -> int:
    """How many times a controller caught up after a cut so far (count it before the cut)."""
    return sum(e.kind in CAUGHT_UP for e in cluster.history())


def wait_caught_up(cluster: Any, before: int, timeout: float = 60.0) -> None:
    """Until the controller caught up after the cut (``before``: :func:`caught_up` ahead of it)
    and went idle: with the reply lost, ZooKeeper holds what the write wrote at once, and a
    test's assertions must see what the re-run left."""
    deadline = time.monotonic() + timeout
    while caught_up(cluster) <= before:
        if time.monotonic() > deadline:
            raise AssertionError(f"the controller did not catch up within {timeout}s after the cut")
        time.sleep(0.02)
    assert cluster.wait_idle(timeout), "the controller did not go idle after the cut"


def cut_in_flight(proxy: BlipProxy, send: Callable[[], Any], seen: list[Any], lost: str = "request",
                  blip_s: float = 1.0) -> Any:
    """``send()`` a ZooKeeper multi through ``proxy`` and cut it: its request (``lost="request"``)
    or its reply (``"reply"``) goes no further, then a blip; its outcome is appended to ``seen``."""
    if lost not in ("request", "reply"):
        raise ValueError(f"lost={lost!r}: 'request' or 'reply'")
    proxy.hold(replies_only=lost == "reply")

    def held() -> bool:
        if lost == "reply":
            return proxy.answered(MULTI)
        return any(code == MULTI for _, code in proxy.held_requests())

    def cut_when_held() -> None:
        deadline = time.monotonic() + 20
        while not held() and time.monotonic() < deadline:
            time.sleep(0.005)
        proxy.blip(blip_s)
    threading.Thread(target=cut_when_held, daemon=True).start()
    try:
        result = send()
    except Exception as exc:
        seen.append(exc)
        raise
    seen.append(result)
    return result


def cut_first_write(monkeypatch: pytest.MonkeyPatch, proxy: BlipProxy, kind: str, path: str,
                    nth: int = 0, blip_s: float = 1.0, lost: str = "request") -> list[Any]:
    """Patch the controller's write path so that write (or the batch holding it) is cut off:
    its request (``lost="request"``) or its reply (``"reply"``) lost."""
    real_write, real_many = Fenced.write, Fenced.write_many
    seen: list[Any] = []
    passed: list[Op] = []

    def is_the_one(ops: list[Op]) -> bool:
        if seen or not any(op.kind == kind and op.path == path for op in ops):
            return False
        if len(passed) < nth:
            passed.append(ops[0])
            return False
        return True

    def write(self: Fenced, op: Op) -> Any:
        if not is_the_one([op]):
            return real_write(self, op)
        return cut_in_flight(proxy, lambda: real_write(self, op), seen, lost, blip_s)

    def write_many(self: Fenced, ops: Iterable[Op]) -> list[Any]:
        ops = list(ops)
        if not is_the_one(ops):
            return real_many(self, ops)
        return cut_in_flight(proxy, lambda: real_many(self, ops), seen, lost, blip_s)

    monkeypatch.setattr(Fenced, "write", write)
    monkeypatch.setattr(Fenced, "write_many", write_many)
    return seen
