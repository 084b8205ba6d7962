"""The emulator's kazoo handler: kazoo's threading handler with a cheaper ``select``.

kazoo's connection thread calls ``handler.select`` two to three times per request (wait for a reply
or a request to send, then before each read of a reply's header and body). The stock handler's
``selector_select`` builds an epoll selector for every call — epoll_create, one epoll_ctl per
socket, the wait, close: four system calls and ~13 µs of CPU around a wait of one or two sockets.
A rehearsal of 20,000 partitions makes ~420,000 such calls across its sessions (BENCHMARKS.md,
"Rehearsals", 2026-12-02). :class:`EmulatorHandler` answers the same question with ``poll(2)``
(one system call; the poll object lives in user space): the same sockets reported for the same
conditions, in the same shape — an error or hang-up counts as readable and writable, as epoll's
selector reports it and ``selector_select`` then files it (readable first).

Failure: an invalid or closed socket raises ``ValueError``/``TypeError`` as ``selector_select``
does, so kazoo's connection handling sees what it saw before.
"""

from __future__ import annotations

import math
import select
import threading
from typing import Any, Sequence

from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.handlers.utils import fileobj_to_fd

_IN, _OUT = select.POLLIN, select.POLLOUT
_KEPT_PER_THREAD = 8          # poll objects kept per thread (a connection thread uses one or two)
_kept = threading.local()


def poll_select(rlist: Sequence[Any], wlist: Sequence[Any], xlist: Sequence[Any],
                timeout: float | None = None) -> tuple[list, list, list]:
    """``kazoo.handlers.utils.selector_select``'s contract over one ``poll(2)``: the objects of
    ``rlist`` readable and of ``wlist`` writable within ``timeout`` seconds (``None``: no limit).

    The poll object for a set of descriptors is kept per thread and used again (a connection
    thread asks about the same two descriptors every time): ``poll(2)`` is handed the registered
    descriptors at each call, so a kept object asks exactly what a new one would."""
    if timeout is not None:
        if not isinstance(timeout, (int, float)):
            raise TypeError("timeout must be a number")
        if timeout < 0:
            raise ValueError("timeout must be non-negative")
    rfds = tuple(fileobj_to_fd(f) for f in rlist)
    wfds = tuple(fileobj_to_fd(f) for f in wlist)
    key = (rfds, wfds)
    pollers = getattr(_kept, "pollers", None)
    if pollers is None:
        pollers = _kept.pollers = {}
    kept = pollers.get(key)
    if kept is None:
        masks: dict[int, int] = {}
        for fd in rfds:
            masks[fd] = masks.get(fd, 0) | _IN
        for fd in wfds:
            masks[fd] = masks.get(fd, 0) | _OUT
        poller = select.poll()
        for fd, mask in masks.items():
            poller.register(fd, mask)
        if len(pollers) >= _KEPT_PER_THREAD:
            pollers.clear()
        kept = pollers[key] = (poller, masks)
    poller, masks = kept
    # selectors rounds a timeout up to the millisecond, as epoll and poll both count in them
    ready = poller.poll(None if timeout is None else math.ceil(timeout * 1e3))
    revents: list = []
    wevents: list = []
    for fd, event in ready:
        if event & select.POLLNVAL:
            raise ValueError("Invalid event mask or fd")
        # EpollSelector: anything but IN counts as writable, anything but OUT as readable, each only
        # where asked for; selector_select then files a socket under readable when it is, else writable
        asked = masks[fd]
        if event & ~_OUT and asked & _IN:
            target = revents
        elif event & ~_IN and asked & _OUT:
            target = wevents
        else:
            continue
        target.extend(f for f, d in zip(rlist, rfds) if d == fd)     # every object on the descriptor,
        target.extend(f for f, d in zip(wlist, wfds) if d == fd)     # rlist's first, as selectors keeps them
    return revents, wevents, []


class EmulatorHandler(SequentialThreadingHandler):
    """kazoo's :class:`SequentialThreadingHandler` with :func:`poll_select` (module docstring)."""

    name = "emulator_threading"

    def select(self, *args: Any, **kwargs: Any) -> tuple[list, list, list]:
        return poll_select(*args, **kwargs)
