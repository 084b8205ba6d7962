"""The kernel input built from a snapshot in memory (spark_jobs/direct_input.py) is the one the driver
reader builds from the same snapshot written to a file (spark_jobs/driver_io.py), on any small
cluster and for every kind of selection: touched partitions, their sizes, the per-broker baseline
(replica-less partitions, partitions missing from the sizes, sizes of partitions that do not
exist) and the header (reassignment in progress, election, delete markers, configs) (hypothesis)."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_zk.codecs import PreferredElectionRequest, ReassignmentEntry, ReassignmentRequest, TopicPartition
from kafka_zk.log_dirs import PartitionSizes
from kafka_zk.model import Partition
from formats.snapshot_file import write_snapshot
from spark_jobs.direct_input import input_from_snapshot, input_layout
from spark_jobs.driver_io import load_input_in_driver
from spark_jobs.selection import Selection
from spark_jobs.synthetic import synthetic_cluster


@st.composite
def cases(draw):
    brokers = draw(st.integers(3, 7))
    snap = synthetic_cluster(brokers, draw(st.integers(0, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 6)),
                             draw(st.integers(1, 3)), seed=draw(st.integers(0, 99)))
    names = sorted(snap.topics)
    topics = dict(snap.topics)
    first = topics[names[0]]
    parts = dict(first.partitions)
    if draw(st.booleans()):         # a partition with no replica (a broken topic znode)
        parts[len(parts)] = Partition(first.name, len(parts), ())
    if draw(st.booleans()):         # a partition with no state znode
        p = parts[0]
        parts[0] = Partition(p.topic, 0, p.replicas)
    topics[first.name] = dataclasses.replace(first, partitions=parts, config={"retention.ms": "1000"},
                                             topic_id="abc", marked_for_deletion=draw(st.booleans()))
    snap = dataclasses.replace(
        snap, topics=topics, broker_configs={"1": {"leader.replication.throttled.rate": "5"}},
        reassignment=ReassignmentRequest((ReassignmentEntry(first.name, 0, (0, 1)),)) if draw(st.booleans()) else None,
        preferred_election=PreferredElectionRequest((TopicPartition(first.name, 0),)) if draw(st.booleans()) else None,
        delete_markers=frozenset({names[-1]}) if draw(st.booleans()) else frozenset(), taken_at_ms=17)
    every = [p.tp for p in snap.partitions()]
    sized = draw(st.lists(st.sampled_from(every), unique=True)) + [TopicPartition("gone", 0)]
    sizes = None if draw(st.booleans()) else PartitionSizes(
        tuple(tp.topic for tp in sized), tuple(tp.partition for tp in sized),
        tuple(draw(st.integers(0, 10 ** 12)) for _ in sized))
    selection = draw(st.sampled_from([
        Selection.every(), Selection.on_brokers(draw(st.lists(st.integers(0, brokers), max_size=3))),
        Selection.of_topics(draw(st.lists(st.sampled_from(names + ["other"]), max_size=3)))]))
    return snap, sizes, selection


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_input_from_the_snapshot_in_memory_equals_the_input_read_from_its_file(case, tmp_path) -> None:
    snap, sizes, selection = case
    path = str(tmp_path / "snapshot.jsonl")
    write_snapshot(snap, path)
    assert input_from_snapshot(snap, sizes, selection) == load_input_in_driver(path, sizes, selection)
    assert input_from_snapshot(snap, sizes, selection, input_layout(snap, selection)) == \
        load_input_in_driver(path, sizes, selection)


@settings(max_examples=80, deadline=None)
@given(case=cases(), brokers=st.lists(st.integers(0, 7), max_size=3))
def test_a_selection_on_brokers_over_arrays_gives_the_same_input(case, brokers) -> None:
    # large snapshots pick, join the sizes and sum the baseline over numpy arrays (_on_brokers_over_arrays)
    from spark_jobs import direct_input

    snap, sizes, _selection = case
    selection = Selection.on_brokers(brokers)
    plain = input_from_snapshot(snap, sizes, selection)
    saved = direct_input.COLUMNAR_MIN_PARTITIONS
    direct_input.COLUMNAR_MIN_PARTITIONS = 0
    try:
        assert input_from_snapshot(snap, sizes, selection) == plain
        # the layout built before the sizes came (kafka-runbook plan --zookeeper) gives the same input
        assert input_from_snapshot(snap, sizes, selection, direct_input.input_layout(snap, selection)) == plain
    finally:
        direct_input.COLUMNAR_MIN_PARTITIONS = saved
