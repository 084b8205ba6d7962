"""A window of asynchronous ZooKeeper reads in flight, and what they gathered.

:func:`keep_in_flight` is the one loop both pipelined readers run — the per-znode ``*_async``
reads (:func:`kafka_zk.snapshot.pipelined`) and the multiRead batches
(:func:`kafka_zk.multi_read.multi_read`): send each item, keep at most ``window`` requests
outstanding, collect every reply in the order it was sent. :class:`Gathered` is what they return:
the results by path, the paths lost with the connection (the caller reads them again) and the
first connection error.

Failure: whatever ``collect`` raises propagates at once (the requests still in flight are left
unread, their replies dropped by kazoo); nothing is retried here.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable, TypeVar

Item = TypeVar("Item")
Reply = TypeVar("Reply")


@dataclass
class Gathered:
    """Results by path (``None`` for a missing node), paths to read again, the first error that lost them."""

    out: dict[str, object] = field(default_factory=dict)
    unread: list[str] = field(default_factory=list)
    first_error: Exception | None = None

    def lost(self, paths: Iterable[str], error: Exception) -> None:
        if self.first_error is None:
            self.first_error = error
        self.unread.extend(paths)

    def as_tuple(self) -> tuple[dict[str, object], list[str], Exception | None]:
        return self.out, self.unread, self.first_error


def keep_in_flight(items: Iterable[Item], send: Callable[[Item], Reply], collect: Callable[[Item, Reply], None],
                   window: int) -> None:
    """``send(item)`` for each item with at most ``window`` replies outstanding; ``collect(item, reply)``
    for each in the order sent (the oldest first, as soon as the window is full)."""
    inflight: deque[tuple[Item, Reply]] = deque()
    for item in items:
        inflight.append((item, send(item)))
        if len(inflight) >= window:
            collect(*inflight.popleft())
    while inflight:
        collect(*inflight.popleft())
