"""Connect strings and kazoo clients: the only place a ``KazooClient`` is built.

A connect string is ``host:port[,host:port...][/chroot]`` as in ``zookeeper.connect``.
:func:`connect` starts a client with a bounded timeout and one retry policy
(:func:`retry_policy`); an unreachable ensemble raises :class:`ZkUnavailable` naming the
hosts and the timeout, a malformed string raises :class:`InvalidInput` naming the fix.

Secured clusters: ``credentials`` (:class:`kafka_zk.zk_auth.ZkCredentials`) authenticate the
session with SASL (DIGEST-MD5, GSSAPI) or digest; a refused login or a server that requires
authentication the session lacks raises :class:`ZkAuthFailed` naming who we tried to be (never
the password), within ``timeout``. ``credentials.set_acl`` marks the client secured, so what the
write gate creates carries Kafka's ACLs (:mod:`kafka_zk.acls`).
"""

from __future__ import annotations

import re
import time
import warnings
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import (AuthFailedError, ConnectionClosedError, ConnectionLoss, SASLException,
                              SessionClosedRequireSaslError)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.interfaces import IAsyncResult, IHandler
from kazoo.protocol.states import KazooState
from kazoo.retry import KazooRetry

from kafka_zk import acls
from kafka_zk.errors import InvalidInput, ZkAuthFailed, ZkUnavailable
from kafka_zk.zk_auth import NO_AUTH, ZkCredentials

_HOST_PORT = re.compile(r"^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9._-]+):([0-9]{1,5})$")
_CHROOT = re.compile(r"^(/[A-Za-z0-9._-]+)+$")


@dataclass(frozen=True)
class ConnectString:
    """A parsed ``host:port,.../chroot``."""

    hosts: tuple[tuple[str, int], ...]
    chroot: str = ""

    @property
    def hosts_text(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in self.hosts)

    def __str__(self) -> str:
        return self.hosts_text + self.chroot


def parse_connect_string(text: str) -> ConnectString:
    """Parse and validate a ZooKeeper connect string."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("ZooKeeper connect string is empty: give host:port[/chroot], "
                           "e.g. 127.0.0.1:2181/kafka")
    text = text.strip()
    hosts_part, slash, chroot = text.partition("/")
    chroot = (slash + chroot).rstrip("/") if slash else ""
    if chroot and not _CHROOT.match(chroot):
        raise InvalidInput(f"ZooKeeper connect string {text!r}: chroot {chroot!r} is not a valid "
                           "path; use letters, digits, '.', '_', '-' between slashes, e.g. /kafka")
    hosts = []
    for item in hosts_part.split(","):
        m = _HOST_PORT.match(item.strip())
        if not m or not 0 < int(m.group(2)) < 65536:
            raise InvalidInput(f"ZooKeeper connect string {text!r}: {item!r} is not host:port; "
                               "write e.g. 127.0.0.1:2181,127.0.0.2:2181/kafka")
        hosts.append((m.group(1), int(m.group(2))))
    return ConnectString(tuple(hosts), chroot)


def retry_policy(deadline: float = 30.0) -> KazooRetry:
    """The project's one retry policy: connection loss and timeouts retried with jittered
    backoff until ``deadline`` seconds; session expiry is not retried (state may be gone)."""
    return KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_jitter=0.2, max_delay=2.0,
                      deadline=deadline, ignore_expire=False)


def connect(connect_string: str, timeout: float = 10.0, session_timeout: float = 10.0,
            auth: list[tuple[str, str]] | None = None, read_only: bool = False,
            credentials: ZkCredentials | None = None, handler: IHandler | None = None) -> KazooClient:
    """A started kazoo client for the chrooted cluster, or :class:`ZkUnavailable` after ``timeout``
    (:class:`ZkAuthFailed` when the server refuses the credentials or requires some). ``handler``:
    kazoo's handler for the session (default kazoo's own; a rehearsal gives the emulator's)."""
    cs = parse_connect_string(connect_string)
    creds = credentials or NO_AUTH
    kwargs = creds.kazoo_kwargs()
    if auth:
        kwargs["auth_data"] = list(auth) + kwargs.get("auth_data", [])
    if handler is not None:
        kwargs["handler"] = handler
    client = KazooClient(hosts=str(cs), timeout=session_timeout, read_only=read_only,
                         connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
                         command_retry=retry_policy(), **kwargs)
    login = _LoginWatch(client)
    try:
        with warnings.catch_warnings():
            # kazoo warns when the chroot is missing; we refuse with our own message below
            warnings.filterwarnings("ignore", message="No chroot path exists")
            client.start(timeout=timeout)
        # SASL runs after the session is created: the first answer tells whether it was accepted
        root_exists = login.first_answer(client.exists_async("/"), timeout) is not None
    except (AuthFailedError, SASLException, SessionClosedRequireSaslError):
        _discard(client)
        raise ZkAuthFailed(_auth_failure(cs.hosts_text, creds)) from None
    except (KazooTimeoutError, ConnectionLoss, ConnectionClosedError) as err:
        refused = login.refused(creds)
        _discard(client)
        if refused:
            raise ZkAuthFailed(_auth_failure(cs.hosts_text, creds)) from None
        if isinstance(err, KazooTimeoutError):
            raise ZkUnavailable(f"ZooKeeper at {cs.hosts_text} did not answer within {timeout:g}s: "
                                "check the host, the port and that the ensemble is up") from None
        raise ZkUnavailable(f"ZooKeeper at {cs.hosts_text} dropped the connection while connecting: "
                            "check that the ensemble is up") from None
    login.stop_watching()
    if cs.chroot and not root_exists:
        _discard(client)
        raise InvalidInput(f"chroot {cs.chroot} does not exist on {cs.hosts_text}: check the "
                           "connect string (Kafka's zookeeper.connect)")
    if creds.set_acl:
        acls.mark_secure(client)
    return client


def _auth_failure(hosts: str, creds: ZkCredentials) -> str:
    if not creds.authenticated:
        return (f"ZooKeeper at {hosts} refused an unauthenticated session: the ensemble requires "
                "authentication; give the connection SASL credentials (a JAAS Client section or "
                "extra sasl_mechanism with login/password)")
    return (f"ZooKeeper at {hosts} refused the login of {creds.describe()}: check the credentials "
            "against the server's JAAS Server section (user_<name>=...), the mechanism and the "
            "SASL service name")


class _LoginWatch:
    """Tells a refused SASL login from an unreachable server while a client starts.

    kazoo 2.11 creates the session (CONNECTED), then logs in on the connection thread; a refused
    login raises there and ends that thread. What the starting caller sees then depends on when
    it looks: the server's refusal, a timeout from ``start()`` (the session was already gone when
    it woke), ``ConnectionLoss`` or ``ConnectionClosedError`` for the first request, or no answer
    at all (a request queued just after the pending ones were failed). All of them mean "refused"
    when a session was created and the connection thread has stopped; a slow or absent server
    never reaches CONNECTED, and a plain connection drop leaves the thread reconnecting.
    """

    def __init__(self, client: KazooClient) -> None:
        self._client = client
        self.seen: list[KazooState] = []
        client.add_listener(self._note)

    def _note(self, state: KazooState) -> None:
        self.seen.append(state)

    def stop_watching(self) -> None:
        self._client.remove_listener(self._note)

    def refused(self, creds: ZkCredentials) -> bool:
        stopped = self._client._connection.connection_stopped.is_set()
        return creds.mechanism is not None and KazooState.CONNECTED in self.seen and stopped

    def first_answer(self, answer: IAsyncResult, timeout: float) -> object:
        """The value of ``answer`` within ``timeout``; ConnectionLoss as soon as the connection
        thread has stopped (a request queued after it failed the pending ones gets no answer)."""
        stopped = self._client._connection.connection_stopped
        deadline = time.monotonic() + timeout
        while not answer.ready():
            if stopped.is_set():
                raise ConnectionLoss("the connection ended before the first answer")
            if time.monotonic() >= deadline:
                raise KazooTimeoutError(f"no answer within {timeout:g}s")
            answer.wait(0.05)
        return answer.get()


def _discard(client: KazooClient) -> None:
    client.stop()
    client.close()


def close(client: KazooClient) -> None:
    """Stop and close a client, ignoring a client that is already stopped."""
    try:
        client.stop()
    finally:
        client.close()
