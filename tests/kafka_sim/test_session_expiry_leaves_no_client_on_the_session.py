"""Expiring a broker's session leaves no second client holding it (kafka_sim/session_close.py).

Campaign seed 200 (``session_expiry``) hung under load: the client that joins the broker's session
to close it sent a request of its own first (kazoo's chroot check); the broker's client, whose
connection the join had cut, took the session back at once, that request failed, and the joiner —
never stopped (kazoo's ``close`` refused it) — went on reconnecting to the session for ever. The two
handed it back and forth, ZooKeeper never expired it, the broker's state changes flooded the
emulator's queue, its clock stood still and the wave never moved.

The moment is made certain here, on the real ZooKeeper: the joiner goes through a forwarder that
cuts every connection right after the server's answer to the join, so every attempt fails just
after joining, as the race made it fail. Whatever the attempts did, none may be left reconnecting
afterwards, and the session's owner keeps its session. Without the cut, a chrooted session is ended
and its owner sees it end.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from typing import Iterator

import pytest
from kazoo.client import KazooClient, KazooState

from kafka_sim.session_close import close_session, session_ended
from tests.conftest import new_chroot
from tests.kafka_sim.zk_read import wait_for


class CutAfterJoin:
    """A loopback forwarder to ZooKeeper that forwards a connection's handshake (the client's
    ConnectRequest, the server's ConnectResponse) and then closes both sides. Counts connections."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.accepted = 0
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.hosts = f"127.0.0.1:{self._server.getsockname()[1]}"
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="cut-after-join").start()

    def connections(self) -> int:
        with self._lock:
            return self.accepted

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            with self._lock:
                self.accepted += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        up = socket.create_connection(self.upstream, timeout=10)
        conn.settimeout(10)
        try:
            up.sendall(_frame(conn))        # ConnectRequest
            conn.sendall(_frame(up))        # ConnectResponse: the session is the joiner's now
        except OSError:
            pass
        finally:
            for s in (conn, up):            # then cut: whatever the joiner sends next is lost
                s.close()

    def close(self) -> None:
        self._closed = True
        self._server.close()


def _frame(sock: socket.socket) -> bytes:
    """One length-prefixed ZooKeeper frame, read whole."""
    head = _exactly(sock, 4)
    return head + _exactly(sock, struct.unpack(">i", head)[0])


def _exactly(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise OSError("closed")
        out += chunk
    return out


@pytest.fixture
def owner(zk_server) -> Iterator[KazooClient]:
    """A client holding a session on a fresh chroot (the broker's, in the emulator)."""
    client = KazooClient(hosts=zk_server.connect_string + new_chroot(zk_server, "/sx"), timeout=10)
    client.start(timeout=30)
    yield client
    client.stop()
    client.close()


def _gone(owner: KazooClient, session_id: int):
    return lambda: session_ended(owner, session_id)


def test_attempts_cut_right_after_joining_leave_no_client_on_the_session(zk_server, owner: KazooClient) -> None:
    session = owner.client_id
    cut = CutAfterJoin((zk_server.host, zk_server.port))
    try:
        why = close_session(cut.hosts, session, _gone(owner, session[0]), timeout=3.0)
        assert why is not None            # no attempt could close it: each was cut after joining
        assert cut.connections() >= 1     # and each did join
        after = cut.connections()
        time.sleep(3.0)                   # a joiner left running would reconnect (and join) again
        assert cut.connections() == after, "a session-closing client was left reconnecting to the session"
    finally:
        cut.close()
    wait_for(lambda: owner.state == KazooState.CONNECTED, timeout=30, what="the owner connected again")
    assert owner.client_id[0] == session[0]          # the owner still holds its session
    assert owner.exists("/") is not None


def test_a_chrooted_session_is_ended_and_its_owner_sees_it(zk_server, owner: KazooClient) -> None:
    session = owner.client_id
    assert close_session(zk_server.connect_string, session, _gone(owner, session[0]), timeout=60.0) is None
    wait_for(lambda: owner.state == KazooState.CONNECTED and owner.client_id[0] != session[0], timeout=30,
             what="the owner on a new session")
