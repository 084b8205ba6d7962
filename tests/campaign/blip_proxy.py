"""A loopback TCP forwarder to the real ZooKeeper that can cut every connection for a while: a
ZooKeeper blip as the runbook's clients see it (the server and the emulator's sessions are not
touched).

:meth:`BlipProxy.blip` closes every open connection and refuses new ones (accepted, then closed
at once) for ``seconds``; kazoo reconnects to the same session afterwards if the blip is shorter
than its session timeout, and gets a new session (the old one expired) if it is longer.
:meth:`BlipProxy.hold` stops forwarding (what arrives is kept, see :attr:`held_requests`) until
the next blip drops it: a request cut off in flight, never seen by the server, for a test that
needs the cut to land on one exact request. ``hold(replies_only=True)`` forwards the requests and
keeps the replies (:meth:`answered`): the server did the request, its client never hears so.

Failure: a forwarding error closes that connection only; ``close()`` stops everything.
"""

from __future__ import annotations

import socket
import struct
import threading
import time


class BlipProxy:
    """Listens on 127.0.0.1:<free port>, forwards to ``upstream`` (host, port)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(64)
        self.port = self._server.getsockname()[1]
        self._lock = threading.Lock()
        self._socks: set[socket.socket] = set()
        self._down_until = 0.0
        self._closed = False
        self._forwarding = threading.Event()       # requests flow to the server
        self._forwarding.set()
        self._replying = threading.Event()          # replies flow to the clients
        self._replying.set()
        self._held: list[bytes] = []
        self._sent_while_held: list[tuple[int, int, int]] = []     # (connection, xid, opcode)
        self._held_replies: list[tuple[int, bytes]] = []           # (connection, bytes)
        self._conns = 0
        self.cuts = 0
        threading.Thread(target=self._accept, daemon=True, name="blip-accept").start()

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    def blip(self, seconds: float) -> None:
        """Cut every connection now and refuse new ones for ``seconds`` (returns at once); what
        a :meth:`hold` kept is dropped with them."""
        with self._lock:
            self._down_until = time.monotonic() + seconds
            socks, self._socks = self._socks, set()
            self.cuts += 1
        for s in socks:
            _close(s)
        self._forwarding.set()
        self._replying.set()

    def hold(self, replies_only: bool = False) -> None:
        """Stop forwarding, both ways (or the replies only): bytes that arrive are kept, never
        sent on; only a :meth:`blip` (which closes those connections) ends a hold."""
        with self._lock:
            self._held, self._sent_while_held, self._held_replies = [], [], []
        self._replying.clear()
        if not replies_only:
            self._forwarding.clear()

    def held_requests(self) -> list[tuple[int, int]]:
        """``(xid, opcode)`` of each whole client request kept since :meth:`hold` (ZooKeeper's
        framing: a 4-byte length, then xid and opcode; a connect request has neither)."""
        with self._lock:
            chunks = list(self._held)
        return [frame for data in chunks for frame in _frames(data)]

    def answered(self, opcode: int) -> bool:
        """Since ``hold(replies_only=True)``: the first request of ``opcode`` sent on to the
        server has its reply kept here (a reply starts with the request's xid)."""
        with self._lock:
            sent = next((r for r in self._sent_while_held if r[2] == opcode), None)
            replies = list(self._held_replies)
        if sent is None:
            return False
        return any(conn == sent[0] and xid == sent[1] for conn, data in replies for xid, _ in _frames(data))

    def close(self) -> None:
        self._closed = True
        _close(self._server)
        self.blip(0)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if time.monotonic() < self._down_until:
                _close(client)
                continue
            try:
                upstream = socket.create_connection(self.upstream, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._socks.update((client, upstream))
                self._conns += 1
                conn = self._conns
            for a, b, up in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(target=self._pipe, args=(a, b, up, conn), daemon=True, name="blip-pipe").start()

    def _pipe(self, src: socket.socket, dst: socket.socket, to_server: bool, conn: int) -> None:
        gate = self._forwarding if to_server else self._replying
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if not gate.is_set():
                    # kept, never sent on: the blip that ends every hold closes this connection.
                    # Reading goes on, so what follows a first held chunk (a ping's reply before
                    # the awaited one) is seen too.
                    with self._lock:
                        (self._held if to_server else self._held_replies).append(
                            data if to_server else (conn, data))
                    continue
                if to_server and not self._replying.is_set():
                    with self._lock:
                        self._sent_while_held.extend((conn, xid, op) for xid, op in _frames(data))
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._socks.discard(src)
                self._socks.discard(dst)
            _close(src)
            _close(dst)


def _frames(data: bytes) -> list[tuple[int, int]]:
    """The first two ints of each whole frame in ``data`` (a 4-byte length, then the frame): a
    request's xid and opcode, or a reply's xid and the high half of its zxid."""
    out, i = [], 0
    while i + 12 <= len(data):
        (length,) = struct.unpack_from(">i", data, i)
        out.append(struct.unpack_from(">ii", data, i + 4))
        i += 4 + length
    return out


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
