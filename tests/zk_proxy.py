"""A loopback proxy that makes the test run's real ZooKeeper 3.8 look like ZooKeeper 3.5 or 3.4.

Only ZooKeeper 3.8 can be installed here, but Kafka 2.4 ships 3.5 and many clusters run 3.4.
The proxy listens on 127.0.0.1, forwards every client connection to the real server frame by
frame (jute framing: a 4-byte big-endian length, then the body; a request body starts with
``xid:int32, type:int32``) and changes only what the old servers do differently, as their
sources (release-3.5.7, release-3.4.14) do it:

* **Unknown opcodes.** ``ZooKeeperServer.submitRequest`` sends a request whose type fails
  ``Request.isValid`` to ``UnimplementedRequestProcessor``: a reply header
  ``(xid, zxid=-1, err=-6 UNIMPLEMENTED)`` with no body, then ``sendCloseSession()``, which
  closes the connection (requests still in flight on it get no answer). 3.5 lacks multiRead
  (22), getEphemerals (103), getAllChildrenNumber (104), setWatches2 (105) and addWatch (106);
  3.4 lacks those and create2 (15), reconfig (16), checkWatches (17), removeWatches (18),
  createContainer (19), deleteContainer (20) and createTTL (21). The request is not forwarded.
* **Four-letter words.** A connection whose first four bytes are a four-letter word gets the
  real server's answer with the version line (``Zookeeper version: …``) of 3.5.7 / 3.4.14.
  3.5 executes only whitelisted words, and its default whitelist is ``srvr`` alone (always
  added); others get ``<word> is not executed because it is not in the whitelist.``. 3.4.14's
  default whitelist is every word but ``wchc`` and ``wchp``.

* **Speed (optional, ``cost=``).** A :class:`CostModel` holds each reply until (a) a round trip
  has passed since its request reached the proxy and (b) the connection's previous reply has
  been out for one per-request service time: requests of one connection are served one after
  the other, connections in parallel. :meth:`CostModel.zookeeper_3_5_7` is calibrated on a real
  Kafka 2.4.1 cluster's ZooKeeper 3.5.7 (issue 27: one blocking read at a time 1,552–1,735/s;
  one connection with thousands of reads in flight 3.6–4.4× that). Its source says why one
  connection is the bound: ``NIOServerCnxn.doIO`` reads at most one frame per readiness event,
  and each event goes from a selector thread to a worker and back before the connection is
  read again; other connections are served by other selector threads and workers meanwhile.
  Without ``cost`` (the tests) replies pass as fast as the proxy can forward them.

Not modelled: sub-ops of a ``multi`` (14) that 3.4 lacks (the project's transactions use only
create/delete/setData/check, which 3.4 has).

``refused`` lists the ``(opcode, xid)`` of every request answered UNIMPLEMENTED: a test that
ran through the proxy asserts it stayed empty (the session was never closed on us).
"""

from __future__ import annotations

import argparse
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, field

UNIMPLEMENTED = -6
MISSING_IN_3_5 = frozenset({22, 103, 104, 105, 106})
MISSING_IN_3_4 = MISSING_IN_3_5 | frozenset({15, 16, 17, 18, 19, 20, 21})
VERSION_LINES = {
    "3.5": "Zookeeper version: 3.5.7-f0fdd52973d373ffd9c86b81d99842dc2c7f660e, built on 02/10/2020 11:30 GMT",
    "3.4": "Zookeeper version: 3.4.14-4c25d480e66aadd371de8bd2fd8da255ac140bcf, built on 03/06/2019 16:18 GMT",
}
_LEN = struct.Struct(">i")
_REQ_HEADER = struct.Struct(">ii")
_REPLY_HEADER = struct.Struct(">iqi")


@dataclass(frozen=True)
class CostModel:
    """How fast the modelled server answers: ``round_trip_s`` from a request reaching the proxy to
    its reply leaving it at the earliest; ``per_request_s`` between two replies of one connection."""

    round_trip_s: float
    per_request_s: float

    @classmethod
    def zookeeper_3_5_7(cls) -> "CostModel":
        """Calibrated on the real 3.5.7 figures (issue 27, 20,000 state znodes, two runs).

        One blocking read at a time ran 1,552–1,735/s: 0.58–0.64 ms per read, of which the
        client (kazoo hands every reply to a waiting thread) spends ~0.2 ms on a quiet 2-core
        machine; so 0.4 ms between the request reaching the proxy and its reply leaving it.
        One connection with thousands of reads in flight ran 3.6–4.4× one-by-one, i.e.
        5,600–7,600/s: 1 / 6,600 s ≈ 0.15 ms per reply on one connection.
        """
        return cls(round_trip_s=0.0004, per_request_s=1 / 6600)


def _frames(buf: bytearray) -> list[bytes]:
    """Cut every complete frame (length prefix included) off the front of ``buf``."""
    out = []
    while len(buf) >= 4:
        n = _LEN.unpack_from(buf, 0)[0]
        if len(buf) < 4 + n:
            break
        out.append(bytes(buf[:4 + n]))
        del buf[:4 + n]
    return out


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        got = sock.recv(n - len(data))
        if not got:
            break
        data.extend(got)
    return bytes(data)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


@dataclass
class ZkProxy:
    """``with ZkProxy((host, port), "3.5") as proxy:`` then connect to ``proxy.hosts``."""

    upstream: tuple[str, int]
    mode: str
    cost: CostModel | None = None
    refused: list[tuple[int, int]] = field(default_factory=list)
    connections: int = 0

    def __post_init__(self) -> None:
        if self.mode not in VERSION_LINES:
            raise ValueError(f"mode {self.mode!r}: use '3.5' or '3.4'")
        self.missing = MISSING_IN_3_5 if self.mode == "3.5" else MISSING_IN_3_4
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopped = False
        threading.Thread(target=self._accept, name=f"zk-proxy-{self.mode}", daemon=True).start()

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> "ZkProxy":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._stopped = True
        _close(self._listener)
        with self._lock:
            for s in list(self._open):
                _close(s)

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self.connections += 1
                self._open.add(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = None
        try:
            first = _recv_exactly(client, 4)
            if len(first) < 4:
                return
            if first.isalpha() and first.islower():
                self._four_letter_word(client, first)
                return
            upstream = socket.create_connection(self.upstream, timeout=10)
            upstream.settimeout(None)
            upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._open.add(upstream)
            connect_request = _recv_exactly(client, _LEN.unpack(first)[0])
            upstream.sendall(first + connect_request)
            send_lock = threading.Lock()
            arrived: dict[int, float] = {}
            threading.Thread(target=self._replies, args=(upstream, client, send_lock, arrived),
                             daemon=True).start()
            self._requests(client, upstream, send_lock, arrived)
        except OSError:
            pass
        finally:
            for s in (client, upstream):
                if s is not None:
                    _close(s)
                    with self._lock:
                        self._open.discard(s)

    def _requests(self, client: socket.socket, upstream: socket.socket, send_lock: threading.Lock,
                  arrived: dict[int, float]) -> None:
        """Client to server: forward whole frames; an opcode the old server lacks ends it all."""
        buf = bytearray()
        while True:
            got = client.recv(262144)
            if not got:
                return
            now = time.monotonic()
            buf.extend(got)
            forward = []
            for frame in _frames(buf):
                xid, op = _REQ_HEADER.unpack_from(frame, 4)
                if self.cost is not None:
                    arrived[xid] = now
                if op in self.missing:
                    if forward:
                        upstream.sendall(b"".join(forward))
                    with self._lock:
                        self.refused.append((op, xid))
                    with send_lock:
                        client.sendall(_LEN.pack(_REPLY_HEADER.size) + _REPLY_HEADER.pack(xid, -1, UNIMPLEMENTED))
                    return  # sendCloseSession(): the connection is closed, in-flight requests lost
                forward.append(frame)
            if forward:
                upstream.sendall(b"".join(forward))

    def _replies(self, upstream: socket.socket, client: socket.socket, send_lock: threading.Lock,
                 arrived: dict[int, float]) -> None:
        """Server to client: whole frames only, so an injected reply never splits one; with a
        cost model, each reply no earlier than :meth:`_due` says."""
        buf = bytearray()
        last_due = 0.0
        try:
            while True:
                got = upstream.recv(262144)
                if not got:
                    break
                buf.extend(got)
                frames = _frames(buf)
                if not frames:
                    continue
                if self.cost is None:
                    with send_lock:
                        client.sendall(b"".join(frames))
                    continue
                batch: list[bytes] = []
                for frame in frames:
                    due = last_due
                    if len(frame) >= 4 + _REPLY_HEADER.size:
                        asked = arrived.pop(_REPLY_HEADER.unpack_from(frame, 4)[0], None)
                        if asked is not None:
                            due = max(asked + self.cost.round_trip_s, last_due + self.cost.per_request_s)
                    wait = due - time.monotonic()
                    if wait > 0 and batch:
                        with send_lock:
                            client.sendall(b"".join(batch))
                        batch = []
                    if wait > 0:
                        time.sleep(wait)
                    batch.append(frame)
                    last_due = due
                if batch:
                    with send_lock:
                        client.sendall(b"".join(batch))
        except OSError:
            pass
        finally:
            _close(client)

    def _four_letter_word(self, client: socket.socket, word: bytes) -> None:
        text = word.decode()
        refused = (self.mode == "3.5" and text != "srvr") or (self.mode == "3.4" and text in ("wchc", "wchp"))
        if refused:
            client.sendall(f"{text} is not executed because it is not in the whitelist.\n".encode())
            return
        with socket.create_connection(self.upstream, timeout=10) as up:
            up.sendall(word)
            answer = bytearray()
            while True:
                got = up.recv(65536)
                if not got:
                    break
                answer.extend(got)
        lines = answer.decode("utf-8", "replace").split("\n")
        lines = [VERSION_LINES[self.mode] if line.startswith("Zookeeper version:") else line for line in lines]
        client.sendall("\n".join(lines).encode())


def main(argv: list[str] | None = None) -> None:
    """Run a proxy in a process of its own (benchmarks: its threads then do not share the
    reader's interpreter lock); prints ``127.0.0.1:<port>`` and serves until stdin closes."""
    ap = argparse.ArgumentParser(description="ZooKeeper 3.5/3.4 stand-in in front of a real server")
    ap.add_argument("--upstream", required=True, help="host:port of the real server")
    ap.add_argument("--mode", choices=sorted(VERSION_LINES), default="3.5")
    ap.add_argument("--calibrated", action="store_true", help="answer at the speed of CostModel.zookeeper_3_5_7")
    args = ap.parse_args(argv)
    host, port = args.upstream.rsplit(":", 1)
    with ZkProxy((host, int(port)), args.mode, CostModel.zookeeper_3_5_7() if args.calibrated else None) as proxy:
        print(proxy.hosts, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
