"""What the ZooKeeper ensemble can do, learned without risking the working session.

Kafka 2.4 ships ZooKeeper 3.5; many ZooKeeper-era clusters run 3.4. Both answer an opcode they
do not know (``multiRead``, 22, is new in 3.6) with UNIMPLEMENTED and then *close the
connection*, losing every request in flight on it. So the version is never probed on the
session that does the work. For every server of the ensemble, in order:

1. the ``srvr`` four-letter word on its own short socket (allowed by default: 3.5+ whitelists
   only ``srvr`` out of the box, 3.4 allows all) — its first line is ``Zookeeper version: X.Y.Z-…``;
2. if ``srvr`` is refused (not whitelisted) or says no version: a ``multiRead`` of ``/`` on a
   separate throw-away session to that server alone, closed afterwards whatever it answered.

multiRead is used only when every server is known to have it (a client may reconnect to any of
them). The answer is remembered per ensemble (the sorted ``host:port`` list); an ensemble with
a server that could not be asked is answered "no" (plain reads always work) and asked again
after :data:`RETRY_UNKNOWN_AFTER` seconds.

Failure: none raised; anything unclear means "no multiRead".
"""

from __future__ import annotations

import re
import socket
import threading
import time
from dataclasses import dataclass

from kazoo.client import KazooClient

MULTI_READ_SINCE = (3, 6, 0)
RETRY_UNKNOWN_AFTER = 300.0
_VERSION = re.compile(r"^Zookeeper version: (\d+)\.(\d+)\.(\d+)", re.MULTILINE)

_lock = threading.Lock()
_known: dict[tuple[tuple[str, int], ...], "EnsembleFeatures"] = {}


@dataclass(frozen=True)
class ServerAnswer:
    """What one server told us: its version (from ``srvr``) and/or whether multiRead worked."""

    host: str
    port: int
    version: tuple[int, int, int] | None
    multi_read: bool | None  # None: could not tell (server unreachable)
    how: str  # "srvr", "probe" or "unreachable"


@dataclass(frozen=True)
class EnsembleFeatures:
    """The decision for one ensemble and the answers it rests on."""

    multi_read: bool
    servers: tuple[ServerAnswer, ...]
    decided_at: float

    @property
    def complete(self) -> bool:
        return all(s.multi_read is not None for s in self.servers)


def parse_srvr_version(text: str) -> tuple[int, int, int] | None:
    """``(major, minor, patch)`` from a ``srvr``/``stat`` answer, ``None`` if it has no version line."""
    m = _VERSION.search(text)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def four_letter_word(host: str, port: int, word: bytes = b"srvr", timeout: float = 3.0) -> str:
    """The server's whole answer to a four-letter word, on a socket of its own."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(word)
        chunks = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = sock.recv(65536)
            if not got:
                break
            chunks.append(got)
    return b"".join(chunks).decode("utf-8", "replace")


def probe_multi_read(host: str, port: int, timeout: float = 5.0) -> bool | None:
    """Send ``multiRead`` of ``/`` on a throw-away session to one server: True if it answered
    with data, False if it refused, ``None`` if the server could not be reached."""
    from kafka_zk import multi_read  # local: multi_read is a sibling with no dependency on us

    probe = KazooClient(hosts=f"{host}:{port}", timeout=timeout,
                        connection_retry={"max_tries": 0}, command_retry={"max_tries": 0})
    try:
        try:
            probe.start(timeout=timeout)
        except Exception:  # noqa: BLE001 - unreachable: cannot tell
            return None
        try:
            got = multi_read.submit(probe, ["/"]).get(timeout=timeout)
        except Exception:  # noqa: BLE001 - UNIMPLEMENTED (then a closed connection) or no answer
            return False
        return isinstance(got, list) and len(got) == 1 and isinstance(got[0], tuple)
    finally:
        probe.stop()
        probe.close()


def ask_server(host: str, port: int, timeout: float = 3.0) -> ServerAnswer:
    """One server's multiRead support: by ``srvr`` if it answers with a version, else by probe."""
    try:
        version = parse_srvr_version(four_letter_word(host, port, b"srvr", timeout))
    except OSError:
        return ServerAnswer(host, port, None, None, "unreachable")
    if version is not None:
        return ServerAnswer(host, port, version, version >= MULTI_READ_SINCE, "srvr")
    supported = probe_multi_read(host, port, timeout)
    return ServerAnswer(host, port, None, supported, "probe" if supported is not None else "unreachable")


def ensemble_key(client: KazooClient) -> tuple[tuple[str, int], ...]:
    """The ensemble a client talks to: its sorted ``(host, port)`` list."""
    return tuple(sorted((str(h), int(p)) for h, p in client.hosts))


def ensemble_features(client: KazooClient, timeout: float = 3.0) -> EnsembleFeatures:
    """The (cached) features of ``client``'s ensemble; asks the servers on first use."""
    key = ensemble_key(client)
    with _lock:
        known = _known.get(key)
        if known is not None and (known.complete
                                  or time.monotonic() - known.decided_at < RETRY_UNKNOWN_AFTER):
            return known
        answers = tuple(ask_server(h, p, timeout) for h, p in key)
        known = EnsembleFeatures(all(a.multi_read for a in answers), answers, time.monotonic())
        _known[key] = known
        return known


def supports_multi_read(client: KazooClient) -> bool:
    """Whether every server of ``client``'s ensemble has ``multiRead`` (ZooKeeper ≥ 3.6)."""
    return ensemble_features(client).multi_read


def forget(client: KazooClient | None = None, multi_read: bool | None = None) -> None:
    """Drop what is known (of one ensemble, or of all); with ``multi_read=False``, remember
    instead that this ensemble lacks it (a server refused it after all)."""
    with _lock:
        if client is None:
            _known.clear()
        elif multi_read is False:
            key = ensemble_key(client)
            old = _known.get(key)
            _known[key] = EnsembleFeatures(False, old.servers if old else (), time.monotonic())
        else:
            _known.pop(ensemble_key(client), None)
