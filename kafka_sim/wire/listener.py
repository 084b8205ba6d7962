"""One emulated broker's TCP listener on 127.0.0.1: Kafka's framing (a 4-byte size, then the
request), one thread per connection, requests answered in order.

Lifetime: :meth:`Listener.start` binds (the given port when it is free, else any free one) and
serves from a daemon thread; :meth:`Listener.stop` closes the listening socket *and* every open
connection, so a killed broker stops answering at once (clients see a reset or a refused
connection, never a silent hang). Idempotent.

Failure: a frame over :data:`MAX_REQUEST_BYTES`, a request the broker does not speak, or an
exception while answering closes that connection (logged), as a Kafka broker does.
"""

from __future__ import annotations

import logging
import socket
import socketserver
import struct
import threading
from typing import Callable

log = logging.getLogger(__name__)
MAX_REQUEST_BYTES = 100 * 1024 * 1024     # socket.request.max.bytes


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], handle: Callable[[bytes], bytes | None]) -> None:
        self.handle_frame = handle
        self.connections: set[socket.socket] = set()
        self.lock = threading.Lock()
        super().__init__(address, _Connection)


class _Connection(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        sock: socket.socket = self.request
        with self.server.lock:
            self.server.connections.add(sock)
        try:
            while True:
                head = _read_exactly(sock, 4)
                if head is None:
                    return
                size = struct.unpack(">i", head)[0]
                if size < 0 or size > MAX_REQUEST_BYTES:
                    log.warning("closing a connection: request of %d bytes", size)
                    return
                frame = _read_exactly(sock, size)
                if frame is None:
                    return
                try:
                    reply = self.server.handle_frame(frame)
                except Exception:  # noqa: BLE001 - a broker closes the connection on a bad request
                    log.exception("closing a connection: request failed")
                    return
                if reply is None:
                    return
                sock.sendall(struct.pack(">i", len(reply)) + reply)
        except OSError:
            return
        finally:
            with self.server.lock:
                self.server.connections.discard(sock)


def _read_exactly(sock: socket.socket, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


class Listener:
    """A broker's listener; ``port`` is known once started."""

    def __init__(self, handle: Callable[[bytes], bytes | None], name: str, port: int = 0, strict: bool = False) -> None:
        self._handle = handle
        self._name = name
        self._wanted = port
        self._strict = strict            # a port the user chose: in use is an error, not "any free one"
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> int:
        if self._server is not None:
            return self.port
        try:
            server = _Server(("127.0.0.1", self._wanted), self._handle)
        except OSError as exc:
            if self._strict:
                raise OSError(f"{self._name}: cannot listen on 127.0.0.1:{self._wanted} ({exc}); choose another "
                              "base port (--listener-base-port)") from None
            server = _Server(("127.0.0.1", 0), self._handle)
        self._server = server
        self.port = server.server_address[1]
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name=f"kafka-sim-wire-{self._name}", daemon=True)
        self._thread.start()
        return self.port

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        with server.lock:
            conns = list(server.connections)
        for sock in conns:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._wanted = self.port            # a restarted broker listens where it did
