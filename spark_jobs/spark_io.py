"""Spark side of the plan job: read the snapshot and sizes files, aggregate, slice.

What runs in Spark (JVM, parallel, no Python per row): parsing the JSON-lines snapshot with a
fixed schema, parsing the ``kafka-log-dirs`` JSON (explode brokers → log dirs → partitions, max
size per partition), the join of sizes onto partitions, the selection of partitions a plan
touches (e.g. those with a replica on a removed broker) and the per-broker aggregate load
(replicas, bytes, preferred leaderships) of every partition it does *not* touch (the
``baseline``). Only the touched partitions and one row per broker reach the driver.

Failure: a file Spark cannot read raises :class:`kafka_zk.errors.InvalidPayload` naming it.
"""

from __future__ import annotations

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

LOG_DIRS_SCHEMA = T.StructType([T.StructField("brokers", T.ArrayType(T.StructType([
    T.StructField("broker", T.LongType()),
    T.StructField("logDirs", T.ArrayType(T.StructType([
        T.StructField("logDir", T.StringType()), T.StructField("error", T.StringType()),
        T.StructField("partitions", T.ArrayType(T.StructType([
            T.StructField("partition", T.StringType()), T.StructField("size", T.LongType()),
            T.StructField("isFuture", T.BooleanType())])))])))])))])


def read_snapshot_df(spark: SparkSession, path: str) -> DataFrame:
    return spark.read.schema(SNAPSHOT_SCHEMA).json(path)


def read_sizes_df(spark: SparkSession, path: str) -> DataFrame:
    """(topic, partition, size): the largest non-future replica size, as kafka_zk.log_dirs does."""
    text = spark.read.text(path).filter(F.trim("value").startswith("{"))
    doc = text.select(F.from_json("value", LOG_DIRS_SCHEMA).alias("d"))
    dirs = doc.select(F.explode("d.brokers").alias("b")).select(F.explode("b.logDirs").alias("l"))
    parts = dirs.filter(F.col("l.error").isNull()).select(F.explode("l.partitions").alias("p"))
    parts = parts.filter(~F.coalesce(F.col("p.isFuture"), F.lit(False)))
    name = F.col("p.partition")
    pid = F.regexp_extract(name, r"-([0-9]+)$", 1)
    return (parts.select(F.regexp_replace(name, r"-[0-9]+$", "").alias("topic"),
                         pid.cast("long").alias("partition"), F.col("p.size").alias("size"))
            .groupBy("topic", "partition").agg(F.max("size").alias("size")))


@dataclass(frozen=True)
class SparkInput:
    """What the driver-side kernel gets: a snapshot slice, its sizes, the rest as a baseline."""

    snapshot: ClusterSnapshot
    sizes: Mapping[TopicPartition, int] | None
    baseline: Mapping[int, BrokerLoad]
    partitions_total: int


def _head(df: DataFrame) -> tuple[dict, dict[int, Broker], dict[str, dict[str, str]], list]:
    rows = df.filter(F.col("kind") != "partition").collect()
    head = next((r for r in rows if r["kind"] == "cluster"), None)
    if head is None:
        raise InvalidPayload("snapshot file: no cluster line; pass a file written by kafka_zk.snapshot_file")
    brokers = {int(r["id"]): Broker(int(r["id"]), r["rack"], r["host"], int(r["port"] or -1),
                                    tuple(r["endpoints"] or ()), True) for r in rows if r["kind"] == "broker"}
    configs = {r["entity"]: dict(r["config"] or {}) for r in rows if r["kind"] == "broker_config"}
    topics = [r for r in rows if r["kind"] == "topic"]
    return head.asDict(recursive=True), brokers, configs, topics


def load_input(spark: SparkSession, snapshot_path: str, sizes_path: str | None,
               touched: str | None = None) -> SparkInput:
    """Read the files; bring to the driver the partitions matching SQL ``touched`` (all if None).

    Partitions not matching ``touched`` are aggregated per broker into the baseline.
    """
    df = read_snapshot_df(spark, snapshot_path)
    head, brokers, configs, topic_rows = _head(df)
    parts = df.filter(F.col("kind") == "partition").select(
        "topic", "partition", "replicas", "adding", "removing", "leader", "leader_epoch", "isr",
        "controller_epoch")
    sizes_df = read_sizes_df(spark, sizes_path) if sizes_path else None
    if sizes_df is not None:
        parts = parts.join(sizes_df, ["topic", "partition"], "left")
    else:
        parts = parts.withColumn("size", F.lit(None).cast("long"))
    parts = parts.withColumn("size", F.coalesce("size", F.lit(0)))
    flag = F.expr(touched) if touched else F.lit(True)
    parts = parts.withColumn("touched", flag).cache()  # parsed once, used by the three steps below
    exploded = parts.filter(~F.col("touched")).select(
        F.posexplode("replicas").alias("pos", "broker"), "size")
    agg = exploded.groupBy("broker").agg(F.count("*").alias("replicas"), F.sum("size").alias("bytes"),
                                         F.sum(F.when(F.col("pos") == 0, 1).otherwise(0)).alias("leaders"))
    baseline = {int(r["broker"]): BrokerLoad(int(r["replicas"]), int(r["bytes"] or 0), int(r["leaders"]))
                for r in agg.collect()}
    untouched = parts.filter(~F.col("touched")).count()
    rows = parts.filter(F.col("touched")).drop("touched").toLocalIterator(prefetchPartitions=True)
    by_topic: dict[str, dict[int, Partition]] = {r["topic"]: {} for r in topic_rows}
    touched_count = 0
    sizes: dict[TopicPartition, int] = {}
    for r in rows:
        t, p = r["topic"], int(r["partition"])
        touched_count += 1
        by_topic.setdefault(t, {})[p] = Partition(
            t, p, tuple(r["replicas"]), tuple(r["adding"] or ()), tuple(r["removing"] or ()),
            r["leader"], r["leader_epoch"], tuple(r["isr"] or ()), r["controller_epoch"])
        if r["size"]:
            sizes[TopicPartition(t, p)] = int(r["size"])
    parts.unpersist()
    topics = {r["topic"]: Topic(r["topic"], by_topic.get(r["topic"], {}), dict(r["config"] or {}),
                                r["topic_id"], bool(r["marked_for_deletion"]),
                                int(r["assignment_version"] or 1)) for r in topic_rows}
    re, pe = head.get("reassignment"), head.get("preferred_election")
    snapshot = ClusterSnapshot(
        brokers, topics, configs,
        None if re is None else ReassignmentRequest(tuple(
            ReassignmentEntry(e["topic"], int(e["partition"]), tuple(e["replicas"])) for e in re)),
        None if pe is None else PreferredElectionRequest(tuple(
            TopicPartition(e["topic"], int(e["partition"])) for e in pe)),
        frozenset(head.get("delete_markers") or ()), head.get("controller_id"),
        head.get("controller_epoch"), int(head.get("taken_at_ms") or 0))
    return SparkInput(snapshot, sizes if sizes_path else None, baseline, untouched + touched_count)


def overlaps(brokers: Iterable[int]) -> str:
    """SQL: the partition has a replica on one of ``brokers``."""
    ids = ",".join(str(int(b)) for b in brokers)
    return f"arrays_overlap(replicas, array({ids}))" if ids else "false"
