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
import struct
import threading
from typing import Callable

log = logging.getLogger(__name__)
MAX_REQUEST_BYTES = 100 * 1024 * 1024     # socket.request.max.bytes


class _Connections:
    """The open connections of one listener (closed at once when it stops)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.open: set[socket.socket] = set()
        self.closed = False             # the listener stopped: a connection accepted just before is refused


def _serve(sock: socket.socket, handle: Callable[[bytes], bytes | None], conns: _Connections) -> None:
    """Answer one connection's requests in order until it closes or a request fails."""
    with conns.lock:
        if conns.closed:
            sock.close()
            return
        conns.open.add(sock)
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
                reply = handle(frame)
            except Exception:  # noqa: BLE001 - a broker closes the connection on a bad request
                log.exception("closing a connection: request failed")
                return
            if reply is None:
                return
            sock.sendall(struct.pack(">i", len(reply)) + reply)
    except OSError:
        return
    finally:
        with conns.lock:
            conns.open.discard(sock)
        sock.close()


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
    """A broker's listener; ``port`` is known once started.

    Its thread blocks in ``accept`` (no polling: a cluster of 96 brokers had 96 threads waking ten
    times a second each, taking the GIL from the engine); :meth:`stop` shuts the listening socket
    down, which wakes that ``accept`` with an error on Linux, then closes it."""

    def __init__(self, handle: Callable[[bytes], bytes | None], name: str, port: int = 0, strict: bool = False) -> None:
        self._handle = handle
        self._name = name
        self._wanted = port
        self._strict = strict            # a port the user chose: in use is an error, not "any free one"
        self._sock: socket.socket | None = None
        self._conns = _Connections()
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def running(self) -> bool:
        return self._sock is not None

    def _bind(self, port: int) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", port))
            sock.listen(128)
        except OSError:
            sock.close()
            raise
        return sock

    def start(self) -> int:
        if self._sock is not None:
            return self.port
        try:
            sock = self._bind(self._wanted)
        except OSError as exc:
            if self._strict:
                raise OSError(f"{self._name}: cannot listen on 127.0.0.1:{self._wanted} ({exc}); choose another "
                              "base port (--listener-base-port)") from None
            sock = self._bind(0)
        self._sock = sock
        self._conns = _Connections()
        self.port = sock.getsockname()[1]
        self._thread = threading.Thread(target=self._accept_loop, args=(sock,),
                                        name=f"kafka-sim-wire-{self._name}", daemon=True)
        self._thread.start()
        return self.port

    def _accept_loop(self, sock: socket.socket) -> None:
        conns = self._conns
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return                      # shut down by stop()
            threading.Thread(target=_serve, args=(conn, self._handle, conns),
                             name=f"kafka-sim-wire-{self._name}-conn", daemon=True).start()

    def stop(self) -> None:
        sock, self._sock = self._sock, None
        if sock is None:
            return
        try:
            sock.shutdown(socket.SHUT_RDWR)     # wakes the accept loop
        except OSError:
            pass
        if self._thread is not None:
            self._thread.join(timeout=5)
        sock.close()
        with self._conns.lock:
            self._conns.closed = True
            conns = list(self._conns.open)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._wanted = self.port            # a restarted broker listens where it did
