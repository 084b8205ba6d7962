"""``kafka-runbook plan … --zookeeper``: read what the plan needs from ZooKeeper, overlapped with the rest.

Kafka's own ``kafka-reassign-partitions.sh --generate`` reads the broker registrations and one
znode per topic (the assignment). A plan needs more only where it uses it: the partition
states (leader, ISR) of the partitions the operation touches (:meth:`Selection.picks`: for a
decommission, those with a replica on a removed broker; for an election, every partition) —
the kernel uses a touched partition's leader (the broker a new replica copies from; an
election's choice) and ISR (change-rf keeps in-sync replicas). Untouched partitions count only
in the per-broker baseline, by their replica lists. So, in this order:

1. the sizes (``--sizes``: raw ``kafka-log-dirs.sh --describe`` output parsed, or a
   ``sizes.jsonl`` checked) start in a forked child process: they need nothing from ZooKeeper;
   the child hands them back once checked and writes the staged ``sizes.jsonl`` after
   (:func:`spark_jobs.sizes_input.start`); a second child is forked with it (both before any
   thread starts) for step 3;
2. the assignments: live brokers, topic znodes, configs, admin nodes, and no partition state
   (:func:`kafka_zk.snapshot.read_snapshot` with ``states=False``);
3. a thread reads the touched partitions' states while the job builds its kernel input
   straight from the assignments in memory (:mod:`spark_jobs.direct_input`: no file written
   and read back, no pyarrow); the job waits for the states only when its kernel is about to
   run, and merges them into the touched partitions (:func:`spark_jobs.plan_job.run`), so the
   kernel's input is the one a full snapshot gives — a decommission, whose kernel uses a state
   only for each move's copy-from leader, even runs its kernel first and applies the leaders
   after (:func:`planning.kernels.decommission.with_leaders`: same plan). From :data:`STATES_IN_CHILD_MIN` touched
   partitions the reading itself (kazoo's request and reply handling, the decoding: ~4 s of
   CPU for 263,615 states) is done by the second child on a session of its own, so it does not
   share this process's GIL with the input build (at 10⁶ partitions it took 10 s in a thread
   beside it; BENCHMARKS.md); the thread only waits and takes the states back as rows;
4. the same thread then writes the assignments with those states as ``<out>/snapshot.jsonl``
   (once, while the kernel runs; when the states came from the child, a child forked as the
   kernel takes them writes it instead, :mod:`spark_jobs.forked_call`), so ``--snapshot
   <out>/snapshot.jsonl`` plans the same plan again. Untouched partitions have no leader or
   ISR in it (``null`` / ``[]``).

With Spark (``--engine spark``, a master, a Connect server, an embedding session) the job
reads a file: the assignments are written first as ``snapshot.jsonl``, read by Spark while
the states are read, and rewritten with the states as in 4.

Failure: as :func:`spark_jobs.plan_job.execute`; ZooKeeper not answering raises
:class:`kafka_zk.errors.ZkUnavailable`. A staged sizes conversion is removed on any failure.
"""

from __future__ import annotations

import argparse
import gc
import os
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from kafka_zk.codecs import PartitionState, TopicPartition

#: touched partitions from which their states are read in a child process (below, in a thread:
#: the child's session and the hand-over cost more than the GIL they free)
STATES_IN_CHILD_MIN = 20_000
from kafka_zk.validation import parse_broker_ids
from spark_jobs import forked_call, plan_job, sizes_input
from spark_jobs.operations import selection


def _rewrite(assignments, states: Future, path: str) -> str:
    """The assignments with the states read, written beside ``path``; returns where."""
    return _rewrite_now(assignments, states.result(), path)


def _rewrite_now(assignments, states: dict, path: str) -> str:
    """:func:`_rewrite` with the states in hand."""
    # local: a subcommand loads only what it runs (CLI start-up)
    from kafka_zk.snapshot import with_states
    from formats.snapshot_file import write_snapshot

    staged = f"{path}.with-states"
    write_snapshot(with_states(assignments, states), staged)
    return staged


def _states_in_child(connect_string: str, touched: dict[str, list[int]]) -> tuple[list[tuple | None], float]:
    """Run in the worker process: ``touched`` (partition ids by topic, in order) read on a session
    of its own and decoded; one row per partition in that order (a state's fields, ``None``: no
    state znode), and the seconds it took."""
    import time

    from kafka_zk.connect import close, connect
    from kafka_zk.snapshot import read_partition_states

    t = time.monotonic()
    tps = [TopicPartition(name, pid) for name, pids in touched.items() for pid in pids]
    client = connect(connect_string)
    try:
        got = read_partition_states(client, tps)
    finally:
        close(client)
    rows = [None if s is None else (s.leader, s.leader_epoch, s.isr, s.controller_epoch, s.version,
                                    s.leader_recovery_state) for s in map(got.__getitem__, tps)]
    return rows, time.monotonic() - t


def plan_from_zookeeper(connect_string: str, job_args: argparse.Namespace, spark=None,
                        retiring_file: str | None = None) -> dict[str, Any]:
    """Read, overlapped as the module says, and plan; returns the job's summary (its
    ``timings_s`` start with the reads: ``zk_assignments``, ``zk_states``). With ``retiring_file``,
    this cluster's retiring brokers are left out of the assignments (:func:`_without_retiring`).

    No cyclic GC while the plan runs: reading a million partitions allocates ~5M long-lived
    objects with no cycle among them, and every full collection that allocation (and then the
    kernel's) triggers re-traverses them all — at 1M the read took 3.6 s without, 6-11 s with
    (BENCHMARKS.md). Reference counting still frees everything else. Collection resumes once the
    plan's objects are gone (resumed while they were still held, its first full collection took
    0.6 s at 1M)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _plan_from_zookeeper(connect_string, job_args, spark, retiring_file)
    finally:
        if collecting:
            gc.enable()


def _plan_from_zookeeper(connect_string: str, job_args: argparse.Namespace, spark,
                         retiring_file: str | None) -> dict[str, Any]:
    import time

    # local: a subcommand loads only what it runs (CLI start-up)
    from kafka_zk.connect import close, connect
    from kafka_zk.snapshot import read_partition_states, read_snapshot
    from formats.snapshot_file import write_snapshot
    from spark_jobs.direct_input import input_layout

    path = job_args.snapshot
    wanted = selection(job_args)
    # forked before any thread starts: the sizes child (it hands the sizes back before it writes
    # the staged sizes.jsonl), and a worker for the states (step 3)
    sizes_pending = sizes_input.start(job_args.sizes, job_args.out) if job_args.sizes else None
    workers = plan_job._sizes_worker(1)
    workers.submit(os.getpid)
    succeeded = False
    try:
        t0 = time.monotonic()
        client = connect(connect_string)
        try:
            assignments = read_snapshot(client, states=False)
            excluded: tuple = ()
            if retiring_file:
                assignments, excluded = _without_retiring(client, assignments, retiring_file, job_args)
            t_assign = time.monotonic() - t0
            if wanted.brokers is not None:      # one frozenset test per partition, no call (10⁶ of them)
                off = frozenset(wanted.brokers).isdisjoint
                by_topic = {name: [pid for pid, p in sorted(assignments.topics[name].partitions.items())
                                   if not off(p.replicas)] for name in sorted(assignments.topics)}
            else:
                picks = wanted.picker()
                by_topic = {name: [pid for pid, p in sorted(assignments.topics[name].partitions.items())
                                   if picks(name, p.replicas)] for name in sorted(assignments.topics)}
            touched = [TopicPartition(name, pid) for name, pids in by_topic.items() for pid in pids]
            timings: dict[str, float] = {"zk_assignments": round(t_assign, 3)}
            in_child = workers.submit(_states_in_child, connect_string, {n: p for n, p in by_topic.items() if p}) \
                if len(touched) >= STATES_IN_CHILD_MIN else None
            if in_child is None:
                workers.shutdown(wait=False)      # the worker leaves now, not at the end (0.6 s at 10⁶)

            def states() -> dict[TopicPartition, PartitionState | None]:
                t = time.monotonic()
                if in_child is None:
                    got = read_partition_states(client, touched)
                else:
                    rows, _ = in_child.result()
                    workers.shutdown(wait=False)  # its one task done: it leaves beside the kernel
                    got = dict(zip(touched, [None if r is None else PartitionState(*r) for r in rows]))
                timings["zk_states"] = round(time.monotonic() - t, 3)
                return got

            direct = plan_job.engine_of(job_args, spark, in_memory=True).engine == "driver"
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="plan-states") as pool:
                read = pool.submit(states)
                if not direct:
                    write_snapshot(assignments, path)       # Spark reads the file
                # a large read's snapshot is recorded by a child forked when the kernel takes the states
                # (spark_jobs/forked_call.py), not by this thread beside the kernel: ~1.6 s of CPU at 10⁶
                forked = in_child is not None
                recording: list[forked_call.Pending] = []

                def states_then_record() -> dict[TopicPartition, PartitionState | None]:
                    got = read.result()
                    if not recording:
                        recording.append(forked_call.start(lambda: _rewrite_now(assignments, got, path)))
                    return got

                recorded = None if forked else pool.submit(_rewrite, assignments, read, path)
                try:
                    # what the input needs of the assignments alone, built while the sizes child parses
                    layout = input_layout(assignments, wanted) if direct and sizes_pending is not None else None
                    prepared = sizes_pending.result() if sizes_pending is not None else None
                    summary = plan_job.execute(job_args, spark, sizes=prepared,
                                               states=states_then_record if forked else read.result,
                                               timings=timings, snapshot=assignments if direct else None,
                                               layout=layout)
                    succeeded = True
                finally:
                    if read.exception() is None:
                        staged = None
                        try:
                            if recorded is not None:
                                staged = recorded.result()
                            else:       # the kernel never took the states (a failure before it): here
                                staged = recording[0].wait() if recording else \
                                    _rewrite_now(assignments, read.result(), path)
                        except Exception:   # noqa: BLE001 - as before: a snapshot not recorded, the plan's own outcome stands
                            staged = None
                        if staged:
                            os.replace(staged, path)
        finally:
            close(client)
    finally:
        if sizes_pending is not None and not succeeded and sizes_pending.exception() is None:
            sizes_input.finish(sizes_pending.result(), succeeded=False)   # a staged conversion goes
        workers.shutdown()
    if excluded:
        summary["excluded_brokers"] = [e.text() for e in excluded]
    return summary


def _without_retiring(client, assignments, retiring_file: str, job_args: argparse.Namespace):
    """The assignments minus the cluster's retiring brokers (those a decommission is removing stay),
    as the runbooks' plan step does (procedures/plan/retiring.py); refused when one still holds replicas."""
    # local: a subcommand loads only what it runs (CLI start-up)
    from kafka_zk.retiring import RetiringFile, cluster_id, exclude_from_model, refuse_named

    cid = cluster_id(client)
    retiring = RetiringFile.load(retiring_file).of(cid) if cid is not None else {}
    if job_args.op in ("add-brokers", "move-topics"):           # destinations a person named
        refuse_named(parse_broker_ids(job_args.brokers, "--brokers"), retiring, "--brokers")
    removing = parse_broker_ids(job_args.brokers, "--brokers") if job_args.op in ("decommission", "replace") else []
    return exclude_from_model(assignments, retiring, removing)
