"""A lean private ZooKeeper (a rehearsal's) runs with the lean JVM options and serves as the default one.

Both servers real, on loopback: the same creates, a fenced multi, a refused multi, sequential
children and a data watch, answered the same way (versions, order, errors, notifications).
"""

from __future__ import annotations

import threading

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError
from kazoo.protocol.states import ZnodeStat

from kafka_sim.zookeeper_server import LEAN_JVM_OPTIONS, EmbeddedZooKeeper


def _plain(result):
    """A multi's result without the wall-clock times of its stats."""
    if isinstance(result, Exception):
        return type(result).__name__
    return result._replace(ctime=0, mtime=0) if isinstance(result, ZnodeStat) else result


def _session(server: EmbeddedZooKeeper) -> list:
    client = KazooClient(hosts=server.connect_string)
    client.start(timeout=60)
    seen: list = []
    try:
        fired = threading.Event()
        events: list = []     # kazoo calls the watch on its own thread: kept apart, added in a fixed place
        client.create("/a", b"1")
        client.get("/a", watch=lambda event: (events.append((event.type, event.path)), fired.set()))
        tx = client.transaction()
        tx.check("/a", 0)
        tx.set_data("/a", b"2")
        tx.create("/a/b", b"x")
        seen.append([_plain(r) for r in tx.commit()])
        assert fired.wait(30)
        seen.extend(events)
        tx = client.transaction()
        tx.check("/a", 0)                      # the version moved: the whole multi refused
        tx.set_data("/a", b"3")
        seen.append([type(r).__name__ for r in tx.commit()])
        for _ in range(3):
            seen.append(client.create("/a/s-", b"", sequence=True))
        data, stat = client.get("/a")
        seen.append((data, stat.version, sorted(client.get_children("/a"))))
        try:
            client.set("/a", b"4", version=0)
        except BadVersionError as exc:
            seen.append(type(exc).__name__)
    finally:
        client.stop()
        client.close()
    return seen


def test_lean_server_has_the_options_and_answers_as_the_default():
    with EmbeddedZooKeeper(heap="96m") as plain, EmbeddedZooKeeper(heap="96m", lean=True) as lean:
        with open(f"/proc/{lean.process.pid}/cmdline", "rb") as f:
            args = f.read().split(b"\0")
        assert all(opt.encode() in args for opt in LEAN_JVM_OPTIONS)
        with open(f"/proc/{plain.process.pid}/cmdline", "rb") as f:
            assert not set(args) & set(f.read().split(b"\0")) & {o.encode() for o in LEAN_JVM_OPTIONS}
        expected = _session(plain)
        assert _session(lean) == expected
        assert "BadVersionError" in expected
