"""The plan job's input read in the driver (pyarrow, no JVM): what :mod:`spark_jobs.spark_io` does
in Spark, for the clusters where starting Spark costs more than the work.

Same inputs, same result: the snapshot (JSON lines, or its Parquet variant) is parsed by
pyarrow's multi-threaded JSON reader with the snapshot's fixed schema, the sizes (a
``sizes.jsonl`` already checked by :mod:`spark_jobs.sizes_input`, whose columns it hands over)
are joined on (topic, partition), the partitions the :class:`spark_jobs.selection.Selection`
names are brought out as Python objects and every other partition is aggregated per broker with
numpy (replicas, bytes, preferred leaderships). The columns then go through
:func:`spark_jobs.plan_input.plan_input` exactly as Spark's do, so the kernel input — and the
plan artifacts — are identical (``tests/spark_jobs/test_plan_engines.py``).

pyarrow's JSON reader has no map type, so the ``config`` objects (topic and broker-config lines,
a few per topic) are parsed with :mod:`json` in one pass over the lines, which skips partition
lines by their prefix.

Failure: a missing or unreadable file, or a line that is not a snapshot record, raises
:class:`kafka_zk.errors.InvalidPayload` naming the file and the fix; a snapshot without its
cluster line likewise (:func:`spark_jobs.plan_input.plan_input`).
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_zk.errors import InvalidPayload
from kafka_zk.log_dirs import PartitionSizes
from spark_jobs.plan_input import (HEAD_COLUMNS, PARTITION_COLUMNS, BaselineRow, PlanInput, arrow_columns,
                                   build_slice, plan_input)
from spark_jobs.selection import Selection

_INTS = pa.list_(pa.int64())
#: the snapshot's fields (formats.snapshot_file) but ``config``, which pyarrow's JSON reader cannot type
_JSON_SCHEMA = pa.schema([
    ("kind", pa.string()), ("version", pa.int64()), ("controller_id", pa.int64()),
    ("controller_epoch", pa.int64()), ("taken_at_ms", pa.int64()),
    ("reassignment", pa.list_(pa.struct([("topic", pa.string()), ("partition", pa.int64()), ("replicas", _INTS)]))),
    ("preferred_election", pa.list_(pa.struct([("topic", pa.string()), ("partition", pa.int64())]))),
    ("delete_markers", pa.list_(pa.string())), ("id", pa.int64()), ("rack", pa.string()),
    ("host", pa.string()), ("port", pa.int64()), ("endpoints", pa.list_(pa.string())),
    ("entity", pa.string()), ("topic", pa.string()), ("topic_id", pa.string()),
    ("marked_for_deletion", pa.bool_()), ("assignment_version", pa.int64()),
    ("partition", pa.int64()), ("replicas", _INTS), ("adding", _INTS), ("removing", _INTS),
    ("leader", pa.int64()), ("leader_epoch", pa.int64()), ("isr", _INTS)])
_CONFIG = pa.map_(pa.string(), pa.string())
_PARTITION_PREFIX = '{"kind":"partition"'
_BLOCK = 16 << 20       # pyarrow parses blocks of this many bytes in parallel


def _unreadable(path: str, why: str) -> InvalidPayload:
    return InvalidPayload(f"snapshot file {path}: {why}; take a new snapshot with `kafka-runbook plan ... "
                          "--zookeeper` (or the runbook's snapshot step) and plan from that file")


def _configs(path: str, rows: int) -> pa.Array:
    """The ``config`` column: one pass over the lines, JSON-decoding all but partition lines."""
    values: list = [None] * rows
    i = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith(_PARTITION_PREFIX):
                i += 1
                continue
            if not line.strip():
                continue
            if i >= rows:
                raise _unreadable(path, "it changed while it was read")
            config = json.loads(line).get("config")
            if config is not None:
                values[i] = list(config.items())
            i += 1
    if i != rows:
        raise _unreadable(path, "it changed while it was read")
    return pa.array(values, type=_CONFIG)


def read_snapshot_table(path: str) -> pa.Table:
    """Every record of the snapshot as one Arrow table (columns as in the Parquet variant)."""
    try:
        if path.endswith(".parquet"):
            import pyarrow.parquet as pq

            return pq.read_table(path)
        from pyarrow import json as pa_json

        table = pa_json.read_json(path, read_options=pa_json.ReadOptions(block_size=_BLOCK),
                                  parse_options=pa_json.ParseOptions(explicit_schema=_JSON_SCHEMA,
                                                                     unexpected_field_behavior="ignore"))
        return table.append_column("config", _configs(path, table.num_rows))
    except FileNotFoundError:
        raise _unreadable(path, "no such file") from None
    except OSError as exc:
        raise _unreadable(path, f"cannot read it ({exc.strerror or exc})") from None
    except (pa.ArrowInvalid, ValueError) as exc:
        raise _unreadable(path, f"not snapshot records ({str(exc).splitlines()[0][:160]})") from None


def _bool(array) -> np.ndarray:
    return pc.fill_null(array, False).to_numpy(zero_copy_only=False)


def _sizes_by_row(parts: pa.Table, sizes: PartitionSizes) -> np.ndarray:
    """Each partition row's size (0 where the sizes do not list it), in row order."""
    keyed = parts.select(["topic", "partition"]).append_column("_row", pa.array(np.arange(parts.num_rows)))
    given = pa.table({"topic": pa.array(sizes.topics, pa.string()),
                      "partition": pa.array(sizes.partitions, pa.int64()),
                      "size": pa.array(sizes.sizes, pa.int64())})
    joined = keyed.join(given, ["topic", "partition"], join_type="left outer")
    out = np.zeros(parts.num_rows, dtype=np.int64)
    rows = joined["_row"].to_numpy()
    out[rows] = pc.fill_null(joined["size"], 0).to_numpy(zero_copy_only=False)
    return out


def _baseline(replicas: pa.Array, sizes: np.ndarray) -> list[BaselineRow]:
    """Per broker: replicas, bytes and preferred leaderships over ``replicas`` (one list per partition)."""
    if isinstance(replicas, pa.ChunkedArray):
        replicas = replicas.combine_chunks()
    lengths = pc.fill_null(pc.list_value_length(replicas), 0).to_numpy(zero_copy_only=False)
    flat = pc.list_flatten(replicas).to_numpy(zero_copy_only=False).astype(np.int64)
    parents = pc.list_parent_indices(replicas).to_numpy(zero_copy_only=False)
    starts = np.cumsum(lengths) - lengths
    first = (np.arange(len(flat)) - starts[parents]) == 0
    ids, which = np.unique(flat, return_inverse=True)
    count = np.bincount(which, minlength=len(ids))
    leaders = np.bincount(which[first], minlength=len(ids))
    total = np.zeros(len(ids), dtype=np.int64)
    np.add.at(total, which, sizes[parents])
    rows = [BaselineRow(int(b), int(count[k]), int(total[k]), int(leaders[k]), int(leaders[k]))
            for k, b in enumerate(ids)]
    empty = int(np.count_nonzero(lengths == 0))
    if empty:
        rows.append(BaselineRow(None, 0, 0, 0, empty))
    return rows


def load_input_in_driver(snapshot_path: str, sizes: PartitionSizes | None,
                         selection: Selection = Selection.every()) -> PlanInput:
    """The kernel input for ``selection`` from the snapshot file and the checked ``sizes`` columns."""
    table = read_snapshot_table(snapshot_path)
    is_part = _bool(pc.equal(table["kind"], "partition"))
    chosen = selection.mask(table["topic"], table["replicas"]) & is_part
    part_rows = np.flatnonzero(is_part)
    size = np.zeros(table.num_rows, dtype=np.int64)
    if sizes is not None and len(part_rows):
        size[part_rows] = _sizes_by_row(table.take(pa.array(part_rows)), sizes)
    keep = ~is_part | chosen
    wanted = table.filter(pa.array(keep)).select(["kind", *PARTITION_COLUMNS, *HEAD_COLUMNS])
    head_or_size = pa.array(np.where(is_part, size, 0)[keep], pa.int64())
    if sizes is not None:       # header rows carry no size, as in Spark's union
        head_or_size = pc.if_else(pa.array(is_part[keep]), head_or_size, pa.scalar(None, pa.int64()))
    wanted = wanted.append_column("size", head_or_size)
    rest = is_part & ~chosen
    baseline = _baseline(table["replicas"].filter(pa.array(rest)), size[rest])
    return plan_input(build_slice(arrow_columns(wanted)), baseline, sizes is not None)
