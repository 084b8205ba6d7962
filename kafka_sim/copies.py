"""Emulated copies kept as chroots on a shared ZooKeeper: removed when done, stale ones swept.

A rehearsal on a ZooKeeper kept for rehearsals seeds its copy under a chroot of its own
(``/kafka-rehearsal-<id>``); :func:`remove_copy` deletes that whole subtree when the rehearsal
ends, and :func:`stale_copies` finds the copies an earlier rehearsal left when it died (no live
emulated broker registered in them, older than a bound), for removal before a new one starts.
A copy in use always has broker registrations (ephemeral: they vanish with their sessions), so it
is never taken for stale.

Deletion is pipelined level by level (every node of the deepest level at once, then the next):
a 2,000-partition copy holds ~4,200 znodes, which one-by-one deletes would cross the network for
each. These writes stay inside the copy's own chroot: they are the emulator's, not a cluster's
(the write gate, :mod:`kafka_zk.writer`, guards writes to Kafka clusters).

Failure: a vanished node is fine (someone else removed it); a ZooKeeper error raises kazoo's, and
a request unanswered for :data:`REQUEST_TIMEOUT_S` raises kazoo's timeout error.
"""

from __future__ import annotations

import time

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError, NotEmptyError

#: Seconds a copy with no live broker must have existed before it is taken for stale (a copy is
#: created a moment before its brokers register).
STALE_AFTER_S = 600.0
#: Seconds one pipelined request may take before the removal gives up (kazoo's timeout error):
#: a ZooKeeper that stopped answering must not hold a rehearsal's end forever.
REQUEST_TIMEOUT_S = 60.0


def _levels(client: KazooClient, root: str) -> list[list[str]]:
    """Every node under (and including) ``root``, by depth: ``[[root], [children], ...]``."""
    levels = [[root]]
    while levels[-1]:
        asks = [(path, client.get_children_async(path)) for path in levels[-1]]
        below = []
        for path, ask in asks:
            try:
                below += [f"{path.rstrip('/')}/{name}" for name in ask.get(timeout=REQUEST_TIMEOUT_S)]
            except NoNodeError:
                pass
        levels.append(below)
    return levels[:-1]


def remove_copy(client: KazooClient, chroot: str) -> int:
    """Delete ``chroot`` and everything under it (``client`` rooted at ``/``); returns how many
    znodes went. Deleting ``/`` or a path outside a chroot is refused."""
    if chroot.count("/") != 1 or chroot == "/":
        raise ValueError(f"remove_copy: {chroot!r} is not a top-level chroot (/<name>); nothing deleted")
    for _ in range(3):        # a node written under it meanwhile (a late emulator write): walk again
        levels = _levels(client, chroot)
        count = 0
        try:
            for level in reversed(levels):
                for ask in [client.delete_async(path) for path in level]:
                    try:
                        ask.get(timeout=REQUEST_TIMEOUT_S)
                        count += 1
                    except NoNodeError:
                        pass
            return count
        except NotEmptyError:
            continue
    raise NotEmptyError(f"{chroot} kept getting new children while it was removed")


def stale_copies(client: KazooClient, prefix: str, stale_after_s: float = STALE_AFTER_S,
                 now: float | None = None) -> list[str]:
    """Top-level chroots named ``<prefix>…`` (``prefix`` like ``/kafka-rehearsal-``) with no broker
    registered under ``brokers/ids`` and created more than ``stale_after_s`` ago."""
    now = time.time() if now is None else now
    name_prefix = prefix.lstrip("/")
    out = []
    for name in sorted(client.get_children("/")):
        if not name.startswith(name_prefix):
            continue
        path = f"/{name}"
        try:
            stat = client.exists(path)
            brokers = client.get_children(f"{path}/brokers/ids") if client.exists(f"{path}/brokers/ids") else []
        except NoNodeError:
            continue
        if stat is not None and not brokers and now - stat.ctime / 1000.0 >= stale_after_s:
            out.append(path)
    return out
