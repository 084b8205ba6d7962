"""Waiting for the controller to consume an admin znode: return once it is gone, or give up.

The controller deletes ``/admin/preferred_replica_election`` after one pass and
``/admin/reassign_partitions`` when the last entry is done (docs/zookeeper.md §2.7.3, §2.8); callers
wait for that before the next batch. The wait polls ``exists`` until a monotonic deadline.

Failure: :class:`ZnodeNotConsumed` (a :class:`KafkaZkError` and a :class:`TimeoutError`) naming the
znode, the time waited and what to check.
"""

from __future__ import annotations

import time

from kazoo.client import KazooClient

from kafka_zk.errors import KafkaZkError


class ZnodeNotConsumed(KafkaZkError, TimeoutError):
    """An admin znode the controller should have consumed is still there at the deadline."""


def wait_node_gone(client: KazooClient, path: str, timeout: float, poll: float = 0.1) -> None:
    """Return once ``path`` does not exist; :class:`ZnodeNotConsumed` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while client.exists(path) is not None:
        if time.monotonic() >= deadline:
            raise ZnodeNotConsumed(f"{path} still exists after {timeout:g}s: the controller has not processed it. "
                                   "Check that a controller is elected (/controller) and see its log")
        time.sleep(poll)
