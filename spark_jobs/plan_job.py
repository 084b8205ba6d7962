"""The plan job: snapshot (+ sizes) → plan → waves → validated artifacts.

Run as ``python spark_jobs/plan_job.py --snapshot F --op decommission --brokers 3,4 [--sizes F]
[--throttle N] [--max-moves-per-broker N] --out DIR [--seed S] [--engine auto|driver|spark]
[--master M | --remote sc://host:port]`` (or ``python -m spark_jobs.plan_job``, or under
``spark-submit``: same code; nothing assumes local mode: inputs are read by the engine and the
artifacts are written by the driver).

Who reads the input (:mod:`spark_jobs.engine`, docs/planning-engines.md): the driver itself
with pyarrow and no JVM (:mod:`spark_jobs.driver_io`) for snapshots up to a measured size when no
Spark is named, else Spark — a local session started here, spark-submit's, or a standing Spark
Connect session (``--remote``) — which parses the snapshot (JSON lines, or its Parquet variant)
and the sizes, joins them (broadcast), selects the partitions the operation touches and
aggregates the load of all others per broker (:mod:`spark_jobs.spark_io`: two Spark jobs; the
touched rows come back as Arrow). Both end in the same kernel input
(:mod:`spark_jobs.plan_input`), so the artifacts are byte-identical either way. ``--sizes``
takes either form, told by content (:mod:`spark_jobs.sizes_input`): a ``sizes.jsonl``
(:mod:`formats.sizes_file`, what the snapshot step writes), checked by the driver, or raw
``kafka-log-dirs.sh --describe`` output (one JSON document that cannot be split across tasks),
which the driver converts into ``<out>/sizes.jsonl``; with Spark in a child process while the
session starts. The placement itself is a sequential
greedy (each choice depends on the loads left by the previous one), so it runs in the driver in
pure Python (:mod:`planning.kernels`), on the touched partitions only — for a decommission
that is the partitions with a replica on a removed broker. Validation, wave packing and the
artifacts are also driver-side. Operations that may move any partition (add-brokers,
move-topics, change-rf, ...) bring the partitions of the topics concerned to the driver.

Failure: bad input raises a :class:`kafka_zk.errors.KafkaZkError` subclass (exit 1, one
line on stderr, nothing written); an invalid plan raises :class:`PlanInvalid` (nothing written).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, Mapping

if __package__ in (None, ""):  # run as a file by spark-submit: make the repo importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafka_zk.codecs import PartitionState, TopicPartition
from spark_jobs.argv import ArgvParser
from kafka_zk.errors import InvalidInput, KafkaZkError
from kafka_zk.limits import ADMIN_BATCH_BYTES
from kafka_zk.model import ClusterSnapshot
from planning.plan_folder.write import remove_move_files, write_plan_artifacts, write_plan_files, write_wave_files
from kafka_zk.snapshot import with_states
from kafka_zk.validation import parse_broker_ids, parse_throttle
from spark_jobs import forked_call, sizes_input
from spark_jobs.direct_input import InputLayout, input_from_snapshot
from spark_jobs.engine import DRIVER_MAX_SNAPSHOT_BYTES, ENGINES, EngineChoice, choose_engine
from planning.kernels.capacity import plan_disk
from planning.kernels.decommission import with_leaders
from planning.kernels.loads import cluster_loads, rack_map
from planning.kernels.wave_shape import waves_shaped_by
from planning.kernels.waves import WaveLimits, pack_waves
from spark_jobs.operations import OPERATIONS, capacity_of, run_kernel, selection
from spark_jobs.summary import build_summary


#: returns the touched partitions' states (``None``: no state znode), waiting for them if need be
StatesLater = Callable[[], Mapping[TopicPartition, PartitionState | None]]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = ArgvParser(prog="plan_job", description=__doc__.splitlines()[0])
    p.add_argument("--snapshot", required=True, help="snapshot file (formats.snapshot_file format)")
    p.add_argument("--op", required=True, choices=sorted(OPERATIONS))
    p.add_argument("--brokers", default="", help="broker ids: removed (decommission), replaced (replace), new (add-brokers), "
                   "target set (move-topics)")
    p.add_argument("--replace-with", default="", help="replace: the new brokers, paired in order with --brokers "
                   "(--brokers 4 --replace-with 7: replace 4 with 7)")
    p.add_argument("--topics", default="", help="comma-separated topic names (change-rf, move-topics, "
                   "election, delete-topics)")
    p.add_argument("--topic-regex", default=None, help="delete-topics: topics matching this regex")
    p.add_argument("--replication-factor", type=int, default=None, help="change-rf: the new RF")
    p.add_argument("--reassignment-json-file", default=None, help="reassign-json: the user's JSON; rollback: the "
                   "assignment to restore, in Kafka's format")
    p.add_argument("--rollback-from", default=None, help="rollback: the plan/ folder of the run to undo")
    p.add_argument("--sizes", default=None, help="`kafka-log-dirs.sh --describe` output, or a sizes.jsonl "
                   "(formats.sizes_file)")
    p.add_argument("--capacity", default=None, help="broker disk capacity: Cruise Control's capacity JSON or "
                   '{"brokers": {"<id>": <bytes>}} (kafka_zk.capacity); plans then keep every broker under '
                   "--disk-threshold-pct of it")
    p.add_argument("--disk-threshold-pct", type=float, default=None,
                   help="most a broker's disk may be filled at any step, percent (default: the capacity "
                        "file's, else 85)")
    p.add_argument("--allow-extra-moves", action="store_true",
                   help="decommission with --capacity: when least movement would overfill a broker, move other "
                        "replicas off it to make room (rack rule kept); reads every partition")
    p.add_argument("--max-replicas-moved", type=int, default=None,
                   help="rebalance: move budget, new replicas at most (default: no cap)")
    p.add_argument("--max-bytes-moved", type=int, default=None,
                   help="rebalance: move budget, bytes copied at most (default: no cap)")
    p.add_argument("--target-replica-spread", type=int, default=1,
                   help="rebalance: stop once replica counts differ by at most this much")
    p.add_argument("--target-bytes-spread", type=float, default=0.10,
                   help="rebalance: stop once (max - min) / mean of bytes per broker is at most this")
    p.add_argument("--target-leader-spread", type=int, default=1,
                   help="rebalance: preferred-leader counts differ by at most this much")
    p.add_argument("--throttle", default=None, help="replication throttle, bytes/s (kafka_zk.validation.parse_throttle)")
    p.add_argument("--max-moves-per-broker", type=int, default=None,
                   help="at most this many moves per broker in one wave (default: no cap; waves sized by bytes "
                        "and the predicted time)")
    p.add_argument("--max-wave-bytes", type=int, default=None)
    p.add_argument("--max-znode-bytes", type=int, default=ADMIN_BATCH_BYTES)
    p.add_argument("--batch-size", type=int, default=None, help="election/delete-topics batch size")
    p.add_argument("--out", required=True, help="output folder for the artifacts")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--master", default=None, help="Spark master (default: spark-submit's, else local[*])")
    p.add_argument("--remote", default=None, help="Spark Connect server, sc://host:port: plan on a standing "
                   "Spark session instead of starting a JVM")
    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="who reads the snapshot and sizes: the driver (pyarrow, no JVM), Spark, or auto "
                        "(the driver for snapshots up to --driver-max-snapshot-bytes when no Spark cluster "
                        "or Spark Connect server is named)")
    p.add_argument("--driver-max-snapshot-bytes", type=int, default=DRIVER_MAX_SNAPSHOT_BYTES,
                   help="--engine auto: largest snapshot file read in the driver (default: measured, "
                        "see BENCHMARKS.md)")
    p.add_argument("--refusal-file", default=None,
                   help="on a refused plan, also write the one-line reason here (the Airflow plan step reads it)")
    return p.parse_args(argv)


# A plan job is a short, small local job: the JVM's start and warm-up are a large part of it.
LOCAL_JAVA_OPTIONS = "-XX:+UseSerialGC"
LOCAL_DRIVER_MEMORY = "3g"
SESSION_CONFIG = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",        # the shuffles carry one row per broker
    "spark.sql.adaptive.enabled": "false",      # nothing to re-plan; saves a planning round per job
}


def spark_session(master: str | None, remote: str | None = None):
    """The session: a Spark Connect session on ``remote`` (sc://host:port) if given, else
    ``master`` if given, else spark-submit's, else ``local[*]``.

    When this process starts the JVM itself (no spark-submit, no Spark Connect), it also passes
    JVM flags suited to a short job (:data:`LOCAL_JAVA_OPTIONS`), a heap of
    :data:`LOCAL_DRIVER_MEMORY` and, in local mode, a driver bound to loopback; under
    spark-submit the JVM already runs and spark-submit's own options apply instead.
    """
    from pyspark.sql import SparkSession

    if remote:
        if not remote.startswith("sc://"):
            raise InvalidInput(f"--remote {remote}: give a Spark Connect address, sc://host:port")
        # a standing server: its own settings rule; this client only opens a session there
        return SparkSession.builder.remote(remote).getOrCreate()
    builder = SparkSession.builder.appName("kafka-runbooks-plan")
    launching = "PYSPARK_GATEWAY_PORT" not in os.environ
    if master:
        builder = builder.master(master)
    elif launching and "SPARK_MASTER" not in os.environ:
        builder = builder.master("local[*]")
    for key, value in SESSION_CONFIG.items():
        builder = builder.config(key, value)
    if launching and (master or "local").startswith("local"):
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    if launching:
        builder = builder.config("spark.driver.extraJavaOptions", LOCAL_JAVA_OPTIONS)
        # the touched rows come back to the driver as Arrow: ~300k partitions of 10⁶ in a decommission
        builder = builder.config("spark.driver.memory", LOCAL_DRIVER_MEMORY)
    return builder.getOrCreate()


def _sizes_worker(workers: int = 1) -> ProcessPoolExecutor:
    """``workers`` child processes, one for :func:`spark_jobs.sizes_input.prepare` (forked where
    fork is safe: at this point the process has no threads and no JVM connection; with fork
    every worker is started at the first submit)."""
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method))


def engine_of(args: argparse.Namespace, spark=None, in_memory: bool = False) -> EngineChoice:
    """Who reads this job's input (:mod:`spark_jobs.engine`); ``in_memory``: the caller holds the
    snapshot as objects (:func:`execute`'s ``snapshot``)."""
    return choose_engine(args.engine, args.snapshot, args.master, args.remote, args.driver_max_snapshot_bytes,
                         have_session=spark is not None, in_memory=in_memory)


def execute(args: argparse.Namespace, spark=None, sizes: sizes_input.SizesInput | None = None,
            states: StatesLater | None = None, timings: Mapping[str, float] | None = None,
            snapshot: ClusterSnapshot | None = None, layout: InputLayout | None = None) -> dict[str, Any]:
    """Plan: in the driver (no JVM) or with Spark, as :func:`engine_of` chooses.

    With Spark: :func:`run` in ``spark``, or in a session started here (and stopped after) while
    the sizes are prepared in a child process (:func:`spark_jobs.sizes_input.prepare`): telling,
    checking or converting the sizes file then overlaps the JVM's start on another core, and
    the raw output's text and objects never live in the driver. ``sizes``: already prepared by
    the caller (the CLI prepares them while it reads ZooKeeper). ``states``, ``timings``,
    ``snapshot``, ``layout``: see :func:`run`; ``snapshot`` is used when the engine is the driver
    (:func:`engine_of` with ``in_memory``), else Spark reads ``args.snapshot``.
    """
    capacity_of(args)               # a bad capacity file is refused before Spark starts
    choice = engine_of(args, spark, in_memory=snapshot is not None)
    if choice.engine == "driver":
        return run(None, args, sizes=sizes, engine=choice, states=states, timings=timings, snapshot=snapshot,
                   layout=layout)
    if spark is not None:
        return run(spark, args, sizes=sizes, engine=choice, states=states, timings=timings)
    if not args.sizes or sizes is not None:
        t0 = time.monotonic()
        session = spark_session(args.master, args.remote)
        try:
            return run(session, args, time.monotonic() - t0, sizes or sizes_input.NO_SIZES, choice, states,
                       timings)
        finally:
            session.stop()      # on Spark Connect: this client's session only
    with _sizes_worker() as pool:
        pending = pool.submit(sizes_input.prepare, args.sizes, args.out)
        t0 = time.monotonic()
        try:
            session = spark_session(args.master, args.remote)
        except BaseException:
            if pending.exception() is None:
                sizes_input.finish(pending.result(), succeeded=False)
            raise
        try:
            return run(session, args, time.monotonic() - t0, pending.result(), choice, states, timings)
        finally:
            session.stop()      # on Spark Connect: this client's session only


def run(spark, args: argparse.Namespace, spark_start_s: float | None = None,
        sizes: sizes_input.SizesInput | None = None, engine: EngineChoice | None = None,
        states: StatesLater | None = None, timings: Mapping[str, float] | None = None,
        snapshot: ClusterSnapshot | None = None, layout: InputLayout | None = None) -> dict[str, Any]:
    """Plan with an existing session (``spark`` None: read in the driver); write artifacts; return
    the summary (with plan_hash).

    ``snapshot``: the snapshot ``args.snapshot`` would hold, already objects in this process
    (``kafka-runbook plan --zookeeper``); the driver builds the kernel input from it
    (:mod:`spark_jobs.direct_input`, phase ``driver_input``) and reads no file. Ignored with Spark.
    ``layout``: :func:`spark_jobs.direct_input.input_layout` of ``snapshot``, when the caller built
    it while it waited for the sizes.

    ``states``: when the snapshot file holds assignments only (``kafka-runbook plan --zookeeper``
    reads partition states while the input is loaded), a call that returns the states of the
    partitions the operation touches, waited for once the input is loaded and merged into them
    before the kernel runs; the kernel gets the same input as from a snapshot with every state.
    A decommission (:func:`_states_after_kernel`) takes them after its kernel instead, and only
    for the moves' copy-from leaders (:func:`planning.kernels.decommission.with_leaders`): the
    same plan, planned while the states are still being read.
    ``timings``: phases the caller measured (its ZooKeeper reads), reported first in ``timings_s``.

    ``sizes`` is :func:`spark_jobs.sizes_input.prepare` of ``--sizes`` when the caller made it
    (else made here); a conversion it staged is kept as ``<out>/sizes.jsonl`` with the plan, or
    removed when anything fails. ``spark_start_s`` (how long the session took to start, when the
    caller started it) and the driver's sizes time are reported with the other phase timings
    in ``summary.json``.
    """

    if args.throttle is not None:
        args.throttle = parse_throttle(args.throttle, "--throttle")
    limits = WaveLimits(args.max_moves_per_broker, args.max_wave_bytes, args.max_znode_bytes, args.throttle)
    try:
        limits.check()
        sizes = sizes or sizes_input.prepare(args.sizes, args.out, keep_columns=spark is None)
    except BaseException:
        if sizes is not None:
            sizes_input.finish(sizes, succeeded=False)
        raise
    succeeded = False
    try:
        wall: dict[str, float] = {}
        cpu: dict[str, float] = {}      # this process's CPU (all its threads; not the forked children)
        mark = [time.monotonic(), time.process_time()]

        def phase(name: str) -> None:
            now, used = time.monotonic(), time.process_time()
            wall[name], cpu[name] = now - mark[0], used - mark[1]
            mark[:] = [now, used]

        direct = spark is None and snapshot is not None
        if direct:
            data = input_from_snapshot(snapshot, sizes.columns, selection(args), layout)
        elif spark is None:
            # local: pyarrow (and the pandas it loads) only when a file is read
            from spark_jobs.driver_io import load_input_in_driver

            data = load_input_in_driver(args.snapshot, sizes.columns, selection(args))
        else:
            # local: the engine chosen decides (pyspark only on the Spark path)
            from spark_jobs.spark_io import load_input

            data = load_input(spark, args.snapshot, sizes.path, selection(args))
        phase("input")
        if states is not None and _states_after_kernel(args) and _all_registered(args, data):
            # a decommission uses a state only for the broker a move copies from: planned while
            # the states are still being read, their leaders applied after (decommission.with_leaders)
            plan = run_kernel(args, data)
            phase("kernel_and_validate")
            plan = with_leaders(plan, states())
            phase("states_wait")
        else:
            if states is not None:
                data = dataclasses.replace(data, snapshot=with_states(data.snapshot, states()))
                phase("states_wait")
            plan = run_kernel(args, data)
            phase("kernel_and_validate")
        packed = waves = pack_waves(plan.moves, limits)
        ids = sorted(set(data.snapshot.brokers) | set(data.baseline or {}))
        before = cluster_loads(data.snapshot.partitions(), ids, data.sizes, data.baseline)
        waves, disk = plan_disk(before.bytes, ids, sorted(plan.removed), rack_map(data.snapshot.brokers), waves,
                                capacity_of(args), bool(data.sizes), limits)
        final, beside = waves, write_beside(len(plan.moves))
        # beside: two children (the plan files with the hash, the wave files), the summary here
        moving = [forked_call.start(lambda: write_plan_files(args.out, plan, final), fork=beside),
                  forked_call.start(lambda: write_wave_files(args.out, plan, final, args.throttle), fork=beside)]
        try:
            summary = _summary(data, plan, waves, packed, disk, limits, before)
        except BaseException:
            if beside:                      # the children's files go with the failed plan
                for child in moving:
                    child.discard()
                remove_move_files(args.out)
            raise
        if engine is not None:
            summary["engine"] = {"engine": engine.engine, "reason": engine.reason}
        summary["timings_s"] = {**(timings or {}), **({} if spark_start_s is None else {"spark_start": round(spark_start_s, 3)}),
                                **({"sizes_driver": round(sizes.seconds, 3)} if sizes.path else {}),
                                ("spark_read_aggregate" if spark is not None else
                                 "driver_input" if direct else "driver_read_aggregate"): round(wall["input"], 3),
                                **({} if states is None else {"states_wait": round(wall["states_wait"], 3)}),
                                "kernel_and_validate": round(wall["kernel_and_validate"], 3)}
        phase("waves_summary")
        summary["timings_s"]["waves_summary"] = round(wall["waves_summary"], 3)
        summary["cpu_s"] = {k: round(cpu[k], 3) for k in ("input", "states_wait", "kernel_and_validate",
                                                          "waves_summary") if k in cpu}
        digest = write_plan_artifacts(args.out, plan, waves, summary, args.throttle,
                                      move_files=lambda: [child.wait() for child in moving][0])
        summary["plan_hash"] = digest
        succeeded = True
    finally:
        sizes_input.finish(sizes, succeeded)
    return summary


#: from this many moves the move files may be written in forked children beside the summary
BESIDE_MIN_MOVES = 50_000


def write_beside(moves: int) -> bool:
    """Whether the move files (plan, rollback, waves, throttles: ~2.8 s of CPU at 200k moves) are
    written in two forked children while this process builds the summary: for a large plan, when the
    machine has a core to spare — the 1-minute load average (this process included) below the
    processors this process may run on. On a busy machine the child only takes the core this
    process needs (at load 5 the 1M plan took 45 s beside, 39 s in-process; BENCHMARKS.md)."""
    if moves < BESIDE_MIN_MOVES or not hasattr(os, "getloadavg"):
        return False
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores > 1 and os.getloadavg()[0] < cores


def _summary(data, plan, waves, packed, disk, limits: WaveLimits, before) -> dict[str, Any]:
    summary = build_summary(data.snapshot, plan, waves, limits, data.sizes, data.baseline, data.partitions_total,
                            before)
    summary["disk"] = disk
    summary["waves_shaped_by"] = waves_shaped_by(packed, waves, limits)
    return summary


def _all_registered(args: argparse.Namespace, data) -> bool:
    """Every broker to remove is registered: with a dead one the kernel needs the ISRs first (a
    partition with no live in-sync replica cannot be moved: :mod:`planning.dead_brokers`)."""
    return set(parse_broker_ids(args.brokers, "--brokers")) <= set(data.snapshot.brokers)


def _states_after_kernel(args: argparse.Namespace) -> bool:
    """Whether this job's kernel can run before the partition states arrive: a decommission
    (without extra moves, which may move any partition) uses them only for each move's
    copy-from leader, applied after it (:func:`planning.kernels.decommission.with_leaders`)."""
    return args.op == "decommission" and not getattr(args, "allow_extra_moves", False)  # not replace: it reads ISRs


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        summary = execute(args)
    except KafkaZkError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        if args.refusal_file:
            with open(args.refusal_file, "w", encoding="utf-8") as f:
                f.write(f"{exc}\n")
        return 1
    print(json.dumps({k: summary[k] for k in ("operation", "moves", "replica_moves", "waves",
                                              "predicted_seconds", "plan_hash")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
