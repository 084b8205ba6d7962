"""The kernel input straight from a snapshot held in memory: no file written and read back, no pyarrow.

``kafka-runbook plan … --zookeeper`` has the cluster's assignments as a
:class:`kafka_zk.model.ClusterSnapshot` the moment it has read them. Writing them to a file
for the driver reader (:mod:`spark_jobs.driver_io`) to parse again with pyarrow cost more than
the plan itself at 20,000 partitions (the write, pyarrow's and pandas' imports, the read;
BENCHMARKS.md). :func:`input_from_snapshot` builds the same :class:`spark_jobs.plan_input.PlanInput`
from the objects: the header through the same records the file holds
(:func:`kafka_zk.snapshot_file.header_records`, :func:`kafka_zk.snapshot_file.topic_record`,
parsed by the same :func:`spark_jobs.plan_input.build_slice`), the partitions
:meth:`spark_jobs.selection.Selection.picks` names in file order (topics by name, partitions by
id), and every other partition counted in the per-broker baseline exactly as the driver
reader's numpy aggregate counts it (replicas, bytes, preferred leaderships, replica-less
partitions). So the plan files are byte-identical to planning ``--snapshot`` on the file
(``tests/cli/test_plan_direct_input.py``).

Failure: none of its own (the sizes were checked by :mod:`spark_jobs.sizes_input`; a snapshot
read from ZooKeeper always has its cluster header).
"""

from __future__ import annotations

from typing import Any

from kafka_zk.codecs import TopicPartition
from kafka_zk.log_dirs import PartitionSizes
from kafka_zk.model import ClusterSnapshot, Partition, Topic
from kafka_zk.snapshot_file import header_records, topic_record
from spark_jobs.plan_input import HEAD_COLUMNS, PARTITION_COLUMNS, BaselineRow, PlanInput, Slice, build_slice, plan_input
from spark_jobs.selection import Selection

_COLUMNS = ("kind", *PARTITION_COLUMNS, *HEAD_COLUMNS, "size")


def _header_slice(snapshot: ClusterSnapshot, names: list[str]) -> Slice:
    """The snapshot's header and its topics (no partitions yet), parsed as the file's records are."""
    records: list[dict[str, Any]] = [*header_records(snapshot), *(topic_record(n, snapshot.topics[n]) for n in names)]
    return build_slice({c: [r.get(c) for r in records] for c in _COLUMNS})


def input_from_snapshot(snapshot: ClusterSnapshot, sizes: PartitionSizes | None,
                        selection: Selection = Selection.every()) -> PlanInput:
    """The kernel input for ``selection`` from ``snapshot`` and the checked ``sizes`` columns."""
    names = sorted(snapshot.topics)
    head = _header_slice(snapshot, names)
    size_of: dict[tuple[str, int], int] = {} if sizes is None else dict(
        zip(zip(sizes.topics, sizes.partitions), sizes.sizes))
    picks = selection.picker()
    touched_sizes: dict[TopicPartition, int] = {}
    replicas: dict[int, int] = {}
    bytes_: dict[int, int] = {}
    leaders: dict[int, int] = {}
    empty = touched = 0
    topics: dict[str, Topic] = {}
    for name in names:
        parts = snapshot.topics[name].partitions
        chosen: dict[int, Partition] = {}
        for pid in sorted(parts):
            p = parts[pid]
            size = size_of.get((name, pid), 0) if size_of else 0
            reps = p.replicas
            if picks(name, reps):
                chosen[pid] = p
                touched += 1
                if size:
                    touched_sizes[TopicPartition(name, pid)] = size
            elif not reps:
                empty += 1
            else:
                for b in reps:
                    if b in replicas:
                        replicas[b] += 1
                        bytes_[b] += size
                    else:
                        replicas[b] = 1
                        bytes_[b] = size
                first = reps[0]
                leaders[first] = leaders.get(first, 0) + 1
        t = head.snapshot.topics[name]
        topics[name] = Topic(t.name, chosen, t.config, t.topic_id, t.marked_for_deletion, t.assignment_version)
    baseline = [BaselineRow(b, replicas[b], bytes_[b], leaders.get(b, 0), leaders.get(b, 0)) for b in sorted(replicas)]
    if empty:
        baseline.append(BaselineRow(None, 0, 0, 0, empty))
    hs = head.snapshot
    sliced = ClusterSnapshot(hs.brokers, topics, hs.broker_configs, hs.reassignment, hs.preferred_election,
                             hs.delete_markers, hs.controller_id, hs.controller_epoch, hs.taken_at_ms)
    return plan_input(Slice(sliced, touched_sizes, touched), baseline, sizes is not None)
