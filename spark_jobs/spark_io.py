"""Spark side of the plan job: read the snapshot and sizes files, aggregate, slice.

What runs in Spark (JVM, parallel, no Python per row): parsing the JSON-lines snapshot with a
fixed schema (or reading its Parquet variant), parsing the per-partition sizes
(``sizes.jsonl`` of :mod:`formats.sizes_file`, split across tasks like the snapshot), the join
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

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.plan_input import (HEAD_COLUMNS, PARTITION_COLUMNS, BaselineRow, PlanInput, arrow_columns,
                                   build_slice, plan_input)
from spark_jobs.selection import Selection

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

    A path ending in ``.parquet`` is the columnar variant of :mod:`formats.snapshot_file`
    (no JSON parsing at all); anything else is read as JSON lines.
    """
    reader = spark.read.schema(SNAPSHOT_SCHEMA)
    return reader.parquet(path) if path.endswith(".parquet") else reader.json(path)


def read_sizes_df(spark: SparkSession, path: str) -> DataFrame:
    """(topic, partition, size) of a ``sizes.jsonl`` (:mod:`formats.sizes_file`), split across tasks.

    Read with :data:`SIZES_SCHEMA` (no inference pass) in ``FAILFAST`` mode: a line that is not
    JSON, or holds a value of the wrong type, fails the job instead of becoming nulls. The driver
    has already checked the file (:mod:`spark_jobs.sizes_input`): one line per partition.
    """
    rows = spark.read.schema(SIZES_SCHEMA).option("mode", "FAILFAST").json(path)
    return rows.filter(F.col("kind").isNull()).select("topic", "partition", "size")


def load_input(spark: SparkSession, snapshot_path: str, sizes_path: str | None,
               selection: Selection = Selection.every()) -> PlanInput:
    """Read the files; bring to the driver the partitions ``selection`` names.

    ``sizes_path`` is a ``sizes.jsonl`` (raw kafka-log-dirs output is converted before, by
    :mod:`spark_jobs.sizes_input`). Partitions not selected are aggregated per broker
    into the baseline. Two Spark jobs, each one scan of the snapshot (no cache): (1) the
    non-partition lines and the touched partitions, collected as Arrow (only the columns the
    kernels use); (2) the per-broker aggregate of the untouched partitions, which returns one
    row per broker and runs while the driver builds the slice's Python objects from (1). Each
    joins the sizes as a broadcast (hash) join: the sizes are read in parallel and no side of the
    join is shuffled (one row of three fields per partition: ~100 MB for 10⁶ partitions).
    """
    df = read_snapshot_df(spark, snapshot_path)
    is_part = F.col("kind") == "partition"
    touched = selection.sql()
    flag = F.expr(touched) if touched else F.lit(True)
    sizes_df = F.broadcast(read_sizes_df(spark, sizes_path)) if sizes_path else None

    def with_size(parts: DataFrame) -> DataFrame:
        if sizes_df is None:
            return parts.withColumn("size", F.lit(0).cast("long"))
        joined = parts.join(sizes_df, ["topic", "partition"], "left")
        return joined.withColumn("size", F.coalesce("size", F.lit(0).cast("long")))

    wanted = df.filter(~is_part | flag).select("kind", *PARTITION_COLUMNS, *HEAD_COLUMNS)
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
        sliced = build_slice(arrow_columns(table))
        agg_rows = baseline_rows.result()
    baseline = [BaselineRow(None if r["broker"] is None else int(r["broker"]), int(r["replicas"]),
                            int(r["bytes"] or 0), int(r["leaders"]), int(r["parts"])) for r in agg_rows]
    return plan_input(sliced, baseline, sizes_path is not None)
