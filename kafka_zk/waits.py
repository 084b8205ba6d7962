"""Waiting for the controller to consume an admin znode: return once it is gone, or give up.

The controller deletes ``/admin/preferred_replica_election`` after one pass and
``/admin/reassign_partitions`` when the last entry is done (docs/zookeeper.md §2.7.3, §2.8); callers
wait for that before the next batch. The wait polls ``exists`` until a monotonic deadline.

Failure: :class:`ZnodeNotConsumed` (a :class:`KafkaZkError` and a :class:`TimeoutError`) naming the
znode, the time waited and what was found of the controller (:func:`controller_liveness`:
``/controller`` present or not, its broker registered or not, the epoch) with what to do.
"""

from __future__ import annotations

import time
from typing import Callable

from kazoo.client import KazooClient

from kazoo.exceptions import NoNodeError

from kafka_zk import paths
from kafka_zk.codecs import InvalidPayload, decode_controller, decode_controller_epoch
from kafka_zk.errors import KafkaZkError


class ZnodeNotConsumed(KafkaZkError, TimeoutError):
    """An admin znode the controller should have consumed is still there at the deadline."""


def controller_liveness(client: KazooClient) -> str:
    """What ZooKeeper says of the controller, in one sentence with what to do: none elected,
    elected but its broker not registered (a dead controller whose session has not expired), or
    elected and registered (alive, yet not acting on the node: it missed the node's creation)."""
    try:
        epoch: str = str(decode_controller_epoch(client.get(paths.CONTROLLER_EPOCH)[0]))
    except (NoNodeError, InvalidPayload):
        epoch = "unknown"
    try:
        holder = decode_controller(client.get(paths.CONTROLLER)[0]).broker_id
    except NoNodeError:
        return (f"no controller is elected ({paths.CONTROLLER} is absent, controller epoch {epoch}): check that "
                "the brokers are up and registered under /brokers/ids")
    except InvalidPayload as exc:
        return f"{paths.CONTROLLER} is unreadable ({exc}); controller epoch {epoch}"
    if client.exists(paths.broker(holder)) is None:
        return (f"the controller is broker {holder} (epoch {epoch}) but {paths.broker(holder)} is not registered: "
                "it is dead and its session has not expired yet; wait for the session timeout or restart it")
    return (f"the controller is broker {holder} (epoch {epoch}), registered: it is alive but has not acted "
            f"on the node (it missed its creation, e.g. across a ZooKeeper outage); a controller move "
            f"(delete {paths.CONTROLLER}) makes the next controller read it")


def wait_node_gone(client: KazooClient, path: str, timeout: float, poll: float = 0.1,
                   sleep: Callable[[float], None] = time.sleep) -> None:
    """Return once ``path`` does not exist; :class:`ZnodeNotConsumed` after ``timeout`` wall seconds.
    ``sleep`` waits between polls (a rehearsal's sleeps on its emulated copy's simulated clock)."""
    deadline = time.monotonic() + timeout
    while client.exists(path) is not None:
        if time.monotonic() >= deadline:
            raise ZnodeNotConsumed(f"{path} still exists after {timeout:g}s: the controller has not processed it; "
                                   f"{controller_liveness(client)}")
        sleep(poll)
