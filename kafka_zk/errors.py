"""Every refusal and failure of the ZooKeeper layer: one root, one class per refusal.

Messages name the input that is wrong and how to fix it. kazoo's exceptions are translated
in one place, :func:`translate`, so callers never catch kazoo types.
"""

from __future__ import annotations


class KafkaZkError(Exception):
    """Root of every error this project raises about a Kafka cluster in ZooKeeper."""


class InvalidInput(KafkaZkError):
    """Bad user input; nothing was written. The message names the problem and the fix."""


class InputRefused(InvalidInput):
    """An input one of :mod:`kafka_zk.validation`'s parsers refuses: ``what`` names the input (a CLI
    flag or a DAG Param), ``reason`` is the refusal text, the same wherever the input is typed."""

    def __init__(self, what: str, reason: str) -> None:
        super().__init__(f"{what}: {reason}")
        self.what, self.reason = what, reason

    def __reduce__(self):  # picklable across processes, like the other errors
        return type(self), (self.what, self.reason)


class InvalidPayload(KafkaZkError):
    """A znode or file payload that does not follow Kafka's format."""


class InvalidTopicName(InvalidInput):
    """A topic name Kafka rejects (docs/zookeeper.md §6.2)."""


class InvalidReplicationFactor(InvalidInput):
    """Replication factor ≤ 0 or larger than the live brokers."""


class InvalidReplicaAssignment(InvalidInput):
    """An explicit replica assignment Kafka rejects (docs/zookeeper.md §4.4, V6)."""


class InvalidConfig(InvalidInput):
    """An unknown config key or a value of the wrong type or range."""


class TopicExists(KafkaZkError):
    """``Topic '<t>' already exists.``"""


class TopicCollision(InvalidInput):
    """A name that collides with an existing topic once '.' is replaced by '_'."""


class TopicNotFound(KafkaZkError):
    """A topic that is not in ``/brokers/topics``."""


class BrokerNotAvailable(InvalidInput):
    """A broker id that is not registered under ``/brokers/ids``."""


class ZnodeTooLarge(KafkaZkError):
    """A payload over the znode size limit (ZooKeeper's jute.maxbuffer, 1 MB by default)."""


class ReassignmentInProgress(KafkaZkError):
    """``/admin/reassign_partitions`` exists: another reassignment is running."""


class ForeignReassignment(ReassignmentInProgress):
    """The running reassignment is not the one this run submitted."""


class ElectionInProgress(KafkaZkError):
    """``/admin/preferred_replica_election`` exists: an election is being processed."""


class StalePlan(KafkaZkError):
    """The live cluster no longer has the replicas a plan assumed: re-plan."""


class ConcurrentModification(KafkaZkError):
    """A znode changed between our read and our conditional write."""


class ZkUnavailable(KafkaZkError):
    """ZooKeeper could not be reached within the timeout."""


class ZkAuthFailed(KafkaZkError):
    """ZooKeeper refused the session's credentials (SASL or digest), or requires some."""


class NodeMissing(KafkaZkError):
    """A znode that must exist does not."""


class WriteNotApproved(KafkaZkError):
    """The write gate's authority refused a write (no approval of what the step acts on); nothing
    was written. See :mod:`kafka_zk.authority`."""


def translate(exc: Exception, path: str) -> KafkaZkError:
    """Map a kazoo exception raised while touching ``path`` to this module's types."""
    from kazoo import exceptions as kz

    if isinstance(exc, KafkaZkError):
        return exc
    if isinstance(exc, kz.NoNodeError):
        return NodeMissing(f"[{path}] znode does not exist")
    if isinstance(exc, kz.BadVersionError):
        return ConcurrentModification(f"[{path}] changed since it was read; re-read and retry")
    if isinstance(exc, (kz.ConnectionLoss, kz.SessionExpiredError, kz.OperationTimeoutError)) \
            or type(exc).__name__ in ("KazooTimeoutError", "RetryFailedError"):
        return ZkUnavailable(f"[{path}] ZooKeeper did not answer: {type(exc).__name__}")
    if isinstance(exc, kz.AuthFailedError):
        return ZkAuthFailed(f"[{path}] ZooKeeper refused this session's authentication: check the "
                            "SASL/digest credentials of the connection")
    if isinstance(exc, kz.InvalidACLError):
        return ZkAuthFailed(f"[{path}] ZooKeeper refused the node's ACL: a secured cluster "
                            "(set_acl) needs an authenticated session (SASL or digest credentials)")
    if isinstance(exc, kz.NoAuthError):
        return KafkaZkError(f"[{path}] not authorised: connect with the principal that owns the "
                            "znode (digest/SASL credentials in the connection)")
    return KafkaZkError(f"[{path}] {type(exc).__name__}: {exc}")
