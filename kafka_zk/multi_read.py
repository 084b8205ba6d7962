"""ZooKeeper's ``multiRead`` (opcode 22, servers ≥ 3.6): many getData ops in one request.

Only for servers that have it: a 3.4/3.5 server answers an unknown opcode with UNIMPLEMENTED
and then closes the connection, losing every request in flight on it. So nothing here is sent
before :mod:`kafka_zk.server_features` has said yes without touching the working session.

Failure: the server saying UNIMPLEMENTED anyway (an ensemble downgraded under us) raises
:class:`MultiReadUnsupported` so the caller can fall back to plain reads; other errors are
returned per op (a missing node) or raised as kazoo raised them.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Iterable

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS, NoNodeError, UnimplementedError
from kazoo.protocol.serialization import GetData, MultiHeader, int_struct, multiheader_struct, stat_struct
from kazoo.protocol.states import ZnodeStat

from kafka_zk.in_flight import Gathered, keep_in_flight

OPCODE = 22
_GET_HEADER = bytes(MultiHeader(GetData.type, False, -1).serialize())   # each op's header
_NO_STRING = int_struct.pack(-1)                                        # kazoo's write_string of ""
_NO_WATCH = bytes([0])                                                  # GetData's watch flag, unset
_DONE = multiheader_struct.pack(-1, True, -1)


class MultiReadUnsupported(Exception):
    """The server answered ``multiRead`` with UNIMPLEMENTED (and closed the connection)."""


class MultiReadRequest(namedtuple("MultiReadRequest", "paths")):
    """The request, shaped like kazoo's request classes so kazoo's connection sends it and
    parses the reply. Each op succeeds or fails on its own (a missing node fails its op only)."""

    type = OPCODE

    def serialize(self) -> bytearray:
        """Byte for byte what kazoo's ``MultiHeader`` + ``GetData(path, None)`` write per op, then
        the done header; the constant op header packed once (every poll of a wave reads thousands)."""
        b = bytearray()
        head, pack = _GET_HEADER, int_struct.pack
        for path in self.paths:
            b += head
            if path:
                raw = path.encode("utf-8")
                b += pack(len(raw))
                b += raw
            else:
                b += _NO_STRING
            b += _NO_WATCH
        b += _DONE
        return b

    @classmethod
    def deserialize(cls, data: bytes, offset: int) -> list:
        results: list = []
        unpack_head, head_size = multiheader_struct.unpack_from, multiheader_struct.size
        unpack_int, int_size = int_struct.unpack_from, int_struct.size
        unpack_stat, stat_size, make_stat = stat_struct.unpack_from, stat_struct.size, ZnodeStat._make
        get_data = GetData.type
        kind, done, _ = unpack_head(data, offset)
        offset += head_size
        while done != 1:                       # kazoo's MultiHeader.deserialize: done == 1
            if kind == get_data:
                length = unpack_int(data, offset)[0]      # kazoo's read_buffer
                offset += int_size
                if length < 0:
                    value = None
                else:
                    value = data[offset:offset + length]
                    offset += length
                results.append((value, make_stat(unpack_stat(data, offset))))
                offset += stat_size
            elif kind == -1:
                err = unpack_int(data, offset)[0]
                offset += int_size
                results.append(EXCEPTIONS[err]())
            else:
                raise ValueError(f"multiRead: unexpected result type {kind}")
            kind, done, _ = unpack_head(data, offset)
            offset += head_size
        return results


def chrooted(client: KazooClient, path: str) -> str:
    """``path`` as the server sees it (kazoo's own requests add the chroot; ours must too)."""
    chroot = client.chroot or ""
    return chroot if path == "/" and chroot else chroot + path


def submit(client: KazooClient, znodes: list[str]):
    """Send one multiRead of ``znodes``; returns kazoo's async result (a list of per-op results)."""
    result = client.handler.async_result()
    client._call(MultiReadRequest(tuple(chrooted(client, p) for p in znodes)), result)
    return result


def multi_read(client: KazooClient, znodes: Iterable[str], batch: int = 1000, window: int = 8,
               timeout: float = 30.0) -> tuple[dict[str, object], list[str], Exception | None]:
    """``({path: (data, stat) | None}, unread paths, first connection error)``: ``batch``
    getData ops per multiRead, ``window`` requests in flight.

    Paths of a batch that met a connection error are returned as unread (the caller retries
    them); an error reply for one op other than NoNode is raised.
    """
    paths_list = list(znodes)
    got = Gathered()

    def collect(chunk: list[str], r) -> None:
        try:
            results = r.get(timeout=timeout)
        except UnimplementedError as exc:
            raise MultiReadUnsupported(str(exc)) from exc
        except Exception as exc:  # noqa: BLE001 - the caller decides what is retryable
            got.lost(chunk, exc)
            return
        for path, res in zip(chunk, results):
            if isinstance(res, NoNodeError):
                got.out[path] = None
            elif isinstance(res, Exception):
                raise res
            else:
                got.out[path] = res

    chunks = (paths_list[i:i + batch] for i in range(0, len(paths_list), batch))
    keep_in_flight(chunks, lambda chunk: submit(client, chunk), collect, window)
    return got.as_tuple()
