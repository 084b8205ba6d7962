"""The PySpark state-change log merge, for inputs too large to stream through one process.

Plain files are read in byte-range splits (an entry belongs to the split its first line starts
in; the last entry of a split keeps its stack-trace lines past the split's end), gzip files one
task each, all by :func:`formats.state_change_files.read_split`. Entries are parsed and
filtered by :mod:`formats.state_change_log`, sorted by ``(time, file index, byte
offset)`` (a total order: the same as the in-process merge), and streamed back to the driver
one sorted partition at a time into ONE file, written atomically (a temporary name in the
output's folder, renamed at the end). Counts for the warnings come back in accumulators.

Run as ``spark-submit spark_jobs/state_change_job.py --logs ... --output FILE`` or from the CLI
(``kafka-runbook state-change-logs --spark``). Input paths must be readable by the executors
(a shared file system on a real cluster); the output is written by the driver.

Failure: bad options or inputs raise :class:`kafka_zk.errors.InvalidInput` before Spark starts;
a file that turns out corrupt (a truncated gzip) fails the job, and no output file is left.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Iterator, Sequence

from formats.state_change_files import LogFile, find_logs, read_split
from formats.state_change_log import EntryFilter, MergeStats, ParseStats, format_entry, compile_filter

SPLIT_BYTES = 64 * 1024 ** 2
SORTED_PARTITION_BYTES = 256 * 1024 ** 2   # one sorted partition (one driver fetch) per this much input


def splits(logs: Sequence[LogFile], split_bytes: int = SPLIT_BYTES) -> list[tuple[LogFile, int, int | None]]:
    """Byte ranges to read: a gzip or small file whole, a large plain file in ``split_bytes``."""
    out: list[tuple[LogFile, int, int | None]] = []
    for log in logs:
        if log.gzipped or log.size <= split_bytes:
            out.append((log, 0, None))
            continue
        for start in range(0, log.size, split_bytes):
            end = start + split_bytes
            out.append((log, start, None if end >= log.size else end))
    return out


def _stats_param():
    from pyspark.accumulators import AccumulatorParam

    class DictSum(AccumulatorParam):
        def zero(self, value):
            return {}

        def addInPlace(self, a, b):
            for k, (orphans, entries) in b.items():
                o, e = a.get(k, (0, 0))
                a[k] = (o + orphans, e + entries)
            return a

    return DictSum()


def merge_with_spark(logs: Sequence[LogFile], flt: EntryFilter, output: str, prefix: bool = True,
                     master: str | None = None, split_bytes: int = SPLIT_BYTES,
                     sorted_partition_bytes: int = SORTED_PARTITION_BYTES, spark=None) -> MergeStats:
    """Merge ``logs`` into ``output`` on Spark; the same bytes as the in-process merge."""
    if spark is None:
        # local: starts pyspark only when Spark merges
        from spark_jobs.plan_job import spark_session

        spark = spark_session(master)
    sc = spark.sparkContext
    counts = sc.accumulator({}, _stats_param())
    labels = {log.index: log.path for log in logs}
    work = splits(logs, split_bytes)

    def parse(item: tuple[LogFile, int, int | None]) -> Iterator[tuple[tuple[str, int, int], str]]:
        log, start, end = item
        stats = ParseStats()
        for entry in read_split(log, start, end, stats):
            if flt.accepts(entry):
                yield entry.key, format_entry(entry, labels[entry.file_index] if prefix else None)
        counts.add({log.path: (stats.orphan_lines, stats.entries)})

    total = sum(log.size for log in logs)
    tasks = max(1, min(len(work), sc.defaultParallelism * 4))
    sorted_parts = max(1, min(tasks, -(-total // sorted_partition_bytes)))
    rdd = sc.parallelize(work, tasks).flatMap(parse)
    if sorted_parts > 1:
        from pyspark import StorageLevel

        # kept once: sortByKey's sampling pass and the sort read the same parsed entries (and the
        # accumulators count each split once)
        rdd = rdd.persist(StorageLevel.MEMORY_AND_DISK)
    ordered = rdd.sortByKey(numPartitions=sorted_parts)
    out_dir = os.path.dirname(os.path.abspath(output))
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".state-change-", suffix=".tmp")
    written = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            for _key, text in ordered.toLocalIterator():
                out.write(text)
                out.write("\n")
                written += 1
        os.replace(tmp, output)
    finally:
        rdd.unpersist()
        if os.path.exists(tmp):
            os.unlink(tmp)
    stats = MergeStats(files=[log.path for log in logs], written=written)
    for log in logs:
        orphans, entries = counts.value.get(log.path, (0, 0))
        stats.per_file[log.path] = ParseStats(orphan_lines=orphans, entries=entries)
    return stats


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Merge state-change logs by time on Spark")
    p.add_argument("--logs")
    p.add_argument("--logs-regex")
    p.add_argument("--topic")
    p.add_argument("--partitions")
    p.add_argument("--start-time")
    p.add_argument("--end-time")
    p.add_argument("--output", required=True)
    p.add_argument("--no-prefix", action="store_true")
    p.add_argument("--master", default=None)
    args = p.parse_args(argv)
    flt = compile_filter(args.topic, args.partitions, args.start_time, args.end_time)
    logs = find_logs(args.logs, args.logs_regex)
    stats = merge_with_spark(logs, flt, args.output, prefix=not args.no_prefix, master=args.master)
    for line in stats.warnings():
        print(line, file=sys.stderr)
    print(f"merged {stats.written} of {stats.entries} entries from {len(logs)} file(s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
