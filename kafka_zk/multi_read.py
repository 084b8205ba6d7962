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
from kazoo.protocol.serialization import (GetData, MultiHeader, int_struct, multiheader_struct,
                                          read_buffer, stat_struct)
from kazoo.protocol.states import ZnodeStat

from kafka_zk.in_flight import Gathered, keep_in_flight

OPCODE = 22


class MultiReadUnsupported(Exception):
    """The server answered ``multiRead`` with UNIMPLEMENTED (and closed the connection)."""


class MultiReadRequest(namedtuple("MultiReadRequest", "paths")):
    """The request, shaped like kazoo's request classes so kazoo's connection sends it and
    parses the reply. Each op succeeds or fails on its own (a missing node fails its op only)."""

    type = OPCODE

    def serialize(self) -> bytearray:
        b = bytearray()
        for path in self.paths:
            b.extend(MultiHeader(GetData.type, False, -1).serialize())
            b.extend(GetData(path, None).serialize())
        b.extend(multiheader_struct.pack(-1, True, -1))
        return b

    @classmethod
    def deserialize(cls, data: bytes, offset: int) -> list:
        results: list = []
        header, offset = MultiHeader.deserialize(data, offset)
        while not header.done:
            if header.type == GetData.type:
                value, offset = read_buffer(data, offset)
                results.append((value, ZnodeStat._make(stat_struct.unpack_from(data, offset))))
                offset += stat_struct.size
            elif header.type == -1:
                err = int_struct.unpack_from(data, offset)[0]
                offset += int_struct.size
                results.append(EXCEPTIONS[err]())
            else:
                raise ValueError(f"multiRead: unexpected result type {header.type}")
            header, offset = MultiHeader.deserialize(data, offset)
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
