"""The tool's options: Kafka's defaults, its white-list rules, and one clear error per bad value."""

import pytest

from replica_verify.errors import InvalidOption
from replica_verify.options import build_options


def test_defaults_and_whitelist_follow_kafka():
    o = build_options("h1:9092, h2:9093")
    assert o.brokers == (("h1", 9092), ("h2", 9093))
    assert (o.fetch_size, o.max_wait_ms, o.time, o.report_interval_ms) == (1048576, 1000, -1, 30000)
    w = build_options("h:1", topic_white_list="'orders.*, audit'").topic_pattern
    assert w.fullmatch("orders-eu") and w.fullmatch("audit") and not w.fullmatch("xaudit")


@pytest.mark.parametrize("kwargs, names", [
    ({"broker_list": ""}, "--broker-list"),
    ({"broker_list": "kafka1"}, "--broker-list"),
    ({"broker_list": "kafka1:x"}, "--broker-list"),
    ({"broker_list": "kafka1:70000"}, "--broker-list"),
    ({"topic_white_list": "orders("}, "--topic-white-list"),
    ({"fetch_size": 0}, "--fetch-size"),
    ({"max_wait_ms": -5}, "--max-wait-ms"),
    ({"time": -3}, "--time"),
    ({"report_interval_ms": -1}, "--report-interval-ms"),
])
def test_bad_values_name_the_option(kwargs, names):
    kwargs.setdefault("broker_list", "h:9092")
    with pytest.raises(InvalidOption, match=names):
        build_options(**kwargs)
