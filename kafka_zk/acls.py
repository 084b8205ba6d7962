"""The ACLs Kafka 2.4 gives a znode it creates, and which clients create with them.

Kafka's rule (``kafka.zk.ZkData.defaultAcls(isSecure, path)`` in 2.4.1), with ``path`` relative
to the chroot:

* not secured (``zookeeper.set.acl=false``), or the old consumer path ``/consumers`` itself:
  world has every permission (``OPEN_ACL_UNSAFE``);
* secured: the creator's authenticated identities get every permission (``CREATOR_ALL_ACL``,
  the ``auth`` scheme that ZooKeeper expands to the session's SASL or digest identities), plus
  world read (``READ_ACL_UNSAFE``) — except under the sensitive roots ``/config/users``,
  ``/config/brokers`` and ``/delegation_token/tokens`` (matched, as Kafka does, with a plain
  string prefix test), which world may not even read.

A client is *secured* when :func:`mark_secure` was called on it (by
:func:`kafka_zk.connect.connect` when the connection says ``set_acl``); the write gate and the
emulator ask :func:`acls_for` for every node they create. Creating with ``CREATOR_ALL_ACL`` on
a session without any authenticated identity fails in ZooKeeper with ``InvalidACL``.
"""

from __future__ import annotations

import weakref

from kazoo.client import KazooClient
from kazoo.security import ACL, ANYONE_ID_UNSAFE, AUTH_IDS, OPEN_ACL_UNSAFE, Permissions

CONSUMERS_PATH = "/consumers"
SENSITIVE_ROOT_PATHS = ("/config/users", "/config/brokers", "/delegation_token/tokens")

CREATOR_ALL = ACL(Permissions.ALL, AUTH_IDS)
WORLD_READ = ACL(Permissions.READ, ANYONE_ID_UNSAFE)

_secure_clients: "weakref.WeakSet[KazooClient]" = weakref.WeakSet()


def sensitive_path(path: str) -> bool:
    """Kafka's ``ZkData.sensitivePath``: ``path`` starts with one of the sensitive roots."""
    return any(path.startswith(root) for root in SENSITIVE_ROOT_PATHS)


def default_acls(path: str, secure: bool) -> list[ACL]:
    """The ACL list Kafka 2.4 creates ``path`` (chroot-relative) with."""
    if not secure or path == CONSUMERS_PATH:
        return list(OPEN_ACL_UNSAFE)
    if sensitive_path(path):
        return [CREATOR_ALL]
    return [CREATOR_ALL, WORLD_READ]


def mark_secure(client: KazooClient) -> None:
    """Record that ``client`` talks to a cluster run with ``zookeeper.set.acl=true``."""
    _secure_clients.add(client)


def is_secure(client: KazooClient) -> bool:
    return client in _secure_clients


def acls_for(client: KazooClient, path: str) -> list[ACL]:
    """The ACLs a node created at ``path`` through ``client`` must carry."""
    return default_acls(path, is_secure(client))
