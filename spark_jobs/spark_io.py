"""Spark side of the plan job: read the snapshot and sizes files, aggregate, slice.

What runs in Spark (JVM, parallel, no Python per row): parsing the JSON-lines snapshot with a
fixed schema (or reading its Parquet variant), parsing the per-partition sizes
(``sizes.jsonl`` of :mod:`kafka_zk.sizes_file`, split across tasks like the snapshot), the join
of sizes onto partitions, the selection of partitions a plan touches (e.g. those with a replica
on a removed broker) and the per-broker aggregate load (replicas, bytes, preferred leaderships)
of every partition it does *not* touch (the ``baseline``). Only the touched partitions (as
Arrow, the columns the kernels use) and one row per broker reach the driver; two Spark jobs,
each joining the sizes (when given) as a broadcast.

Raw ``kafka-log-dirs.sh --describe`` output is one JSON document (one line, ~240 MB at 10⁶
partitions × RF 3) that Spark could only parse in a single task: the driver converts it to a
``sizes.jsonl`` first (:mod:`spark_jobs.sizes_input`), so Spark reads sizes one way only.

Failure: a snapshot without its cluster line raises :class:`kafka_zk.errors.InvalidPayload`;
a file Spark cannot read fails the Spark job with Spark's own error (the sizes file was checked
in the driver before, so only a file changed meanwhile gets there).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Iterable, Mapping

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kafka_zk.codecs import (PreferredElectionRequest, ReassignmentEntry, ReassignmentRequest,
                             TopicPartition)
from kafka_zk.errors import InvalidPayload
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
from spark_jobs.kernels.model import BrokerLoad

_INTS = T.ArrayType(T.LongType())
SNAPSHOT_SCHEMA = T.StructType([
    T.StructField("kind", T.StringType()), T.StructField("version", T.LongType()),
    T.StructField("controller_id", T.LongType()), T.StructField("controller_epoch", T.LongType()),
    T.StructField("taken_at_ms", T.LongType()),
    T.StructField("reassignment", T.ArrayType(T.StructType([
        T.StructField("topic", T.StringType()), T.StructField("partition", T.LongType()),
        T.StructField("replicas", _INTS)]))),
    T.StructField("preferred_election", T.ArrayType(T.StructType([
        T.StructField("topic", T.StringType()), T.StructField("partition", T.LongType())]))),
    T.StructField("delete_markers", T.ArrayType(T.StringType())),
    T.StructField("id", T.LongType()), T.StructField("rack", T.StringType()),
    T.StructField("host", T.StringType()), T.StructField("port", T.LongType()),
    T.StructField("endpoints", T.ArrayType(T.StringType())),
    T.StructField("entity", T.StringType()), T.StructField("config", T.MapType(T.StringType(), T.StringType())),
    T.StructField("topic", T.StringType()), T.StructField("topic_id", T.StringType()),
    T.StructField("marked_for_deletion", T.BooleanType()), T.StructField("assignment_version", T.LongType()),
    T.StructField("partition", T.LongType()), T.StructField("replicas", _INTS),
    T.StructField("adding", _INTS), T.StructField("removing", _INTS), T.StructField("leader", T.LongType()),
    T.StructField("leader_epoch", T.LongType()), T.StructField("isr", _INTS),
])

SIZES_SCHEMA = T.StructType([
    T.StructField("kind", T.StringType()), T.StructField("version", T.LongType()),
    T.StructField("topic", T.StringType()), T.StructField("partition", T.LongType()),
    T.StructField("size", T.LongType())])


def read_snapshot_df(spark: SparkSession, path: str) -> DataFrame:
    """The snapshot's records with :data:`SNAPSHOT_SCHEMA` (no inference pass).

    A path ending in ``.parquet`` is the columnar variant of :mod:`kafka_zk.snapshot_file`
    (no JSON parsing at all); anything else is read as JSON lines.
    """
    reader = spark.read.schema(SNAPSHOT_SCHEMA)
    return reader.parquet(path) if path.endswith(".parquet") else reader.json(path)


def read_sizes_df(spark: SparkSession, path: str) -> DataFrame:
    """(topic, partition, size) of a ``sizes.jsonl`` (:mod:`kafka_zk.sizes_file`), split across tasks.

    Read with :data:`SIZES_SCHEMA` (no inference pass) in ``FAILFAST`` mode: a line that is not
    JSON, or holds a value of the wrong type, fails the job instead of becoming nulls. The driver
    has already checked the file (:mod:`spark_jobs.sizes_input`): one line per partition.
    """
    rows = spark.read.schema(SIZES_SCHEMA).option("mode", "FAILFAST").json(path)
    return rows.filter(F.col("kind").isNull()).select("topic", "partition", "size")


@dataclass(frozen=True)
class SparkInput:
    """What the driver-side kernel gets: a snapshot slice, its sizes, the rest as a baseline."""

    snapshot: ClusterSnapshot
    sizes: Mapping[TopicPartition, int] | None
    baseline: Mapping[int, BrokerLoad]
    partitions_total: int


_PARTITION_COLUMNS = ("topic", "partition", "replicas", "adding", "removing", "leader", "leader_epoch",
                      "isr", "controller_epoch")
_HEAD_COLUMNS = ("controller_id", "taken_at_ms", "reassignment", "preferred_election", "delete_markers", "id", "rack", "host", "port", "endpoints", "entity", "config", "topic_id",
                 "marked_for_deletion", "assignment_version")


def _head(rows: dict[str, list]) -> tuple[dict, dict[int, Broker], dict[str, dict[str, str]], list[int]]:
    """Cluster line, brokers, broker configs and topic rows (indexes) from the collected columns."""
    kinds = rows["kind"]
    col = rows.__getitem__
    head_i = next((i for i, k in enumerate(kinds) if k == "cluster"), None)
    if head_i is None:
        raise InvalidPayload("snapshot file: no cluster line; pass a file written by kafka_zk.snapshot_file")
    head = {c: col(c)[head_i] for c in ("controller_id", "controller_epoch", "taken_at_ms", "reassignment",
                                          "preferred_election", "delete_markers")}
    ids, racks, hosts, ports, eps = col("id"), col("rack"), col("host"), col("port"), col("endpoints")
    brokers = {int(ids[i]): Broker(int(ids[i]), racks[i], hosts[i], int(ports[i] or -1), tuple(eps[i] or ()), True)
               for i, k in enumerate(kinds) if k == "broker"}
    entities, configs = col("entity"), col("config")
    broker_configs = {entities[i]: dict(configs[i] or ()) for i, k in enumerate(kinds) if k == "broker_config"}
    return head, brokers, broker_configs, [i for i, k in enumerate(kinds) if k == "topic"]


def _columns(table) -> dict[str, list]:
    """A pyarrow table as {column: Python list}; map values (lists of pairs) become dicts."""
    import pyarrow as pa

    out = {}
    for name in table.column_names:
        values = table.column(name).to_pylist()
        if isinstance(table.schema.field(name).type, pa.MapType):
            values = [None if v is None else dict(v) for v in values]
        out[name] = values
    return out


def load_input(spark: SparkSession, snapshot_path: str, sizes_path: str | None,
               touched: str | None = None) -> SparkInput:
    """Read the files; bring to the driver the partitions matching SQL ``touched`` (all if None).

    ``sizes_path`` is a ``sizes.jsonl`` (raw kafka-log-dirs output is converted before, by
    :mod:`spark_jobs.sizes_input`). Partitions not matching ``touched`` are aggregated per broker
    into the baseline. Two Spark jobs, each one scan of the snapshot (no cache): (1) the
    non-partition lines and the touched partitions, collected as Arrow (only the columns the
    kernels use); (2) the per-broker aggregate of the untouched partitions, which returns one
    row per broker and runs while the driver builds the slice's Python objects from (1). Each
    joins the sizes as a broadcast (hash) join: the sizes are read in parallel and no side of the
    join is shuffled (one row of three fields per partition: ~100 MB for 10⁶ partitions).
    """
    df = read_snapshot_df(spark, snapshot_path)
    is_part = F.col("kind") == "partition"
    flag = F.expr(touched) if touched else F.lit(True)
    sizes_df = F.broadcast(read_sizes_df(spark, sizes_path)) if sizes_path else None

    def with_size(parts: DataFrame) -> DataFrame:
        if sizes_df is None:
            return parts.withColumn("size", F.lit(0).cast("long"))
        joined = parts.join(sizes_df, ["topic", "partition"], "left")
        return joined.withColumn("size", F.coalesce("size", F.lit(0).cast("long")))

    wanted = df.filter(~is_part | flag).select("kind", *_PARTITION_COLUMNS, *_HEAD_COLUMNS)
    if sizes_df is not None:
        heads = wanted.filter(~is_part).withColumn("size", F.lit(None).cast("long"))
        wanted = heads.unionByName(with_size(wanted.filter(is_part)))
    else:
        wanted = wanted.withColumn("size", F.lit(0).cast("long"))
    rest = with_size(df.filter(is_part & ~flag).select("replicas", *(("topic", "partition") if sizes_df is not None else ())))
    exploded = rest.select(F.posexplode_outer("replicas").alias("pos", "broker"), "size")
    first = F.col("pos") == 0
    agg = exploded.groupBy("broker").agg(
        F.count("pos").alias("replicas"), F.sum(F.when(F.col("pos").isNotNull(), F.col("size"))).alias("bytes"),
        F.count(F.when(first, 1)).alias("leaders"), F.count(F.when(first | F.col("pos").isNull(), 1)).alias("parts"))
    table = wanted.toArrow()
    # The aggregate job runs in the JVM while this thread turns the touched rows into Python
    # objects (the driver's Python and the JVM are separate processes, so they overlap).
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="plan-baseline") as pool:
        baseline_rows = pool.submit(agg.collect)
        snapshot, sizes, touched_count = _slice(_columns(table))
        agg_rows = baseline_rows.result()
    baseline: dict[int, BrokerLoad] = {}
    untouched = 0
    for r in agg_rows:
        untouched += int(r["parts"])
        if r["broker"] is not None:
            baseline[int(r["broker"])] = BrokerLoad(int(r["replicas"]), int(r["bytes"] or 0), int(r["leaders"]))
    return SparkInput(snapshot, sizes if sizes_path else None, baseline, untouched + touched_count)


def _slice(rows: dict[str, list]) -> tuple[ClusterSnapshot, dict[TopicPartition, int], int]:
    """The snapshot of the collected rows (header + touched partitions), their sizes, their count."""
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
    return snapshot, sizes, touched_count


def overlaps(brokers: Iterable[int]) -> str:
    """SQL: the partition has a replica on one of ``brokers``."""
    ids = ",".join(str(int(b)) for b in brokers)
    return f"arrays_overlap(replicas, array({ids}))" if ids else "false"
