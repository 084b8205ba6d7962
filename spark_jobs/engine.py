"""Which engine reads the plan job's input: the driver (pyarrow, no JVM) or Spark.

Both produce the same kernel input (:mod:`spark_jobs.plan_input`), so the choice changes time
and memory, never the plan. ``--engine auto`` (the default) reads in the driver when all hold:

* no Spark is named: no ``--remote`` (Spark Connect), no ``--master`` other than ``local``/
  ``local[N]``, and the job was not launched by ``spark-submit`` (whose JVM already runs on the
  master the connection names);
* the snapshot file is at most ``--driver-max-snapshot-bytes`` (default
  :data:`DRIVER_MAX_SNAPSHOT_BYTES`) — or there is no file to read: ``plan --zookeeper`` holds
  the snapshot it read as objects already, and builds the kernel input from them
  (:mod:`spark_jobs.direct_input`), so the threshold (the memory of a pyarrow read) does not apply.

The default threshold is measured, not guessed: ``bench/bench_plan_engines.py`` plans the same
decommission both ways on growing clusters; BENCHMARKS.md ("Plan engines") has the figures and
the reasoning for the value. ``--engine driver`` or ``--engine spark`` forces one.

Failure: none (an unreadable snapshot is reported by the reader that opens it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

ENGINES = ("auto", "driver", "spark")

#: Snapshots up to this size (bytes of the JSON-lines file) are read in the driver by default.
#: Measured (BENCHMARKS.md, "Plan engines"): the driver is faster than local Spark at every size
#: up to 1M partitions (0.88 s vs 10.8 s at 20k; 32 s vs 44 s at 1M), so time never picks local
#: Spark; memory does. A 1M-partition decommission in the driver peaked at 1.2 GB for a 172 MB
#: snapshot (~7 bytes per snapshot byte); 400 MB (~2.3M partitions) keeps the driver near 2.8 GB,
#: what the local Spark session's 3 GB heap would take, and Spark's executors stream beyond that.
DRIVER_MAX_SNAPSHOT_BYTES = 400_000_000


@dataclass(frozen=True)
class EngineChoice:
    """The engine and why, as the job's summary reports it."""

    engine: str          # "driver" or "spark"
    reason: str


def _local(master: str | None) -> bool:
    return master is None or master == "local" or master.startswith("local[")


def choose_engine(requested: str, snapshot_path: str, master: str | None = None, remote: str | None = None,
                  max_snapshot_bytes: int = DRIVER_MAX_SNAPSHOT_BYTES, have_session: bool = False,
                  in_memory: bool = False) -> EngineChoice:
    """The engine for a job asked to use ``requested`` (one of :data:`ENGINES`). ``in_memory``: the
    snapshot is already objects in this process (``plan --zookeeper``), so no file size applies."""
    if requested == "driver":
        return EngineChoice("driver", "--engine driver")
    if requested == "spark":
        return EngineChoice("spark", "--engine spark")
    if have_session:
        return EngineChoice("spark", "a Spark session was handed to the job")
    if remote:
        return EngineChoice("spark", f"Spark Connect {remote}")
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        return EngineChoice("spark", "launched by spark-submit")
    if not _local(master or os.environ.get("SPARK_MASTER")):
        return EngineChoice("spark", f"Spark master {master or os.environ.get('SPARK_MASTER')}")
    if in_memory:
        return EngineChoice("driver", "read from ZooKeeper into this process, no Spark cluster named")
    try:
        size = os.path.getsize(snapshot_path)
    except OSError:
        size = 0            # the reader reports the missing file
    if size > max_snapshot_bytes:
        return EngineChoice("spark", f"snapshot of {size} bytes > {max_snapshot_bytes} (--driver-max-snapshot-bytes)")
    return EngineChoice("driver", f"snapshot of {size} bytes ≤ {max_snapshot_bytes}, no Spark cluster named")
