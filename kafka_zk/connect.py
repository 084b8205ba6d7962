"""Connect strings and kazoo clients: the only place a ``KazooClient`` is built.

A connect string is ``host:port[,host:port...][/chroot]`` as in ``zookeeper.connect``.
:func:`connect` starts a client with a bounded timeout and one retry policy
(:func:`retry_policy`); an unreachable ensemble raises :class:`ZkUnavailable` naming the
hosts and the timeout, a malformed string raises :class:`InvalidInput` naming the fix.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from kafka_zk.errors import InvalidInput, ZkUnavailable

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
            auth: list[tuple[str, str]] | None = None, read_only: bool = False) -> KazooClient:
    """A started kazoo client for the chrooted cluster, or :class:`ZkUnavailable` after ``timeout``."""
    cs = parse_connect_string(connect_string)
    client = KazooClient(hosts=str(cs), timeout=session_timeout, auth_data=auth, read_only=read_only,
                         connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
                         command_retry=retry_policy())
    try:
        with warnings.catch_warnings():
            # kazoo warns when the chroot is missing; we refuse with our own message below
            warnings.filterwarnings("ignore", message="No chroot path exists")
            client.start(timeout=timeout)
    except KazooTimeoutError:
        client.stop()
        client.close()
        raise ZkUnavailable(f"ZooKeeper at {cs.hosts_text} did not answer within {timeout:g}s: "
                            "check the host, the port and that the ensemble is up") from None
    if cs.chroot and client.exists("/") is None:
        client.stop()
        client.close()
        raise InvalidInput(f"chroot {cs.chroot} does not exist on {cs.hosts_text}: check the "
                           "connect string (Kafka's zookeeper.connect)")
    return client


def close(client: KazooClient) -> None:
    """Stop and close a client, ignoring a client that is already stopped."""
    try:
        client.stop()
    finally:
        client.close()
