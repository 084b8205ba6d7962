"""Capacity files: Cruise Control's format (MiB, JBOD summed, -1 default), the native form, refusals."""

from __future__ import annotations

import json

import pytest

from kafka_zk.capacity import MIB, DiskCapacity, parse_capacity, read_capacity_file, write_capacity
from kafka_zk.errors import InvalidInput


def test_cruise_control_file_with_default_and_jbod(tmp_path) -> None:
    doc = {"brokerCapacities": [
        {"brokerId": "-1", "capacity": {"DISK": "500000", "CPU": "100", "NW_IN": "10000", "NW_OUT": "10000"},
         "doc": "default"},
        {"brokerId": "3", "capacity": {"DISK": {"/data1": "250000", "/data2": "100000"}, "CPU": "100"}}]}
    path = tmp_path / "capacity.json"
    path.write_text(json.dumps(doc))
    cap = read_capacity_file(str(path))
    assert cap.capacity(3) == 350000 * MIB and cap.capacity(7) == 500000 * MIB
    assert cap.threshold_pct == 85.0 and cap.limit(7) == int(500000 * MIB * 0.85)


def test_native_form_round_trips_with_its_threshold(tmp_path) -> None:
    cap = DiskCapacity({1: 10 ** 12, 2: 2 * 10 ** 12}, default=None, threshold_pct=70, source="x")
    path = tmp_path / "capacity.json"
    write_capacity(str(path), cap)
    back = read_capacity_file(str(path))
    assert back.brokers == {1: 10 ** 12, 2: 2 * 10 ** 12} and back.threshold_pct == 70
    assert read_capacity_file(str(path), 90).threshold_pct == 90        # an explicit threshold wins
    assert back.capacity(9) is None and back.limit(9) is None           # unknown, never infinite


def test_connection_extra_form_with_a_default_key() -> None:
    cap = parse_capacity({"brokers": {"1": 1000, "default": 5000}}, "extra.broker_capacity_bytes")
    assert cap.capacity(1) == 1000 and cap.capacity(2) == 5000


BAD = [
    ([], "expected a JSON object"),
    ({"brokerCapacities": []}, "non-empty list"),
    ({"brokerCapacities": [{"capacity": {"DISK": "1"}}]}, 'expected {"brokerId"'),
    ({"brokerCapacities": [{"brokerId": "x", "capacity": {"DISK": "1"}}]}, "broker id 'x' is not an integer"),
    ({"brokerCapacities": [{"brokerId": "²", "capacity": {"DISK": "1"}}]}, "is not an integer"),
    ({"brokerCapacities": [{"brokerId": "1", "capacity": {"CPU": "1"}}]}, "no DISK capacity"),
    ({"brokerCapacities": [{"brokerId": "1", "capacity": {"DISK": {}}}]}, "lists no log directory"),
    ({"brokerCapacities": [{"brokerId": "1", "capacity": {"DISK": "-5"}}]}, "not a positive size"),
    ({"brokerCapacities": [{"brokerId": "1", "capacity": {"DISK": "nan"}}]}, "not a positive size"),
    ({"brokerCapacities": [{"brokerId": "1", "capacity": {"DISK": "big"}}]}, "is not a number"),
    ({"brokerCapacities": [{"brokerId": "1", "capacity": {"DISK": True}}]}, "is not a size"),
    ({"brokerCapacities": [{"brokerId": "-2", "capacity": {"DISK": "5"}}]}, "only -1 (the default)"),
    ({"brokerCapacities": [{"brokerId": "1", "capacity": {"DISK": "5"}},
                           {"brokerId": "1", "capacity": {"DISK": "6"}}]}, "listed twice"),
    ({"brokerCapacities": [{"brokerId": "1", "capacity": {"DISK": "1e30"}}]}, "out of range"),
    ({"brokers": {}}, "no capacity given"),
    ({"brokers": []}, '"brokers" must map broker ids to bytes'),
    ({"brokers": {"1": 0}}, "not a positive size"),
    ({"brokers": {"a": 5}}, "is not an integer"),
    ({"brokers": {"-3": 5}}, "is negative"),
    ({"brokers": {"1": 5}, "disk": 3}, "unknown key(s) ['disk']"),
    ({"brokers": {"1": 5}, "threshold_pct": 0}, "must be a percentage in (0, 100]"),
    ({"brokers": {"1": 5}, "threshold_pct": 101}, "must be a percentage in (0, 100]"),
    ({"brokers": {"1": 5}, "threshold_pct": "lots"}, "is not a number"),
]


@pytest.mark.parametrize("doc,message", BAD)
def test_bad_documents_are_refused_naming_the_problem(doc, message) -> None:
    with pytest.raises(InvalidInput) as err:
        parse_capacity(doc, "capacity file c.json")
    assert message in str(err.value) and "capacity file c.json" in str(err.value)


@pytest.mark.parametrize("content,message", [
    (b"{not json", "invalid JSON at line 1"),
    (b"\xff\xfe", "not UTF-8"),
    (b"[" * 100000 + b"]" * 100000, "invalid JSON"),
])
def test_unreadable_files_are_refused(tmp_path, content: bytes, message: str) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(content)
    with pytest.raises(InvalidInput, match=message):
        read_capacity_file(str(path))


def test_missing_file_is_refused(tmp_path) -> None:
    with pytest.raises(InvalidInput, match="No such file"):
        read_capacity_file(str(tmp_path / "nope.json"))
