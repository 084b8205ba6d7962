"""Benchmark: state-change log merge throughput, in process and on Spark (local mode).

Generates ``--gib`` GiB (default 1) of state-change logs in Kafka 2.4's line formats (the
emulator's own formatter, kafka_sim/state_change_log.py) from ``--brokers`` brokers, each with
a rotated gzip file and a live plain file, stack traces in about 1 entry in 200, then merges
them twice: in this process (the CLI's k-way streaming merge) and with the Spark job
(``--master``, default local[2]; the session start is timed apart). Prints lines/s and MB/s of
input for both, checks that both outputs have the same SHA-256 (byte for byte), prints the
input size at which Spark would catch up with the in-process merge on this machine, and the
load average before and after. With ``--kafka-merger CLASSPATH`` (a classpath holding Kafka
2.4.1's tools, e.g. ``kafka_2.12-2.4.1/libs/*``) it also runs Kafka 2.4.1's own ``kafka.tools.StateChangeLogMerger`` on the same
input (gzip files decompressed first, untimed: Kafka's tool reads plain files only) and prints
both tools' CPU seconds per GiB side by side (the JVM's user+sys, its start included). The
generated files are deleted at the end. Figures only.
Usage: ``python -m bench.bench_state_change_merge [--gib 1] [--brokers 8] [--dir /tmp/x]
[--skip-spark] [--kafka-merger CLASSPATH]``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import random
import resource
import shutil
import subprocess
import tempfile
import time

from kafka_zk.codecs import PartitionState, TopicPartition
from kafka_sim.state_change_log import StateChangeLog
from formats.state_change_files import find_logs, write_merged
from formats.state_change_log import compile_filter

START = 1714557600.0


class _Hashing:
    """A text sink that only hashes what it is given (so the in-process merge writes no disk)."""

    def __init__(self) -> None:
        self.h = hashlib.sha256()

    def write(self, text: str) -> int:
        self.h.update(text.encode("utf-8"))
        return len(text)


def generate(folder: str, brokers: int, target_bytes: int, seed: int = 1) -> tuple[int, int]:
    """Per broker: state-change.log.<hour>.gz (a fifth) + state-change.log; returns (bytes, lines)."""
    rng = random.Random(seed)
    log = StateChangeLog(folder, START, buffering=1 << 20)
    live = set(range(1, brokers + 1))
    now = 0.0
    lines = 0
    tps = [TopicPartition(f"topic-{t:03d}", p) for t in range(200) for p in range(12)]
    while True:
        log.flush()
        if sum(os.path.getsize(log.path(b)) for b in live if os.path.exists(log.path(b))) >= target_bytes:
            break
        for _ in range(2000):
            now += rng.random() * 0.05
            tp = rng.choice(tps)
            rs = tuple(rng.sample(sorted(live), 3))
            st = PartitionState(rs[0], rng.randrange(100), rs[:2], 3)
            ctrl = 1 + int(now // 3600) % brokers
            log.partition_changed(ctrl, 3, now, tp, PartitionState(rs[1], 0, rs, 3), st, 7, live)
            log.leader_and_isr_sent(ctrl, 3, now, tp, st, 7, rs, (), (), live)
            lines += 1 + 3 + 6
            if rng.random() < 0.005:
                b = rng.choice(rs)
                log.write(b, now, "ERROR", f"Broker id={b}", f"Error while processing LeaderAndIsr request "
                          f"correlationId 5 received from controller {ctrl} epoch 3 for partition {tp}")
                log._files[b].write("org.apache.kafka.common.errors.KafkaStorageException: disk error\n"
                                    "\tat kafka.cluster.Partition.makeLeader(Partition.scala:1)\n")  # a stack trace
                lines += 3
    log.close()
    total = 0
    for b in sorted(live):
        path = log.path(b)
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(size // 5)
            cut = head.rfind(b"\n[") + 1
            fh.seek(cut)
            rest = fh.read()
        with gzip.open(path + ".2024-05-01-10.gz", "wb", compresslevel=1) as gz:
            gz.write(head[:cut])
        with open(path, "wb") as fh:
            fh.write(rest)
        total += size
    return total, lines


def run_kafka_merger(classpath: str, logs: list, root: str) -> tuple[float, float, int]:
    """Kafka's StateChangeLogMerger on ``logs``: (wall s, CPU s of the JVM, lines it printed)."""
    inputs = []
    for log in logs:
        if not log.gzipped:
            inputs.append(log.path)
            continue
        plain = os.path.join(root, f"kafka-input-{log.index}.log")
        with gzip.open(log.path, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 22)
        inputs.append(plain)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    printed = 0
    with subprocess.Popen(["java", "-cp", classpath, "kafka.tools.StateChangeLogMerger", "--logs", ",".join(inputs)],
                          stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        while chunk := proc.stdout.read(1 << 20):
            printed += chunk.count(b"\n")
    if proc.returncode:
        raise SystemExit(f"Kafka's merger exited {proc.returncode}")
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, printed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--brokers", type=int, default=8)
    ap.add_argument("--dir", default=None, help="where to generate (deleted afterwards)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--skip-spark", action="store_true")
    ap.add_argument("--kafka-merger", metavar="CLASSPATH", help="also run Kafka 2.4.1's StateChangeLogMerger "
                    "(a classpath holding it, e.g. a Kafka 2.4.1 distribution's libs/*)")
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="bench-state-change-", dir=args.dir)
    try:
        print(f"load average before: {os.getloadavg()}")
        t0 = time.perf_counter()
        size, n_lines = generate(os.path.join(root, "logs"), args.brokers, int(args.gib * 1024 ** 3))
        print(f"generated {size / 1024 ** 2:,.0f} MiB (uncompressed) in {time.perf_counter() - t0:.1f}s")
        logs = find_logs(f"{root}/logs/broker-*/state-change.log*")
        on_disk = sum(log.size for log in logs)
        flt = compile_filter()
        sink = _Hashing()
        t0, c0 = time.perf_counter(), time.process_time()
        stats = write_merged(logs, flt, sink)
        local_s, local_cpu = time.perf_counter() - t0, time.process_time() - c0
        lines = stats.entries
        print(f"in-process: {stats.written:,} entries ({n_lines:,} lines) from {len(logs)} files "
              f"({on_disk / 1024 ** 2:,.0f} MiB on disk) in {local_s:.1f}s wall = {n_lines / local_s:,.0f} lines/s, "
              f"{lines / local_s:,.0f} entries/s, {size / 1024 ** 2 / local_s:.1f} MiB/s; CPU {local_cpu:.1f}s = "
              f"{n_lines / local_cpu:,.0f} lines per CPU-second")
        gib = size / 1024 ** 3
        print(f"in-process: {local_cpu / gib:.1f} CPU-seconds per GiB of input")
        if args.kafka_merger:
            k_wall, k_cpu, printed = run_kafka_merger(args.kafka_merger, logs, root)
            print(f"Kafka 2.4.1 StateChangeLogMerger (JVM): {k_wall:.1f}s wall, CPU {k_cpu:.1f}s (user+sys, "
                  f"JVM start included) = {k_cpu / gib:.1f} CPU-seconds per GiB, {n_lines / k_cpu:,.0f} lines "
                  f"per CPU-second; it printed {printed:,} lines (only lines with a [x,y] pair, no stack traces)")
            print(f"CPU per GiB, ours / Kafka's: {local_cpu / k_cpu:.2f}")
        if not args.skip_spark:
            from spark_jobs.plan_job import spark_session
            from spark_jobs.state_change_job import merge_with_spark

            t0 = time.perf_counter()
            spark = spark_session(args.master)
            spark.sparkContext.setLogLevel("ERROR")
            start_s = time.perf_counter() - t0
            out = os.path.join(root, "merged-spark.log")
            t0 = time.perf_counter()
            sstats = merge_with_spark(logs, flt, out, spark=spark)
            spark_s = time.perf_counter() - t0
            h = hashlib.sha256()
            with open(out, "rb") as fh:
                while chunk := fh.read(1 << 22):
                    h.update(chunk)
            same = h.hexdigest() == sink.h.hexdigest()
            print(f"spark ({args.master}): session start {start_s:.1f}s; merge {spark_s:.1f}s = "
                  f"{n_lines / spark_s:,.0f} lines/s, {sstats.written / spark_s:,.0f} entries/s, "
                  f"{size / 1024 ** 2 / spark_s:.1f} MiB/s; "
                  f"output identical to in-process: {same}")
            local_rate, spark_rate = size / local_s, size / spark_s
            if spark_rate > local_rate:
                cross = start_s * local_rate * spark_rate / (spark_rate - local_rate)
                print(f"Spark catches up above ~{cross / 1024 ** 3:.1f} GiB on this machine")
            else:
                print("Spark does not catch up with the in-process merge on this machine at any size")
            spark.stop()
        print(f"load average after: {os.getloadavg()}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
