"""kafka_zk/broker_configs.py keeps Kafka 2.4's classes of broker configs apart (DynamicBrokerConfig,
DynamicConfig.Broker of 2.4.1): each key in one class only, the throttles and message.format.version
in none the runbook may set, per-broker keys refused only at the default, and each refusal naming
its fix."""

from __future__ import annotations

import pytest

from kafka_zk.broker_configs import CLUSTER_WIDE, PER_BROKER, READ_ONLY, check_override, key_problem
from kafka_zk.errors import InvalidConfig
from kafka_zk.topic_configs import BROKER_THROTTLE_KEYS

DEFAULT = "<default>"


def test_the_classes_are_apart_and_the_throttles_in_none() -> None:
    assert not set(CLUSTER_WIDE) & set(PER_BROKER)
    assert not (set(CLUSTER_WIDE) | set(PER_BROKER)) & READ_ONLY
    assert not set(BROKER_THROTTLE_KEYS) & (set(CLUSTER_WIDE) | set(PER_BROKER) | READ_ONLY)
    # DynamicLogConfig excludes it; DynamicThreadPool, SocketServer and LogCleaner's keys are dynamic
    assert "log.message.format.version" in READ_ONLY
    assert {"num.io.threads", "background.threads", "max.connections", "log.cleaner.threads",
            "message.max.bytes", "metric.reporters"} <= set(CLUSTER_WIDE)


@pytest.mark.parametrize("key, value", [("log.retention.ms", "604800000"), ("log.cleanup.policy", "compact,delete"),
                                        ("max.connections.per.ip.overrides", "10.0.0.1:50,host-a:20"),
                                        ("log.cleaner.min.cleanable.ratio", "0.7"), ("unclean.leader.election.enable",
                                                                                     "false")])
def test_a_cluster_wide_key_is_taken_at_the_default_and_per_broker(key, value) -> None:
    check_override(DEFAULT, key, value)
    check_override("4", key, value)


@pytest.mark.parametrize("key, value", [("listeners", "PLAINTEXT://:9092,SSL://:9093"),
                                        ("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,INTERNAL:SSL")])
def test_a_per_broker_key_is_taken_per_broker_only(key, value) -> None:
    check_override("4", key, value)
    with pytest.raises(InvalidConfig, match="set it under each broker id instead"):
        check_override(DEFAULT, key, value)


@pytest.mark.parametrize("key, fix", [
    ("broker.id", "roll the brokers with the rolling_restart runbook"),
    ("leader.replication.throttled.rate", "kafka-runbook throttle"),
    ("ssl.keystore.password", "kafka-configs --bootstrap-server"),
    ("listener.name.external.ssl.keystore.location", "kafka-configs --bootstrap-server"),
    ("num.io.thread", "check the spelling"),
])
def test_each_refusal_names_its_fix(key, fix) -> None:
    assert fix in key_problem("1", key)


@pytest.mark.parametrize("key, value", [("listeners", "localhost:9092"), ("max.connections.per.ip.overrides", "a:b"),
                                        ("num.network.threads", "0"), ("log.cleaner.io.buffer.load.factor", "NaN"),
                                        ("metric.reporters", "not a class")])
def test_bad_values_are_refused(key, value) -> None:
    with pytest.raises(InvalidConfig, match="give a valid value"):
        check_override("1", key, value)
