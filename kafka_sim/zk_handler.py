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
from typing import Any, Sequence

from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.handlers.utils import fileobj_to_fd

_IN, _OUT = select.POLLIN, select.POLLOUT


def poll_select(rlist: Sequence[Any], wlist: Sequence[Any], xlist: Sequence[Any],
                timeout: float | None = None) -> tuple[list, list, list]:
    """``kazoo.handlers.utils.selector_select``'s contract over one ``poll(2)``: the objects of
    ``rlist`` readable and of ``wlist`` writable within ``timeout`` seconds (``None``: no limit)."""
    if timeout is not None:
        if not isinstance(timeout, (int, float)):
            raise TypeError("timeout must be a number")
        if timeout < 0:
            raise ValueError("timeout must be non-negative")
    masks: dict[int, int] = {}
    objs: dict[int, list] = {}
    for mask, fileobjs in ((_IN, rlist), (_OUT, wlist)):
        for fileobj in fileobjs:
            fd = fileobj_to_fd(fileobj)
            masks[fd] = masks.get(fd, 0) | mask
            objs.setdefault(fd, []).append(fileobj)
    poller = select.poll()
    for fd, mask in masks.items():
        poller.register(fd, mask)
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
            revents.extend(objs[fd])
        elif event & ~_IN and asked & _OUT:
            wevents.extend(objs[fd])
    return revents, wevents, []


class EmulatorHandler(SequentialThreadingHandler):
    """kazoo's :class:`SequentialThreadingHandler` with :func:`poll_select` (module docstring)."""

    name = "emulator_threading"

    def select(self, *args: Any, **kwargs: Any) -> tuple[list, list, list]:
        return poll_select(*args, **kwargs)
