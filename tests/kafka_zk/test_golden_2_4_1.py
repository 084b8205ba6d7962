"""Golden checks against trajectories recorded on a real Kafka 2.4.1 (tests/vectors/real_kafka_2_4_1/).

The recorded ZooKeeper state at a moment is written into our ZooKeeper with plain kazoo, then
our reader, describe, election and writers are compared with what Kafka printed or wrote.
The recordings and their README are in ``tests/vectors/real_kafka_2_4_1/``.
"""

import json
from pathlib import Path

import pytest

from kafka_zk.admin.election import preferred_election_candidates, submit_preferred_election
from kafka_zk.admin.reassignment import submit_reassignment
from kafka_zk.admin.topics import create_topic
from kafka_zk.codecs import TopicPartition as TP
from kafka_zk.describe import DescribeFilters, describe_lines
from kafka_zk.snapshot import read_snapshot
from kafka_zk.writer import ZkWriter
from kafka_zk.authority import PersonAtKeyboard
from tests.zk_helpers import read_json

KEYBOARD = PersonAtKeyboard("the test")   # these tests stand for a person at the keyboard

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "real_kafka_2_4_1"


def load(name):
    return json.loads((VECTORS / name).read_text())


def state_at(doc, t):
    return [e for e in doc["timeline"] if e["type"] == "snapshot" and e["t"] <= t][-1]["nodes"]


def restore(zk, nodes):
    for path in sorted(nodes, key=lambda p: p.count("/")):
        data = nodes[path]["data"]
        raw = b"" if data is None else (data.encode() if isinstance(data, str) else json.dumps(data).encode())
        zk.create(path, raw, makepath=True, ephemeral=path.startswith("/brokers/ids/"))


FILTERS = {"describe (ZK path)": DescribeFilters(), "describe (ZK path) with x down": DescribeFilters(),
           "describe --unavailable-partitions": DescribeFilters(unavailable=True),
           "describe --under-replicated-partitions": DescribeFilters(under_replicated=True)}
CASES = [(f, o["t"], o["note"]) for f in ("a.json", "f.json")
         for o in load(f)["observations"] if "output" in o]


@pytest.mark.parametrize("name,t,note", CASES, ids=[f"{c[0]}:{c[2]}" for c in CASES])
def test_describe_matches_kafka_2_4_1(zk, name, t, note):
    doc = load(name)
    restore(zk, state_at(doc, t))
    expected = next(o["output"] for o in doc["observations"] if o["t"] == t)
    snap = read_snapshot(zk, topics=doc["watched_topics"])
    assert "\n".join(describe_lines(snap, filters=FILTERS[note])) == expected.rstrip("\n")


def test_topic_creation_payloads_match_kafka(zk):
    doc = load("a.json")
    restore(zk, {p: v for p, v in state_at(doc, doc["started_at"] + 1e9).items() if p.startswith("/brokers/ids/")})
    recorded = {e["path"]: e["data"] for e in doc["timeline"] if e["type"] == "action" and "ta1" in e["path"]
                and e["action"] == "create"}
    parts = recorded["/brokers/topics/ta1"]["partitions"]
    create_topic(ZkWriter(zk, authority=KEYBOARD), zk, "ta1", None, None, {}, {int(p): r for p, r in parts.items()})
    assert read_json(zk, "/config/topics/ta1") == recorded["/config/topics/ta1"]
    assert read_json(zk, "/brokers/topics/ta1") == recorded["/brokers/topics/ta1"]


def test_preferred_election_candidates_match_what_the_controller_did(zk):
    doc = load("d.json")
    actions = [e for e in doc["timeline"] if e["type"] == "action"]
    election = next(a for a in actions if a["action"] == "create")
    before = state_at(doc, election["t"])
    after = state_at(doc, actions[actions.index(election) + 1]["t"])
    restore(zk, before)
    snap = read_snapshot(zk)
    asked = [TP(e["topic"], e["partition"]) for e in election["data"]["partitions"]]
    eligible, _ = preferred_election_candidates(snap, asked)
    moved = {tp for tp in asked if snap.has_partition(tp)
             and after[f"/brokers/topics/{tp.topic}/partitions/{tp.partition}/state"]["data"]["leader"]
             != snap.partition(tp).leader}
    assert set(eligible) == moved == {TP("td", 0), TP("td", 3)}
    sub = submit_preferred_election(ZkWriter(zk, authority=KEYBOARD), snap, asked)
    assert sub.skipped == (TP("td", 9),)
    assert read_json(zk, "/admin/preferred_replica_election") == {
        "version": 1, "partitions": [p for p in election["data"]["partitions"] if p["partition"] != 9]}


def test_reassignment_payload_matches_kafka(zk):
    doc = load("b-i.json")
    action = next(e for e in doc["timeline"] if e["type"] == "action" and e["action"] == "create")
    restore(zk, state_at(doc, action["t"]))
    targets = {TP(e["topic"], e["partition"]): tuple(e["replicas"]) for e in action["data"]["partitions"]}
    submit_reassignment(ZkWriter(zk, authority=KEYBOARD), read_snapshot(zk), targets)
    assert read_json(zk, "/admin/reassign_partitions") == action["data"]
