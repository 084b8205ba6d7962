"""The snapshot artifact: JSON lines and Parquet hold the same snapshot; bad files are refused."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_zk.codecs import PreferredElectionRequest, ReassignmentEntry, ReassignmentRequest, TopicPartition
from kafka_zk.errors import InvalidPayload
from kafka_zk.model import Broker, Partition
from formats.snapshot_file import load_snapshot, snapshot_records, write_snapshot
from spark_jobs.synthetic import synthetic_cluster


def _rich_snapshot():
    snap = synthetic_cluster(6, 0, 3, 4, 3, seed=2)        # no racks: rack None everywhere
    t = snap.topics["topic-0001"]
    moving = Partition("topic-0001", 0, (0, 1, 2, 5), adding=(5,), removing=(0,), leader=None,
                       leader_epoch=None, isr=(), controller_epoch=None)
    topics = dict(snap.topics, **{"topic-0001": dataclasses.replace(
        t, partitions={**t.partitions, 0: moving}, config={"retention.ms": "1"}, topic_id="abc",
        marked_for_deletion=True, assignment_version=2)})
    return dataclasses.replace(
        snap, topics=topics, broker_configs={"1": {"leader.replication.throttled.rate": "10"}, "<default>": {}},
        reassignment=ReassignmentRequest((ReassignmentEntry("topic-0001", 0, (1, 2, 5)),)),
        preferred_election=PreferredElectionRequest((TopicPartition("topic-0002", 3),)),
        delete_markers=frozenset({"topic-0001"}), taken_at_ms=1234)


@pytest.mark.parametrize("name", ["snap.jsonl", "snap.parquet"])
def test_round_trip(tmp_path, name) -> None:
    snap = _rich_snapshot()
    write_snapshot(snap, str(tmp_path / name))
    assert load_snapshot(str(tmp_path / name)) == snap
    assert [p.name for p in tmp_path.iterdir()] == [name]       # no temp file left


@pytest.mark.parametrize("name", ["bad.jsonl", "bad.parquet"])
def test_garbage_and_missing_files_are_refused(tmp_path, name) -> None:
    (tmp_path / name).write_text("this is not a snapshot\n")
    with pytest.raises(InvalidPayload, match=f"snapshot file .*{name}"):
        load_snapshot(str(tmp_path / name))
    with pytest.raises(InvalidPayload, match="cannot open"):
        load_snapshot(str(tmp_path / ("missing-" + name)))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(), number=st.integers(-(2 ** 63), 2 ** 63 - 1))
def test_the_file_is_what_json_dumps_writes_line_by_line_whatever_the_strings(text, number, tmp_path) -> None:
    snap = _rich_snapshot()
    t = snap.topics["topic-0001"]
    snap = dataclasses.replace(snap, topics=dict(snap.topics, **{"topic-0001": dataclasses.replace(
        t, config={text: text, "x": "\u2028\x00\x7f\"\\/é"}, topic_id=text)}),
        brokers={**snap.brokers, 7: Broker(7, text, text, number, (text,))})
    path = str(tmp_path / "s.jsonl")
    write_snapshot(snap, path)
    expected = "".join(json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n"
                       for r in snapshot_records(snap)).encode("utf-8")
    assert open(path, "rb").read() == expected
    assert load_snapshot(path) == snap
