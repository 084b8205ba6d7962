"""Topic names (docs/zookeeper.md §6.2 vectors and messages), collisions, brokers, RF, and the config catalogue."""

import pytest

from kafka_zk.errors import (BrokerNotAvailable, InputRefused, InvalidConfig, InvalidInput,
                             InvalidReplicationFactor, InvalidTopicName, TopicCollision)
from kafka_zk.topic_configs import TOPIC_CONFIGS, validate_broker_config, validate_topic_config
from kafka_zk.validation import (check_brokers_live, check_brokers_to_remove, check_collision, check_replication_factor,
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


# --- issue 12 finding 6: values Kafka cannot parse are refused by the one validation layer ---

from hypothesis import given, strategies as st  # noqa: E402

from kafka_zk.errors import InvalidInput, ZnodeTooLarge  # noqa: E402
from kafka_zk.topic_configs import (KAFKA_2_4_VERSIONS, LONG_MAX, ConfigKey, check_rate,  # noqa: E402
                                    kafka_2_4_version)
from kafka_zk.validation import (check_entity_name, check_partition_count, min_topic_znode_bytes,  # noqa: E402
                                 parse_broker_id, parse_broker_ids)

_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


@given(st.text(max_size=260))
def test_topic_names_accepted_exactly_by_kafkas_rule(name):
    legal = 1 <= len(name) <= 249 and set(name) <= _NAME_CHARS and name not in (".", "..")
    try:
        validate_topic_name(name)
        accepted = True
    except InvalidTopicName as exc:
        accepted = False
        assert "\n" not in str(exc)           # one-line message even for names holding newlines
    assert accepted == legal


@pytest.mark.parametrize("name", ["foo\n", "foo\r\n", "\nfoo", "fo\no", "foo\x00"])
def test_names_with_control_characters_refused_on_one_line(name):
    with pytest.raises(InvalidTopicName) as exc:
        validate_topic_name(name)
    assert "\n" not in str(exc.value) and repr(name) in str(exc.value)


@pytest.mark.parametrize("version", [*KAFKA_2_4_VERSIONS, "0.8.0", "0.10.0", "0.10.2", "0.11.0", "1.0", "1.1",
                                     "2.0", "2.1", "2.2", "2.3", "2.4", "2.4.1", "0.10.0.1", "1.0.0-IV0",
                                     "1.0.1", " 2.4 ", "2.4."])
def test_message_format_versions_kafka_2_4_parses(version):
    validate_topic_config({"message.format.version": version})


@pytest.mark.parametrize("version", ["2.9", "3.0", "2.4-IV9", "2.5", "2.5-IV0", "0.10.3", "0.12.0", "0.8",
                                     "0.7.0", "1.2", "2", "banana", "", "2.4-iv1", ".2.4", "2.4-IV1\n2.5"])
def test_message_format_versions_kafka_2_4_does_not_know(version):
    with pytest.raises(InvalidConfig, match="not a Kafka version 2.4 knows"):
        validate_topic_config({"message.format.version": version})


def test_short_versions_map_to_the_latest_inter_version():
    assert kafka_2_4_version("2.4") == "2.4-IV1" and kafka_2_4_version("0.10.1") == "0.10.1-IV2"
    assert kafka_2_4_version("0.10.0.1") == "0.10.0-IV1" and kafka_2_4_version("0.9.0.1") == "0.9.0"


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "0x1p-1", "0.5d",
                                   "1_0", "٠.5", "", " ", "0,5"])
def test_doubles_must_be_finite_decimals(value):
    with pytest.raises(InvalidConfig, match="DOUBLE"):
        validate_topic_config({"min.cleanable.dirty.ratio": value})


@pytest.mark.parametrize("value", ["0", "1", "0.5", ".5", "5e-1", " 0.25 ", "+0.5", "1.0"])
def test_doubles_in_range_pass(value):
    validate_topic_config({"min.cleanable.dirty.ratio": value})


@pytest.mark.parametrize("kind,good,bad", [
    ("short", ["32767", "-32768", "0"], ["32768", "-32769", "1.0"]),
    ("int", ["2147483647", "-2147483648"], ["2147483648", "-2147483649", "1e3", "٣"]),
    ("long", [str(LONG_MAX), str(-LONG_MAX - 1), "+5"], [str(LONG_MAX + 1), str(-LONG_MAX - 2), "²"]),
    ("boolean", ["true", "FALSE", " True "], ["yes", "1", "t"]),
    ("class", ["org.apache.kafka.Foo", "Foo$Bar"], ["1Foo", "foo..bar", "a b"]),
])
def test_kafka_config_types(kind, good, bad):
    key = ConfigKey("x", kind)
    for v in good:
        key.validate(v)
    for v in bad:
        with pytest.raises(InvalidConfig):
            key.validate(v)
    ConfigKey("p", "password").validate("any thing \u00e9")


@pytest.mark.parametrize("text", ["²", "٣", "03", "-1", "+1", "1.0", "", "2147483648", "0x1", "1 2", True])
def test_broker_ids_as_kafka_registers_them(text):
    with pytest.raises(InvalidInput, match="brokers_to_remove"):
        parse_broker_id(text, "brokers_to_remove")


def test_broker_id_lists():
    assert parse_broker_ids("4,5") == [4, 5] and parse_broker_ids([6, 0]) == [6, 0]
    assert parse_broker_id(" 7 ") == 7 and parse_broker_id(2**31 - 1) == 2**31 - 1
    with pytest.raises(InvalidInput, match="duplicate entries: 4"):
        parse_broker_ids([4, 5, 4])
    with pytest.raises(InvalidInput, match="empty"):
        parse_broker_ids([])
    for entity in ("²", "03", " 3", "-1"):
        with pytest.raises(InvalidInput):
            check_entity_name("brokers", entity)
    check_entity_name("brokers", "<default>")
    check_entity_name("brokers", "12")


def test_partition_counts_bounded_by_int_and_the_znode():
    with pytest.raises(InvalidInput, match="more than Kafka allows"):
        check_partition_count(2**31)
    with pytest.raises(ZnodeTooLarge, match="over the znode limit"):
        check_partition_count(2**31 - 1, 1)
    with pytest.raises(ZnodeTooLarge, match="replication factor 3"):
        check_partition_count(90_000, 3)
    check_partition_count(10_000, 3)
    assert min_topic_znode_bytes(1234, 3) == len(
        b'{"version":1,"partitions":{}}') + sum(len(f'"{p}":[0,1,2],') for p in range(1234)) - 1


@pytest.mark.parametrize("rate", [2**63, -1, True, 1.5, "5"])
def test_throttle_rates_are_longs(rate):
    with pytest.raises(InvalidInput, match="LONG"):
        check_rate(rate)
    assert check_rate(LONG_MAX) == LONG_MAX
@pytest.mark.parametrize("given,expected", [([4, 3], [3, 4]), ("5, 3", [3, 5]), ((0,), [0]), (["7"], [7]),
                                            ("[5, 3]", [3, 5]), ({4, 3}, [3, 4])])
def test_brokers_to_remove_are_sorted_ids(given, expected):
    assert check_brokers_to_remove(given) == expected


@pytest.mark.parametrize("given,fix", [([], "at least one broker id"), ("", "at least one broker id"),
                                       ([-1], "not a broker id"), (["x"], "not a broker id"),
                                       (["03"], "not a broker id"), (None, "a list of broker ids"),
                                       ([4, 3, 4], "duplicate entries: 4"), ("4,4", "duplicate entries: 4"),
                                       ("4,,5", "an empty entry"), ("4,", "an empty entry")])
def test_bad_brokers_to_remove_are_refused_naming_the_param_and_the_fix(given, fix):
    with pytest.raises(InputRefused, match=fix) as err:
        check_brokers_to_remove(given)
    assert str(err.value).startswith("brokers_to_remove: ") and err.value.what == "brokers_to_remove"
