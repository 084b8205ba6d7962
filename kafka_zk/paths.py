"""Every ZooKeeper path Kafka uses in ZooKeeper mode (docs/zookeeper.md §1), and nothing else.

No other module formats a znode path: they call these builders. Paths are relative to the
cluster's chroot; kazoo applies the chroot given in the connect string.
"""

from __future__ import annotations

CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
BROKER_SEQID = "/brokers/seqid"
ADMIN = "/admin"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
DELETE_TOPICS = "/admin/delete_topics"
CONFIG = "/config"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "/config/changes/config_change_"
CONFIG_TOPICS = "/config/topics"
CONFIG_BROKERS = "/config/brokers"
CONFIG_CLIENTS = "/config/clients"
CONFIG_USERS = "/config/users"
CONFIG_IPS = "/config/ips"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "/isr_change_notification/isr_change_"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "/log_dir_event_notification/log_dir_event_"
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"
CLUSTER_ID = "/cluster/id"
CONSUMERS = "/consumers"
FEATURE = "/feature"

BROKER_DEFAULT_ENTITY = "<default>"

#: Persistent paths every broker creates at startup when missing (docs/zookeeper.md §0, 2.4 list).
BROKER_STARTUP_PATHS: tuple[str, ...] = (
    CONSUMERS,
    BROKER_IDS,
    BROKER_TOPICS,
    BROKER_SEQID,
    CONFIG_CHANGES,
    CONFIG_TOPICS,
    CONFIG_CLIENTS,
    CONFIG_USERS,
    CONFIG_BROKERS,
    DELETE_TOPICS,
    ISR_CHANGE_NOTIFICATION,
    LATEST_PRODUCER_ID_BLOCK,
    LOG_DIR_EVENT_NOTIFICATION,
)


def broker(broker_id: int) -> str:
    """``/brokers/ids/<id>``: ephemeral registration of a live broker."""
    return f"{BROKER_IDS}/{int(broker_id)}"


def topic(name: str) -> str:
    """``/brokers/topics/<t>``: the topic's replica assignment."""
    return f"{BROKER_TOPICS}/{name}"


def topic_partitions(name: str) -> str:
    """``/brokers/topics/<t>/partitions`` (no data, created by the controller)."""
    return f"{BROKER_TOPICS}/{name}/partitions"


def partition(name: str, partition_id: int) -> str:
    """``/brokers/topics/<t>/partitions/<p>`` (no data, created by the controller)."""
    return f"{BROKER_TOPICS}/{name}/partitions/{int(partition_id)}"


def partition_state(name: str, partition_id: int) -> str:
    """``/brokers/topics/<t>/partitions/<p>/state``: leader, leader epoch and ISR."""
    return f"{BROKER_TOPICS}/{name}/partitions/{int(partition_id)}/state"


def delete_topic_marker(name: str) -> str:
    """``/admin/delete_topics/<t>``: request to delete a topic."""
    return f"{DELETE_TOPICS}/{name}"


def entity_config(entity_type: str, entity_name: str) -> str:
    """``/config/<type>/<name>`` (``topics``, ``brokers``, ``clients``, ``users``, ``ips``)."""
    return f"{CONFIG}/{entity_type}/{entity_name}"


def topic_config(name: str) -> str:
    """``/config/topics/<t>``: the topic's config overrides."""
    return entity_config("topics", name)


def broker_config(entity: int | str) -> str:
    """``/config/brokers/<id>`` or ``/config/brokers/<default>``: dynamic broker configs."""
    return entity_config("brokers", str(entity))


def sequence_of(node_name: str) -> int:
    """The 10-digit counter ZooKeeper appended to a sequential node's name."""
    return int(node_name[-10:])

