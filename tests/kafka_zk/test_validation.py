"""Topic names (docs/zookeeper.md §6.2 vectors and messages), collisions, brokers, RF, and the config catalogue."""

import pytest

from kafka_zk.errors import (BrokerNotAvailable, InvalidConfig, InvalidReplicationFactor,
                             InvalidTopicName, TopicCollision)
from kafka_zk.topic_configs import TOPIC_CONFIGS, validate_broker_config, validate_topic_config
from kafka_zk.validation import (check_brokers_live, check_collision, check_replication_factor,
                                 collision_warning, validate_topic_name)


@pytest.mark.parametrize("name", ["valid", "TOPIC", "nAmEs", "ar6", "VaL1d", "_0-9_.", "...", "a" * 249])
def test_valid_names(name):
    validate_topic_name(name)


@pytest.mark.parametrize("name,message", [
    ("", "Topic name is invalid: the empty string is not allowed"),
    (".", "Topic name is invalid: '.' is not allowed"),
    ("..", "Topic name is invalid: '..' is not allowed"),
    ("a" * 250, f"Topic name is invalid: the length of '{'a' * 250}' is longer than the max allowed length 249"),
    ("foo bar", "Topic name is invalid: 'foo bar' contains one or more characters other than ASCII "
                "alphanumerics, '.', '_' and '-'"),
])
def test_invalid_names_with_messages(name, message):
    with pytest.raises(InvalidTopicName) as exc:
        validate_topic_name(name)
    assert str(exc.value) == message


@pytest.mark.parametrize("char", list("/\\,\0:\"';*? \t\r\n="))
def test_each_illegal_character(char):
    with pytest.raises(InvalidTopicName, match="contains one or more characters"):
        validate_topic_name(f"foo{char}bar")


def test_collisions():
    check_collision(".topic", ["topic_"])
    with pytest.raises(TopicCollision, match=r"^Topic '.topic' collides with existing topics: _topic$"):
        check_collision(".topic", ["_topic", "other"])
    with pytest.raises(TopicCollision, match="to_pic"):
        check_collision("to.pic", ["to_pic"])
    assert collision_warning("a.b").startswith("WARNING: Due to limitations in metric names")
    assert collision_warning("ab") is None


def test_brokers_and_rf():
    check_brokers_live([1, 2], [1, 2, 3])
    with pytest.raises(BrokerNotAvailable, match="broker id\\(s\\) 7,9 are not registered"):
        check_brokers_live([1, 9, 7], [1, 2])
    with pytest.raises(InvalidReplicationFactor, match=r"^Replication factor: 4 larger than available brokers: 3\.$"):
        check_replication_factor(4, 3)
    with pytest.raises(InvalidReplicationFactor):
        check_replication_factor(0, 3)


REQUIRED = ["unclean.leader.election.enable", "delete.retention.ms", "segment.jitter.ms", "retention.ms",
            "flush.ms", "segment.bytes", "flush.messages", "segment.ms", "retention.bytes", "cleanup.policy",
            "segment.index.bytes", "min.cleanable.dirty.ratio", "max.message.bytes", "file.delete.delay.ms",
            "min.insync.replicas", "index.interval.bytes", "leader.replication.throttled.replicas",
            "follower.replication.throttled.replicas", "compression.type", "message.format.version",
            "message.timestamp.type", "message.timestamp.difference.max.ms", "message.downconversion.enable",
            "preallocate", "min.compaction.lag.ms", "max.compaction.lag.ms"]


def test_catalogue_is_complete():
    assert set(REQUIRED) <= set(TOPIC_CONFIGS)


def test_good_topic_configs():
    validate_topic_config({"flush.messages": "1", "retention.ms": "-1", "cleanup.policy": "compact,delete",
                           "min.cleanable.dirty.ratio": "0.5", "preallocate": "TRUE",
                           "compression.type": "zstd", "message.format.version": "2.4-IV1",
                           "leader.replication.throttled.replicas": "0:1,1:2", "retention.bytes": "-1",
                           "follower.replication.throttled.replicas": "*", "segment.bytes": " 1048576 "})


@pytest.mark.parametrize("cfg,message", [
    ({"foo": "1"}, "Unknown topic config name: foo"),
    ({"retention.ms": "abc"}, "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
    ({"segment.bytes": "3000000000"}, "Invalid value 3000000000 for configuration segment.bytes: Not a number of type INT"),
    ({"min.insync.replicas": "0"}, "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
    ({"min.cleanable.dirty.ratio": "1.5"}, "Value must be no more than 1"),
    ({"preallocate": "yes"}, "Expected value to be either true or false"),
    ({"cleanup.policy": "compact,forever"}, "String must be one of: compact, delete"),
    ({"message.timestamp.type": "Now"}, "String must be one of: CreateTime, LogAppendTime"),
    ({"leader.replication.throttled.replicas": "0-1"}, "[partitionId]:[brokerId]"),
    ({"message.format.version": "banana"}, "not a Kafka version"),
])
def test_bad_topic_configs(cfg, message):
    with pytest.raises(InvalidConfig) as exc:
        validate_topic_config(cfg)
    assert message in str(exc.value)


def test_broker_configs():
    validate_broker_config({"leader.replication.throttled.rate": "1000",
                            "replica.alter.log.dirs.io.max.bytes.per.second": "0"})
    with pytest.raises(InvalidConfig, match="Value must be at least 0"):
        validate_broker_config({"follower.replication.throttled.rate": "-5"})
    with pytest.raises(InvalidConfig, match="Unknown broker config name: log.retention.ms"):
        validate_broker_config({"log.retention.ms": "5"})
