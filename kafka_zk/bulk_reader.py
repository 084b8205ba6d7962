"""Bulk ``getData`` over a socket of our own: fast snapshots on ZooKeeper 3.4/3.5 (no multiRead).

kazoo answers each reply on its own (a select, a parse, an event set, a thread woken), which
caps pipelined ``get_async`` near 1.5–2× one-by-one reads. This reader speaks the jute
protocol directly on short-lived sessions of its own to the server the kazoo client is
connected to: it keeps up to ``window`` ``getData`` requests in flight on each, receives replies
in large chunks and parses every complete frame of a chunk in one loop (no thread, no event per
reply), then closes its sessions.

Why several sessions (up to :data:`SESSIONS`, one per :data:`PER_SESSION` znodes, all driven by
one selector in the calling thread): a ZooKeeper server reads at most one request frame of a
connection per readiness event (``NIOServerCnxn.doIO``, 3.4 to 3.9), and each event goes from a
selector thread to a worker and back before that connection is read again. One connection is
therefore served at a fixed rate however many requests wait on it — on a real 3.5.7, 3.6–4.4×
one blocking read at a time (issue 27) — while other connections are served by other
selector threads and workers meanwhile.

Consistency: the session is opened with the kazoo client's last seen zxid, so the server
refuses it unless it has applied everything the client has seen (the client's own writes
included); the view is as "consistent enough" as the pipelined reader's. Auth: ``digest``
credentials of the kazoo client are sent on the new session; a client with any other scheme
(e.g. SASL) is not served here.

Failure: never raises for the protocol. :func:`read_many` returns what it read and the paths
it could not read (connection refused or dropped, session refused, an error other than NoNode
such as NoAuth); the caller reads those through kazoo (:mod:`kafka_zk.snapshot`).
"""

from __future__ import annotations

import selectors
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Sequence

from kazoo.client import KazooClient
from kazoo.protocol.states import ZnodeStat

SESSIONS = 4          # sessions one bulk read opens at most
PER_SESSION = 2000    # znodes that make one more session worth its connect and close
GET_DATA = 4
AUTH = 100
CLOSE_SESSION = -11
NO_NODE = -101
AUTH_XID = -4

_INT = struct.Struct(">i")
_REQ_HEADER = struct.Struct(">ii")
_REPLY_HEADER = struct.Struct(">iqi")
_STAT = struct.Struct(">qqqqiiiqiiq")
_CONNECT = struct.Struct(">iqiqi")  # protocolVersion, lastZxidSeen, timeOut, sessionId, passwd length


@dataclass
class BulkResult:
    """What one bulk read got: ``{path: (data, stat) | None}`` and the paths left unread."""

    found: dict[str, object] = field(default_factory=dict)
    unread: list[str] = field(default_factory=list)
    reason: str = ""


def _string(s: str) -> bytes:
    b = s.encode("utf-8")
    return _INT.pack(len(b)) + b


def _frame(body: bytes) -> bytes:
    return _INT.pack(len(body)) + body


def _get_data(xid: int, path: str) -> bytes:
    return _frame(_REQ_HEADER.pack(xid, GET_DATA) + _string(path) + b"\x00")


def _server_of(client: KazooClient) -> tuple[str, int] | None:
    """The server the kazoo client is connected to now (else the first of its host list)."""
    try:
        host, port = client._connection._socket.getpeername()[:2]
        return host, port
    except (AttributeError, OSError):
        return tuple(client.hosts[0]) if client.hosts else None


def _credentials(client: KazooClient) -> list[tuple[str, str]] | None:
    """The digest credentials to send, or ``None`` if the client uses a scheme we do not speak."""
    creds = list(getattr(client, "auth_data", None) or ())
    sasl = getattr(client, "sasl_options", None) or getattr(getattr(client, "_connection", None), "sasl_options", None)
    if sasl or any(scheme != "digest" for scheme, _ in creds):
        return None
    return creds


class _Session:
    """One short session: connect, pipelined getData, close."""

    def __init__(self, address: tuple[str, int], last_zxid: int, timeout: float) -> None:
        self.timeout = timeout
        self.sock = socket.create_connection(address, timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        body = _CONNECT.pack(0, last_zxid, int(timeout * 1000), 0, 16) + b"\x00" * 16 + b"\x00"
        self.sock.sendall(_frame(body))
        reply = self._next_frame(time.monotonic() + timeout)
        if reply is None or len(reply) < 16 or _INT.unpack_from(reply, 4)[0] <= 0:
            raise ConnectionError("the server refused the session (it may be behind the client's zxid)")

    def _next_frame(self, deadline: float) -> bytes | None:
        while True:
            if len(self.buf) >= 4:
                n = _INT.unpack_from(self.buf, 0)[0]
                if len(self.buf) >= 4 + n:
                    frame = bytes(self.buf[4:4 + n])
                    del self.buf[:4 + n]
                    return frame
            if time.monotonic() > deadline:
                return None
            got = self.sock.recv(1 << 20)
            if not got:
                return None
            self.buf.extend(got)

    def authenticate(self, credentials: list[tuple[str, str]]) -> None:
        for scheme, credential in credentials:
            auth = credential.encode()
            self.sock.sendall(_frame(_REQ_HEADER.pack(AUTH_XID, AUTH) + _INT.pack(0) + _string(scheme)
                                     + _INT.pack(len(auth)) + auth))
            reply = self._next_frame(time.monotonic() + self.timeout)
            if reply is None or _REPLY_HEADER.unpack_from(reply, 0)[2] != 0:
                raise ConnectionError(f"the server refused {scheme} credentials")

    def close(self) -> None:
        try:
            self.sock.setblocking(True)
            self.sock.settimeout(1.0)
            self.sock.sendall(_frame(_REQ_HEADER.pack(0x7FFFFFF0, CLOSE_SESSION)))
        except OSError:
            pass
        finally:
            self.sock.close()


class _Stream:
    """One session's share of a bulk read: its paths, what is sent and answered, its buffers."""

    def __init__(self, session: _Session, paths: Sequence[str], server_paths: Sequence[str]) -> None:
        self.session = session
        self.sock = session.sock
        self.paths = paths
        self.server_paths = server_paths
        self.sent = self.done = 0
        self.out = bytearray()
        self.buf = session.buf
        self.failed = ""

    def fill(self, window: int) -> None:
        n = len(self.paths)
        while self.sent < n and self.sent - self.done < window and len(self.out) < 1 << 18:
            self.out += _get_data(self.sent + 1, self.server_paths[self.sent])
            self.sent += 1

    def parse(self, found: dict[str, object]) -> None:
        """Every complete reply frame in the buffer into ``found`` (one loop, no event per reply)."""
        buf, paths = self.buf, self.paths
        unpack_header, unpack_int, unpack_stat = _REPLY_HEADER.unpack_from, _INT.unpack_from, _STAT.unpack_from
        pos, size = 0, len(buf)
        while size - pos >= 4:
            length = unpack_int(buf, pos)[0]
            if size - pos - 4 < length:
                break
            start = pos + 4
            xid, _, err = unpack_header(buf, start)
            if xid > 0:  # watch events (-1) and pings (-2) are not ours
                path = paths[xid - 1]
                if err == 0:
                    dlen = unpack_int(buf, start + 16)[0]
                    body = start + 20
                    data = bytes(buf[body:body + dlen]) if dlen >= 0 else None
                    found[path] = (data, ZnodeStat._make(unpack_stat(buf, body + max(dlen, 0))))
                elif err == NO_NODE:
                    found[path] = None
                else:
                    del buf[:pos]
                    raise ConnectionError(f"[{path}] error {err} from the server")
                self.done = max(self.done, xid)
            pos = start + length
        del buf[:pos]


def _read_streams(streams: list[_Stream], window: int, timeout: float, result: BulkResult) -> None:
    """Pipelined getData on every stream at once from this one thread; a stream that fails
    (connection dropped, an error reply) stops and leaves its paths unread; the others go on."""
    sel = selectors.DefaultSelector()
    live = [s for s in streams if s.done < len(s.paths)]
    for s in live:
        s.sock.setblocking(False)
        s.fill(window)
        sel.register(s.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, s)
    deadline = time.monotonic() + timeout
    found = result.found
    try:
        while live:
            ready = sel.select(max(0.0, deadline - time.monotonic()))
            if not ready:
                for s in live:
                    s.failed = "no reply within the timeout"
                return
            for key, mask in ready:
                s = key.data
                try:
                    if mask & selectors.EVENT_WRITE and s.out:
                        del s.out[:s.sock.send(s.out)]
                    if mask & selectors.EVENT_READ:
                        got = s.sock.recv(1 << 20)
                        if not got:
                            raise ConnectionError("the server closed the connection")
                        s.buf += got
                        s.parse(found)
                        s.fill(window)
                except (OSError, ConnectionError) as exc:
                    s.failed = str(exc) or type(exc).__name__
                if s.failed or s.done >= len(s.paths):
                    sel.unregister(s.sock)
                    live.remove(s)
                else:
                    sel.modify(s.sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if s.out else 0), s)
            deadline = time.monotonic() + timeout
    finally:
        sel.close()
        result.reason = next((s.failed for s in streams if s.failed), result.reason)


def sessions_for(n: int) -> int:
    """How many sessions read ``n`` znodes: one per :data:`PER_SESSION`, at most :data:`SESSIONS`."""
    return max(1, min(SESSIONS, n // PER_SESSION))


def read_many(client: KazooClient, znodes: Sequence[str], window: int = 1024,
              timeout: float = 30.0, sessions: int | None = None) -> BulkResult:
    """``getData`` of every znode (paths as the kazoo client sees them, chroot added here), on
    ``sessions`` sessions at once (default :func:`sessions_for`), ``window`` requests in flight
    on each; paths are cut into contiguous runs, one per session."""
    paths = list(znodes)
    result = BulkResult()
    address = _server_of(client)
    credentials = _credentials(client)
    if address is None or credentials is None:
        result.unread, result.reason = paths, "no server or an auth scheme this reader does not speak"
        return result
    chroot = client.chroot or ""
    server_paths = [chroot if p == "/" and chroot else chroot + p for p in paths]
    count = sessions or sessions_for(len(paths))
    opened: list[_Session] = []
    streams: list[_Stream] = []
    try:
        step = -(-len(paths) // count) if paths else 1
        for i in range(0, len(paths), step):
            try:
                session = _Session(address, max(int(client.last_zxid or 0), 0), timeout)
            except (OSError, ConnectionError) as exc:
                result.reason = str(exc) or type(exc).__name__
                break
            opened.append(session)
            try:
                session.authenticate(credentials)
            except (OSError, ConnectionError) as exc:
                result.reason = str(exc) or type(exc).__name__
                break
            streams.append(_Stream(session, paths[i:i + step], server_paths[i:i + step]))
        _read_streams(streams, window, timeout, result)
    finally:
        for session in opened:
            session.close()
    if len(result.found) < len(paths):
        result.unread = [p for p in paths if p not in result.found]
    return result
