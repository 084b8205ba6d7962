"""A loopback TCP forwarder to the real ZooKeeper that can cut every connection for a while: a
ZooKeeper blip as the runbook's clients see it (the server and the emulator's sessions are not
touched).

:meth:`BlipProxy.blip` closes every open connection and refuses new ones (accepted, then closed
at once) for ``seconds``; kazoo reconnects to the same session afterwards if the blip is shorter
than its session timeout, and gets a new session (the old one expired) if it is longer.

Failure: a forwarding error closes that connection only; ``close()`` stops everything.
"""

from __future__ import annotations

import socket
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
        self.cuts = 0
        threading.Thread(target=self._accept, daemon=True, name="blip-accept").start()

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    def blip(self, seconds: float) -> None:
        """Cut every connection now and refuse new ones for ``seconds`` (returns at once)."""
        with self._lock:
            self._down_until = time.monotonic() + seconds
            socks, self._socks = self._socks, set()
            self.cuts += 1
        for s in socks:
            _close(s)

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
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True, name="blip-pipe").start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._socks.discard(src)
                self._socks.discard(dst)
            _close(src)
            _close(dst)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
