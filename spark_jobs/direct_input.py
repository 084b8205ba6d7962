"""The kernel input straight from a snapshot held in memory: no file written and read back, no pyarrow.

``kafka-runbook plan … --zookeeper`` has the cluster's assignments as a
:class:`kafka_zk.model.ClusterSnapshot` the moment it has read them. Writing them to a file
for the driver reader (:mod:`spark_jobs.driver_io`) to parse again with pyarrow cost more than
the plan itself at 20,000 partitions (the write, pyarrow's and pandas' imports, the read;
BENCHMARKS.md). :func:`input_from_snapshot` builds the same :class:`spark_jobs.plan_input.PlanInput`
from the objects: the header through the same records the file holds
(:func:`formats.snapshot_file.header_records`, :func:`formats.snapshot_file.topic_record`,
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

from dataclasses import dataclass
from itertools import chain
from typing import Any

from kafka_zk.codecs import TopicPartition
from kafka_zk.log_dirs import PartitionSizes
from kafka_zk.model import ClusterSnapshot, Partition, Topic
from formats.snapshot_file import header_records, topic_record
from spark_jobs.plan_input import HEAD_COLUMNS, PARTITION_COLUMNS, BaselineRow, PlanInput, Slice, build_slice, plan_input
from spark_jobs.selection import Selection

_COLUMNS = ("kind", *PARTITION_COLUMNS, *HEAD_COLUMNS, "size")
#: from this many partitions a selection on brokers is picked, joined with the sizes and summed
#: into the baseline over numpy arrays (:func:`_on_brokers_over_arrays`); below, numpy's import costs more
COLUMNAR_MIN_PARTITIONS = 200_000


def _header_slice(snapshot: ClusterSnapshot, names: list[str]) -> Slice:
    """The snapshot's header and its topics (no partitions yet), parsed as the file's records are."""
    records: list[dict[str, Any]] = [*header_records(snapshot), *(topic_record(n, snapshot.topics[n]) for n in names)]
    return build_slice({c: [r.get(c) for r in records] for c in _COLUMNS})


@dataclass(frozen=True)
class InputLayout:
    """What :func:`input_from_snapshot` builds from the snapshot before it needs the sizes: the
    header slice and, for a large selection on brokers, the partitions as arrays with the picked
    ones marked (:func:`input_layout`; ``kafka-runbook plan --zookeeper`` builds it while the sizes
    child is still parsing)."""

    snapshot: ClusterSnapshot
    selection: Selection
    names: list[str]
    head: Slice
    arrays: "_BrokerArrays | None" = None


def input_layout(snapshot: ClusterSnapshot, selection: Selection = Selection.every()) -> InputLayout:
    """The sizes-free part of :func:`input_from_snapshot` for ``selection``."""
    names = sorted(snapshot.topics)
    head = _header_slice(snapshot, names)
    arrays = None
    if selection.brokers is not None and sum(len(t.partitions) for t in snapshot.topics.values()) \
            >= COLUMNAR_MIN_PARTITIONS:
        arrays = _broker_arrays(snapshot, selection.brokers, names)
    return InputLayout(snapshot, selection, names, head, arrays)


def input_from_snapshot(snapshot: ClusterSnapshot, sizes: PartitionSizes | None,
                        selection: Selection = Selection.every(), layout: InputLayout | None = None) -> PlanInput:
    """The kernel input for ``selection`` from ``snapshot`` and the checked ``sizes`` columns
    (``layout``: :func:`input_layout` of the same snapshot and selection, already built)."""
    if layout is None or layout.snapshot is not snapshot or layout.selection != selection:
        layout = input_layout(snapshot, selection)
    names, head = layout.names, layout.head
    if layout.arrays is not None:
        return _on_brokers_over_arrays(layout.arrays, sizes, names, head)
    picks = selection.picker()
    size_of: dict[tuple[str, int], int] = {} if sizes is None else dict(
        zip(zip(sizes.topics, sizes.partitions), sizes.sizes))
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


class _Index(dict):
    """Topic name -> its index among the snapshot's names; -1 for a name it does not have."""

    def __missing__(self, name: str) -> int:
        return -1


@dataclass(frozen=True)
class _BrokerArrays:
    """The partitions as arrays (topics by name, partitions by id), those with a replica on the
    selection's brokers marked."""

    plist: list[Partition]
    topic_ix: Any
    pid: Any
    n_rep: Any
    rep: Any
    owner: Any
    picked: Any


def _broker_arrays(snapshot: ClusterSnapshot, brokers: tuple[int, ...], names: list[str]) -> _BrokerArrays:
    # local: numpy only for snapshots this large
    import numpy as np

    from planning.kernels.move_columns import flat

    parts_of = [snapshot.topics[name].partitions for name in names]
    pids_of = [sorted(parts) for parts in parts_of]
    plist = [parts[pid] for parts, pids in zip(parts_of, pids_of) for pid in pids]
    counts = np.fromiter(map(len, pids_of), dtype=np.int64, count=len(names))
    n = len(plist)
    topic_ix = np.repeat(np.arange(len(names), dtype=np.int64), counts)
    pid = np.fromiter(chain.from_iterable(pids_of), dtype=np.int64, count=n)
    n_rep, rep = flat([p.replicas for p in plist])
    owner = np.repeat(np.arange(n, dtype=np.int64), n_rep)
    picked = np.zeros(n, dtype=bool)
    picked[owner[np.isin(rep, np.asarray(brokers, dtype=np.int64))]] = True
    return _BrokerArrays(plist, topic_ix, pid, n_rep, rep, owner, picked)


def _on_brokers_over_arrays(arrays: _BrokerArrays, sizes: PartitionSizes | None, names: list[str],
                            head: Slice) -> PlanInput:
    """:func:`input_from_snapshot` for a selection on brokers, with the picking, the sizes' join
    and the baseline's sums over numpy arrays (one row per partition, topics by name, partitions
    by id): the same touched partitions, sizes and baseline."""
    import numpy as np

    plist, topic_ix, pid, n_rep, rep, owner, picked = (arrays.plist, arrays.topic_ix, arrays.pid, arrays.n_rep,
                                                       arrays.rep, arrays.owner, arrays.picked)
    n = len(plist)
    size = np.zeros(n, dtype=np.int64)
    if sizes is not None and len(sizes):
        index = _Index((name, i) for i, name in enumerate(names))
        s_topic = np.fromiter(map(index.__getitem__, sizes.topics), dtype=np.int64, count=len(sizes))
        s_pid = np.asarray(sizes.partitions, dtype=np.int64)
        s_size = np.asarray(sizes.sizes, dtype=np.int64)
        span = int(max(pid.max(initial=0), s_pid.max(initial=0))) + 1
        known = (s_topic >= 0) & (s_pid >= 0)
        keys = (s_topic * span + s_pid)[known][::-1]            # reversed: a repeated partition's last size wins
        uniq, first = np.unique(keys, return_index=True)
        values = s_size[known][::-1][first]
        at = np.searchsorted(uniq, topic_ix * span + pid)
        at = np.minimum(at, max(len(uniq) - 1, 0))
        hit = (uniq[at] == topic_ix * span + pid) if len(uniq) else np.zeros(n, dtype=bool)
        size[hit] = values[at[hit]]
    touched_sizes: dict[TopicPartition, int] = {}
    chosen: list[dict[int, Partition]] = [{} for _ in names]
    rows = np.flatnonzero(picked)
    for k, ti, sz in zip(rows.tolist(), topic_ix[rows].tolist(), size[rows].tolist()):
        p = plist[k]
        chosen[ti][p.partition] = p
        if sz:
            touched_sizes[TopicPartition(p.topic, p.partition)] = sz
    rest = ~picked[owner]
    kept = rep[rest]
    codes = np.unique(kept) if kept.size else kept
    where = np.searchsorted(codes, kept)
    replicas = np.bincount(where, minlength=len(codes))
    bytes_ = np.zeros(len(codes), dtype=np.int64)
    np.add.at(bytes_, where, size[owner[rest]])
    starts = np.concatenate([[0], np.cumsum(n_rep)[:-1]]).astype(np.int64)
    led = ~picked & (n_rep > 0)
    leaders = np.zeros(len(codes), dtype=np.int64)
    np.add.at(leaders, np.searchsorted(codes, rep[starts[led]]), 1)
    baseline = [BaselineRow(b, r, y, ld, ld) for b, r, y, ld in
                zip(codes.tolist(), replicas.tolist(), bytes_.tolist(), leaders.tolist())]
    empty = int((~picked & (n_rep == 0)).sum())
    if empty:
        baseline.append(BaselineRow(None, 0, 0, 0, empty))
    topics: dict[str, Topic] = {}
    for name, got in zip(names, chosen):
        t = head.snapshot.topics[name]
        topics[name] = Topic(t.name, got, t.config, t.topic_id, t.marked_for_deletion, t.assignment_version)
    hs = head.snapshot
    sliced = ClusterSnapshot(hs.brokers, topics, hs.broker_configs, hs.reassignment, hs.preferred_election,
                             hs.delete_markers, hs.controller_id, hs.controller_epoch, hs.taken_at_ms)
    return plan_input(Slice(sliced, touched_sizes, int(picked.sum())), baseline, sizes is not None)
