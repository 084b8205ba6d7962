"""What a planning kernel gets, built the same way whichever engine read the files.

:class:`PlanInput` is the snapshot slice a kernel plans on (the touched partitions as objects,
plus the header: cluster line, brokers, broker configs, topics), the sizes of those partitions,
and the per-broker baseline load of every partition it does not touch. Both readers —
Spark (:mod:`spark_jobs.spark_io`) and the driver (:mod:`spark_jobs.driver_io`) — end with the
same columns (one Python list per field, rows in file order: header rows and touched partitions)
and the same baseline counts, and hand them to :func:`plan_input`, so a kernel cannot tell which
engine read its input and the plan artifacts are byte-identical.

The baseline is kept in broker-id order and each topic's partitions in partition order: neither
depends on how an engine happened to order its rows.

Failure: a snapshot without its cluster line raises :class:`kafka_zk.errors.InvalidPayload`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from kafka_zk.codecs import (PreferredElectionRequest, ReassignmentEntry, ReassignmentRequest,
                             TopicPartition)
from kafka_zk.errors import InvalidPayload
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
from planning.model import BrokerLoad

#: the columns of a touched partition row the kernels use
PARTITION_COLUMNS = ("topic", "partition", "replicas", "adding", "removing", "leader", "leader_epoch",
                     "isr", "controller_epoch")
#: the columns of the header rows (cluster, broker, broker_config, topic)
HEAD_COLUMNS = ("controller_id", "taken_at_ms", "reassignment", "preferred_election", "delete_markers", "id",
                "rack", "host", "port", "endpoints", "entity", "config", "topic_id", "marked_for_deletion",
                "assignment_version")


@dataclass(frozen=True)
class BaselineRow:
    """One broker's aggregate over the untouched partitions (``broker`` None: partitions with no replica)."""

    broker: int | None
    replicas: int
    bytes: int
    leaders: int
    partitions: int     # untouched partitions counted on this row (led by the broker, or replica-less)


@dataclass(frozen=True)
class PlanInput:
    """What the driver-side kernel gets: a snapshot slice, its sizes, the rest as a baseline."""

    snapshot: ClusterSnapshot
    sizes: Mapping[TopicPartition, int] | None
    baseline: Mapping[int, BrokerLoad]
    partitions_total: int


@dataclass(frozen=True)
class Slice:
    """The header and the touched partitions as objects, with their sizes."""

    snapshot: ClusterSnapshot
    sizes: dict[TopicPartition, int]
    touched: int


def plan_input(sliced: Slice, baseline_rows: Iterable[BaselineRow], with_sizes: bool) -> PlanInput:
    """The kernel's input from the slice (:func:`build_slice`) and the baseline aggregate."""
    snapshot, sizes, touched_count = sliced.snapshot, sliced.sizes, sliced.touched
    baseline: dict[int, BrokerLoad] = {}
    untouched = 0
    for r in sorted(baseline_rows, key=lambda r: (r.broker is None, r.broker or 0)):
        untouched += r.partitions
        if r.broker is not None:
            baseline[r.broker] = BrokerLoad(r.replicas, r.bytes, r.leaders)
    return PlanInput(snapshot, sizes if with_sizes else None, baseline, untouched + touched_count)


def arrow_columns(table) -> dict[str, list]:
    """A pyarrow table as {column: Python list}; map values (lists of pairs) become dicts."""
    import pyarrow as pa

    out = {}
    for name in table.column_names:
        values = table.column(name).to_pylist()
        if isinstance(table.schema.field(name).type, pa.MapType):
            values = [None if v is None else dict(v) for v in values]
        out[name] = values
    return out


def _head(rows: dict[str, list]) -> tuple[dict, dict[int, Broker], dict[str, dict[str, str]], list[int]]:
    """Cluster line, brokers, broker configs and topic rows (indexes) from the collected columns."""
    kinds = rows["kind"]
    col = rows.__getitem__
    head_i = next((i for i, k in enumerate(kinds) if k == "cluster"), None)
    if head_i is None:
        raise InvalidPayload("snapshot file: no cluster line; pass a file written by formats.snapshot_file")
    head = {c: col(c)[head_i] for c in ("controller_id", "controller_epoch", "taken_at_ms", "reassignment",
                                          "preferred_election", "delete_markers")}
    ids, racks, hosts, ports, eps = col("id"), col("rack"), col("host"), col("port"), col("endpoints")
    brokers = {int(ids[i]): Broker(int(ids[i]), racks[i], hosts[i], int(ports[i] or -1), tuple(eps[i] or ()), True)
               for i, k in enumerate(kinds) if k == "broker"}
    entities, configs = col("entity"), col("config")
    broker_configs = {entities[i]: dict(configs[i] or ()) for i, k in enumerate(kinds) if k == "broker_config"}
    return head, brokers, broker_configs, [i for i, k in enumerate(kinds) if k == "topic"]


def build_slice(rows: dict[str, list]) -> Slice:
    """The snapshot of the collected columns (``kind``, :data:`PARTITION_COLUMNS`, :data:`HEAD_COLUMNS`,
    ``size``; header rows and touched partitions), their sizes, their count."""
    head, brokers, configs, topic_idx = _head(rows)
    kinds = rows["kind"]
    names, pids, replicas, adding, removing = (rows["topic"], rows["partition"], rows["replicas"],
                                               rows["adding"], rows["removing"])
    leaders, epochs, isrs, cepochs, psizes = (rows["leader"], rows["leader_epoch"], rows["isr"],
                                              rows["controller_epoch"], rows["size"])
    by_topic: dict[str, dict[int, Partition]] = {names[i]: {} for i in topic_idx}
    touched_count = 0
    sizes: dict[TopicPartition, int] = {}
    for i, kind in enumerate(kinds):
        if kind != "partition":
            continue
        t, p = names[i], int(pids[i])
        touched_count += 1
        by_topic.setdefault(t, {})[p] = Partition(
            t, p, tuple(replicas[i]), tuple(adding[i] or ()), tuple(removing[i] or ()),
            leaders[i], epochs[i], tuple(isrs[i] or ()), cepochs[i])
        if psizes[i]:
            sizes[TopicPartition(t, p)] = int(psizes[i])
    for t, parts in by_topic.items():
        if any(a > b for a, b in zip(parts, list(parts)[1:])):
            by_topic[t] = dict(sorted(parts.items()))
    configs_col, ids_col, marked, versions = rows["config"], rows["topic_id"], rows["marked_for_deletion"], \
        rows["assignment_version"]
    topics = {names[i]: Topic(names[i], by_topic.get(names[i], {}), dict(configs_col[i] or {}), ids_col[i],
                              bool(marked[i]), int(versions[i] or 1)) for i in topic_idx}
    re, pe = head.get("reassignment"), head.get("preferred_election")
    snapshot = ClusterSnapshot(
        brokers, topics, configs,
        None if re is None else ReassignmentRequest(tuple(
            ReassignmentEntry(e["topic"], int(e["partition"]), tuple(e["replicas"])) for e in re)),
        None if pe is None else PreferredElectionRequest(tuple(
            TopicPartition(e["topic"], int(e["partition"])) for e in pe)),
        frozenset(head.get("delete_markers") or ()), head.get("controller_id"),
        head.get("controller_epoch"), int(head.get("taken_at_ms") or 0))
    return Slice(snapshot, sizes, touched_count)
