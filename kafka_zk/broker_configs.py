"""The dynamic broker configs of Kafka 2.4 that the broker_configs runbook may set through ZooKeeper.

Kafka 2.4's ``DynamicBrokerConfig`` (core/src/main/scala/kafka/server/DynamicBrokerConfig.scala)
lets a running broker reload some of its configs from ``/config/brokers/<id>`` (per broker) and
``/config/brokers/<default>`` (cluster-wide default; the per-broker value wins), re-read when a
change notification names the entity (docs/zookeeper.md §7.4, §8.2). Its classes, as this module
keeps them:

* **cluster-wide** keys (:data:`CLUSTER_WIDE`), settable at ``<default>`` and per broker: the log
  cleaner's, the broker defaults of the topic configs (``LogConfig.TopicConfigSynonyms`` minus
  ``log.message.format.version``; checked with the topic key's own rule from
  :mod:`kafka_zk.topic_configs`), the thread pools, ``metric.reporters`` and the connection limits;
* **per-broker-only** keys (:data:`PER_BROKER`): the listener configs (``listeners``,
  ``advertised.listeners``, ``listener.security.protocol.map``, ``principal.builder.class``), refused
  at ``<default>`` as Kafka refuses them ("broker id must be specified");
* the replication **throttle** rates, refused here: the reassignment runbooks and
  ``kafka-runbook throttle`` manage them;
* **read-only** keys (:data:`READ_ONLY`: every other ``KafkaConfig`` name of 2.4, e.g. ``broker.id``,
  ``log.dirs``, ``zookeeper.connect``), refused: a broker reads them from server.properties at start;
* SSL/SASL keys, ``listener.name.<l>.*`` keys and passwords, refused: Kafka keeps passwords in
  ZooKeeper encrypted with each broker's ``password.encoder.secret`` and validates keystores on the
  broker, so they go through ``kafka-configs --bootstrap-server``.

Values are checked as the broker's ``ConfigDef`` parses them (:class:`kafka_zk.topic_configs.ConfigKey`).
Kafka's further checks that need the broker's current value (a thread pool may change by at most
half or double) are not made here: the broker refuses such a change and logs it.

Failure: :class:`InvalidConfig` naming the key, the entity, why, and the fix.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Mapping

from kafka_zk import paths
from kafka_zk.errors import InvalidConfig
from kafka_zk.topic_configs import BROKER_THROTTLE_KEYS, TOPIC_CONFIGS, ConfigKey, shown

# LogConfig.TopicConfigSynonyms of 2.4 (broker key -> topic key), minus log.message.format.version
_LOG_SYNONYMS = {
    "log.segment.bytes": "segment.bytes", "log.roll.ms": "segment.ms", "log.roll.jitter.ms": "segment.jitter.ms",
    "log.index.size.max.bytes": "segment.index.bytes", "log.flush.interval.messages": "flush.messages",
    "log.flush.interval.ms": "flush.ms", "log.retention.bytes": "retention.bytes", "log.retention.ms": "retention.ms",
    "message.max.bytes": "max.message.bytes", "log.index.interval.bytes": "index.interval.bytes",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms", "log.segment.delete.delay.ms": "file.delete.delay.ms",
    "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio", "log.cleanup.policy": "cleanup.policy",
    "unclean.leader.election.enable": "unclean.leader.election.enable", "min.insync.replicas": "min.insync.replicas",
    "compression.type": "compression.type", "log.preallocate": "preallocate",
    "log.message.timestamp.type": "message.timestamp.type",
    "log.message.timestamp.difference.max.ms": "message.timestamp.difference.max.ms",
    "log.message.downconversion.enable": "message.downconversion.enable",
}
_OVERRIDE = re.compile(r"[^\s:,]+:[0-9]+")
_LISTENER = re.compile(r"[A-Za-z0-9_]+://[^\s,]*:[0-9]+")
_PROTOCOL_MAP = re.compile(r"[A-Za-z0-9_]+:(PLAINTEXT|SSL|SASL_PLAINTEXT|SASL_SSL)")


def _items(pattern: re.Pattern, example: str):
    def check(value: str) -> None:
        bad = [s for s in (s.strip() for s in value.split(",")) if s and not pattern.fullmatch(s)]
        if bad:
            raise InvalidConfig(f"Invalid value {shown(value)}: {shown(bad[0])} is not of the form {example}")
    return check


def _classes(value: str) -> None:
    for item in (s.strip() for s in value.split(",")):
        if item:
            ConfigKey("metric.reporters", "class").validate(item)


CLUSTER_WIDE: dict[str, ConfigKey] = {
    **{broker: dataclasses.replace(TOPIC_CONFIGS[topic], name=broker) for broker, topic in _LOG_SYNONYMS.items()},
    **{k.name: k for k in (
        ConfigKey("log.cleaner.threads", "int", 0),
        ConfigKey("log.cleaner.dedupe.buffer.size", "long"),
        ConfigKey("log.cleaner.io.buffer.load.factor", "double"),
        ConfigKey("log.cleaner.io.buffer.size", "int", 0),
        ConfigKey("log.cleaner.io.max.bytes.per.second", "double"),
        ConfigKey("log.cleaner.backoff.ms", "long", 0),
        ConfigKey("num.io.threads", "int", 1),
        ConfigKey("num.network.threads", "int", 1),
        ConfigKey("num.replica.fetchers", "int", 1),
        ConfigKey("num.recovery.threads.per.data.dir", "int", 1),
        ConfigKey("background.threads", "int", 1),
        ConfigKey("metric.reporters", "list", check=_classes),
        ConfigKey("max.connections", "int", 0),
        ConfigKey("max.connections.per.ip", "int", 0),
        ConfigKey("max.connections.per.ip.overrides", "string", check=_items(_OVERRIDE, "host:count")),
    )},
}

PER_BROKER: dict[str, ConfigKey] = {k.name: k for k in (
    ConfigKey("listeners", "list", check=_items(_LISTENER, "NAME://host:port")),
    ConfigKey("advertised.listeners", "list", check=_items(_LISTENER, "NAME://host:port")),
    ConfigKey("listener.security.protocol.map", "list", check=_items(_PROTOCOL_MAP, "NAME:PROTOCOL")),
    ConfigKey("principal.builder.class", "class"),
)}

# KafkaConfig names of 2.4 that are not dynamic (DynamicConfig.Broker.nonDynamicProps), as listed
# in Kafka 2.4's broker config documentation; security and password keys are refused separately.
READ_ONLY = frozenset("""
advertised.host.name advertised.port alter.config.policy.class.name alter.log.dirs.replication.quota.window.num
alter.log.dirs.replication.quota.window.size.seconds authorizer.class.name auto.create.topics.enable
auto.leader.rebalance.enable broker.id broker.id.generation.enable broker.rack client.quota.callback.class
connection.failed.authentication.delay.ms connections.max.idle.ms connections.max.reauth.ms
control.plane.listener.name controlled.shutdown.enable controlled.shutdown.max.retries
controlled.shutdown.retry.backoff.ms controller.socket.timeout.ms create.topic.policy.class.name
default.replication.factor delegation.token.expiry.check.interval.ms delegation.token.expiry.time.ms
delegation.token.master.key delegation.token.max.lifetime.ms delete.records.purgatory.purge.interval.requests
delete.topic.enable fetch.purgatory.purge.interval.requests group.initial.rebalance.delay.ms
group.max.session.timeout.ms group.max.size group.min.session.timeout.ms host.name inter.broker.listener.name
inter.broker.protocol.version kafka.metrics.polling.interval.secs kafka.metrics.reporters
leader.imbalance.check.interval.seconds leader.imbalance.per.broker.percentage log.cleaner.enable log.dir log.dirs
log.flush.offset.checkpoint.interval.ms log.flush.scheduler.interval.ms log.flush.start.offset.checkpoint.interval.ms
log.message.format.version log.retention.check.interval.ms log.retention.hours log.retention.minutes log.roll.hours
log.roll.jitter.hours metrics.num.samples metrics.recording.level metrics.sample.window.ms
num.partitions num.replica.alter.log.dirs.threads offset.metadata.max.bytes offsets.commit.required.acks
offsets.commit.timeout.ms offsets.load.buffer.size offsets.retention.check.interval.ms offsets.retention.minutes
offsets.topic.compression.codec offsets.topic.num.partitions offsets.topic.replication.factor
offsets.topic.segment.bytes password.encoder.cipher.algorithm password.encoder.iterations
password.encoder.key.length password.encoder.keyfactory.algorithm password.encoder.old.secret
password.encoder.secret port producer.purgatory.purge.interval.requests queued.max.request.bytes
queued.max.requests quota.consumer.default quota.producer.default quota.window.num quota.window.size.seconds
replica.fetch.backoff.ms replica.fetch.max.bytes replica.fetch.min.bytes replica.fetch.response.max.bytes
replica.fetch.wait.max.ms replica.high.watermark.checkpoint.interval.ms replica.lag.time.max.ms
replica.selector.class replica.socket.receive.buffer.bytes replica.socket.timeout.ms
replication.quota.window.num replication.quota.window.size.seconds request.timeout.ms reserved.broker.max.id
security.inter.broker.protocol security.providers socket.receive.buffer.bytes socket.request.max.bytes
socket.send.buffer.bytes transaction.abort.timed.out.transaction.cleanup.interval.ms transaction.max.timeout.ms
transaction.remove.expired.transaction.cleanup.interval.ms transaction.state.log.load.buffer.size
transaction.state.log.min.isr transaction.state.log.num.partitions transaction.state.log.replication.factor
transaction.state.log.segment.bytes transactional.id.expiration.ms zookeeper.connect
zookeeper.connection.timeout.ms zookeeper.max.in.flight.requests zookeeper.session.timeout.ms zookeeper.set.acl
zookeeper.sync.time.ms
""".split())

_SECURITY = re.compile(r"(ssl|sasl)\..*|listener\.name\..*|.*password.*")
EXAMPLE = "e.g. log.cleaner.threads, num.io.threads, log.retention.ms, max.connections.per.ip"


def where(entity: str) -> str:
    """How messages name an entity: ``the cluster-wide default`` or ``broker 3``."""
    return "the cluster-wide default" if entity == paths.BROKER_DEFAULT_ENTITY else f"broker {entity}"


def key_problem(entity: str, key: str) -> str | None:
    """Why ``key`` may not be set or deleted at ``entity`` by the runbook (problem and fix), or None."""
    if key in CLUSTER_WIDE:
        return None
    if key in PER_BROKER:
        if entity == paths.BROKER_DEFAULT_ENTITY:
            return (f"{key} is a per-broker config: Kafka 2.4 cannot set it at the cluster-wide default "
                    "(\"broker id must be specified\"); set it under each broker id instead")
        return None
    if key in BROKER_THROTTLE_KEYS:
        return (f"{key} is a replication throttle, managed by the reassignment runbooks and `kafka-runbook "
                "throttle`; remove it from the spec")
    if key in READ_ONLY:
        return (f"{key} cannot be changed dynamically on Kafka 2.4 (read-only); set it in server.properties "
                "and roll the brokers with the rolling_restart runbook")
    if _SECURITY.fullmatch(key):
        return (f"{key} is a security config (listener, SSL, SASL or password) that Kafka encrypts or checks "
                "on the broker; set it with kafka-configs --bootstrap-server")
    return f"{shown(key)} is not a Kafka 2.4 broker config; check the spelling ({EXAMPLE})"


def check_override(entity: str, key: str, value: str | None) -> None:
    """``key`` may be set to ``value`` (or deleted, ``None``) at ``entity``; else :class:`InvalidConfig`."""
    problem = key_problem(entity, key)
    if problem:
        raise InvalidConfig(f"{where(entity)}: {problem}")
    if value is not None:
        try:
            (CLUSTER_WIDE.get(key) or PER_BROKER[key]).validate(value)
        except InvalidConfig as e:
            raise InvalidConfig(f"{where(entity)}: {e}; give a valid value") from None


def validate_dynamic_broker_config(entity: str, cfg: Mapping[str, str]) -> None:
    """Every key of ``cfg`` settable at ``entity`` and every value valid (see module docstring)."""
    for key in sorted(cfg):
        check_override(entity, key, cfg[key])
