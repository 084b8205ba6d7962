"""One blocking connection to one broker, speaking Kafka's framing with kafka-python's protocol
classes: a request goes out with a header (api key, version, correlation id, client id), the
response is read whole and decoded. The versions used are the highest both sides support
(asked once with ApiVersions v0), within the range the tool needs.

Failure: a refused or dropped connection, or no answer within the socket timeout, raises
:class:`BrokerUnreachable` naming the broker and the address; a broker without a usable
version or a mismatched correlation id raises :class:`ProtocolError`. The socket is closed on
any failure and by :meth:`BrokerConnection.close`.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from kafka.protocol.consumer import FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata import (ApiVersionsRequest, ApiVersionsResponse, MetadataRequest,
                                     MetadataResponse)

from replica_verify.errors import BrokerUnreachable, ProtocolError

CLIENT_ID = "replicaVerificationTool"
MAX_RESPONSE_BYTES = 1 << 31
#: request class -> (response class, lowest usable version, highest version we send)
APIS: dict[type, tuple[type, int, int]] = {
    MetadataRequest: (MetadataResponse, 1, 8),
    ListOffsetsRequest: (ListOffsetsResponse, 1, 5),
    FetchRequest: (FetchResponse, 4, 11),       # v4+: record batches v2
}


class BrokerConnection:
    """``label`` names the broker in errors (e.g. "broker 2")."""

    def __init__(self, host: str, port: int, timeout_s: float, label: str | None = None) -> None:
        self.host, self.port, self.timeout_s = host, port, timeout_s
        self.label = label or f"broker at {host}:{port}"
        self._sock: socket.socket | None = None
        self._corr = 0
        self._versions: dict[int, tuple[int, int]] = {}
        self.bytes_received = 0

    @property
    def where(self) -> str:
        return f"{self.label} ({self.host}:{self.port})"

    def open(self) -> "BrokerConnection":
        if self._sock is not None:
            return self
        try:
            self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
        except OSError as exc:
            raise BrokerUnreachable(f"{self.where} does not answer: {_why(exc)}; is it running? "
                                    "(kafka-replica-verification needs every replica's broker up)") from None
        self._sock.settimeout(self.timeout_s)
        resp = self._roundtrip(ApiVersionsRequest(), ApiVersionsResponse, 0)
        if resp.error_code:
            raise ProtocolError(f"{self.where} refused ApiVersions (error {resp.error_code})")
        self._versions = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        return self

    def close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    def __enter__(self) -> "BrokerConnection":
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def version(self, request_cls: type) -> int:
        """The version of ``request_cls`` to send: the highest both sides speak."""
        _, lo, hi = APIS[request_cls]
        theirs = self._versions.get(request_cls.API_KEY)
        if theirs is None or theirs[1] < lo or theirs[0] > hi:
            raise ProtocolError(f"{self.where} does not speak {request_cls.__name__} v{lo}-v{hi} "
                                f"(it offers {theirs}); it is not a Kafka 0.11+ broker")
        return min(hi, theirs[1])

    def send(self, request: Any) -> Any:
        """Send ``request`` (a kafka-python request message); the decoded response."""
        self.open()
        response_cls = APIS[type(request)][0]
        return self._roundtrip(request, response_cls, self.version(type(request)))

    def _roundtrip(self, request: Any, response_cls: type, version: int) -> Any:
        self._corr += 1
        request.with_header(correlation_id=self._corr, client_id=CLIENT_ID)
        payload = bytes(request.encode(version=version, header=True))
        try:
            self._sock.sendall(struct.pack(">i", len(payload)) + payload)
            size = struct.unpack(">i", self._read(4))[0]
            if not 0 < size < MAX_RESPONSE_BYTES:
                raise ProtocolError(f"{self.where} sent a response frame of {size} bytes")
            data = self._read(size)
        except socket.timeout:
            self.close()
            raise BrokerUnreachable(f"{self.where} did not answer within {self.timeout_s:g}s "
                                    "(--max-wait-ms plus as much again); is it hung or overloaded?") from None
        except OSError as exc:
            self.close()
            raise BrokerUnreachable(f"{self.where} dropped the connection: {_why(exc)}; "
                                    "did the broker stop?") from None
        self.bytes_received += 4 + size
        response = response_cls.decode(data, version=version, header=True)
        if response.header.correlation_id != self._corr:
            self.close()
            raise ProtocolError(f"{self.where} answered correlation id {response.header.correlation_id}, "
                                f"expected {self._corr}")
        return response

    def _read(self, n: int) -> bytes:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = self._sock.recv_into(view[got:], n - got)
            if k == 0:
                raise ConnectionResetError("connection closed by the broker")
            got += k
        return bytes(buf)


def _why(exc: OSError) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.timeout):
        return "timed out"
    return exc.strerror or str(exc) or type(exc).__name__
