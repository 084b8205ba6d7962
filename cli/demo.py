"""The main job: the decommission runbook end to end on an embedded ZooKeeper and the emulator.

``bash scripts/demo`` (or ``python -m cli.demo``) starts a private ZooKeeper on 127.0.0.1, an
emulated 6-broker / 3-rack Kafka 2.4 cluster with a few thousand partitions of skewed
(lognormal) sizes, and runs the real ``decommission_brokers`` DAG through Airflow's
``dag.test()`` on a private SQLite metadata DB, removing two brokers under a replication
throttle. The run is pre-approved because it is a demo (the DAG records the skip in its
``approval.json``); a production run waits for a human. At the end it reads the cluster back
with plain kazoo and prints the report's location and a summary: moves, bytes, simulated
duration of the waves vs the physical lower bound, replicas and leaders left on the removed
brokers, throttles left. Every process it started is stopped, including on Ctrl-C.
``--dead 5`` hard-kills broker 5 (SIGKILL, session closed) once the topics exist and the
controller has re-elected its leaderships, then decommissions it: a dead broker's replicas are
re-created from the surviving in-sync replicas.

Exit status: 0 when the run succeeded and the brokers are drained with no throttle left, else 1.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from kazoo.client import KazooClient

from kafka_sim.zookeeper_server import EmbeddedZooKeeper
from kafka_zk.validation import parse_broker_ids

REPO = Path(__file__).resolve().parent.parent
GiB = 1024 ** 3


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="scripts/demo", description=__doc__.splitlines()[0])
    p.add_argument("--brokers", type=int, default=6, help="emulated brokers (ids 0..n-1)")
    p.add_argument("--racks", type=int, default=3, help="racks (broker b is in rack b %% racks)")
    p.add_argument("--topics", type=int, default=40, help="topics to create")
    p.add_argument("--partitions", type=int, default=75, help="partitions per topic")
    p.add_argument("--replication-factor", type=int, default=3)
    p.add_argument("--mean-size", type=float, default=1.0, help="mean partition size in GiB (lognormal)")
    p.add_argument("--remove", default=None,
                   help="broker ids to decommission, comma-separated (default 4,5; with --dead: the dead brokers)")
    p.add_argument("--dead", default=None,
                   help="broker ids to kill (SIGKILL, session gone) before the run: their replicas are re-created "
                        "from the surviving in-sync replicas")
    p.add_argument("--throttle", type=int, default=100 * 1024 ** 2, help="replication throttle, bytes/s")
    p.add_argument("--max-moves-per-broker", type=int, default=250)
    p.add_argument("--speed", type=float, default=7200.0, help="simulated seconds per wall second")
    p.add_argument("--run-root", default=str(REPO / "runs"), help="where the run folder is kept")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--rehearse", choices=("auto", "on", "off"), default="on",
                   help="rehearse the plan on an emulated copy before the approval (the runbook's Param; the "
                        "demo shows it by default, though its 2,992 moves are above rehearse=auto's bound)")
    return p.parse_args(argv)


def _say(text: str) -> None:
    print(f"[demo] {text}", flush=True)


def _wave_sim_seconds(events, waves: list[dict]) -> list[float]:
    """Simulated duration of each wave: first reassignment start to last completion of its moves."""
    # local: a subcommand loads only what it runs (CLI start-up)
    from kafka_sim.timeline import wave_spans

    spans = wave_spans(events, [[(m["topic"], m["partition"]) for m in w["moves"]] for w in waves])
    return [s.seconds for s in spans if s is not None]


def run_total_seconds(events, waves: list[dict]) -> float | None:
    """The run's first write to last wave done as a real cluster would have it: the waves' spans in simulated
    seconds (the emulator's clock is sped up) plus the executor's waits around them in wall seconds (the
    executor and Airflow are real): wave 0 submitted → its first move, each wave's end → the next one's
    first move, the last wave's end → its ``done_at``. None when the history or waves.json lacks a time."""
    # local: a subcommand loads only what it runs (CLI start-up)
    from kafka_sim.timeline import wave_spans

    keys = [[(m["topic"], m["partition"]) for m in w["moves"]] for w in waves]
    sim, wall = wave_spans(events, keys), wave_spans(events, keys, wall=True)
    if not waves or any(s is None for s in sim + wall) or not waves[0].get("submitted_at") \
            or not waves[-1].get("done_at"):
        return None
    waits = (wall[0].start - float(waves[0]["submitted_at"])) + sum(b.start - a.end for a, b in zip(wall, wall[1:])) \
        + (float(waves[-1]["done_at"]) - wall[-1].end)
    return sum(s.seconds for s in sim) + max(0.0, waits)


def total_fidelity(rehearsed_total: float | None, run_total: float | None) -> str:
    """The rehearsal's headline total against the run's first write to last wave done."""
    if not rehearsed_total or not run_total:
        return "rehearsal vs run, first write to last wave done: not compared (a time is missing)"
    return (f"rehearsal vs run, first write to last wave done: {rehearsed_total / 3600:.3f} h rehearsed vs "
            f"{run_total / 3600:.3f} h run ({(rehearsed_total - run_total) / run_total:+.1%})")


def rehearsal_fidelity(rehearsed: list[dict], run_seconds: list[float]) -> str:
    """How the rehearsal's per-wave durations (rehearsal.json's waves) compare with the run's."""
    ours = [w["end_s"] - w["start_s"] for w in rehearsed if w.get("start_s") is not None and w.get("end_s") is not None]
    if not ours or len(ours) != len(run_seconds):
        return f"rehearsal vs run: {len(ours)} rehearsed wave(s) against {len(run_seconds)} run: not compared"
    gaps = [abs(a - b) / b for a, b in zip(ours, run_seconds) if b > 0]
    worst = max(range(len(gaps)), key=gaps.__getitem__)
    total = abs(sum(ours) - sum(run_seconds)) / sum(run_seconds)
    return (f"rehearsal vs run: per-wave durations within {gaps[worst]:.1%} (largest gap wave {worst}), "
            f"total within {total:.1%}")


def _final_state(zk: KazooClient, removed: set[int]) -> dict:
    replicas_left = leaders_left = 0
    for topic in zk.get_children("/brokers/topics"):
        doc = json.loads(zk.get(f"/brokers/topics/{topic}")[0])
        for p, replicas in doc["partitions"].items():
            replicas_left += sum(1 for r in replicas if r in removed)
            state_path = f"/brokers/topics/{topic}/partitions/{p}/state"
            if zk.exists(state_path):
                if json.loads(zk.get(state_path)[0])["leader"] in removed:
                    leaders_left += 1
    throttles = 0
    for etype in ("topics", "brokers"):
        if zk.exists(f"/config/{etype}") is None:
            continue
        for name in zk.get_children(f"/config/{etype}"):
            data = zk.get(f"/config/{etype}/{name}")[0]
            cfg = json.loads(data).get("config", {}) if data else {}
            throttles += sum(1 for k in cfg if "throttled" in k)
    return {"replicas_left": replicas_left, "leaders_left": leaders_left, "throttles_left": throttles,
            "reassignment_left": zk.exists("/admin/reassign_partitions") is not None}


def _kill(cluster, connect: str, dead: list[int]) -> None:
    """Kill ``dead`` (SIGKILL, session closed) and wait until the controller has seen it: no
    registration left and no partition led by a dead broker."""
    from kafka_zk.connect import close, connect as zk_connect
    from kafka_zk.snapshot import read_snapshot

    for b in dead:
        cluster.kill_broker(b)
    client = zk_connect(connect)
    try:
        def settled() -> bool:
            snap = read_snapshot(client, with_configs=False)
            if set(dead) & set(snap.brokers) or any(p.leader in dead for p in snap.partitions()):
                time.sleep(0.5)     # a whole snapshot per look: not 50 times a second
                return False
            return True
        if not cluster.wait_until(settled, timeout=120):
            raise SystemExit(f"[demo] brokers {dead} killed but the controller has not re-elected their "
                             "leaderships within 120 s")
        snap = read_snapshot(client, with_configs=False)
        held = sum(1 for p in snap.partitions() for r in p.replicas if r in dead)
        offline = sum(1 for p in snap.partitions() if p.leader is not None and p.leader < 0)
    finally:
        close(client)
    _say(f"killed broker(s) {dead} (SIGKILL): {held} replicas on them, {offline} partition(s) offline; "
         "the run re-creates them from the surviving in-sync replicas")


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    dead = parse_broker_ids(args.dead, "--dead") if args.dead else []
    removed = parse_broker_ids(args.remove or (",".join(map(str, dead)) if dead else "4,5"), "--remove")
    run_root = Path(args.run_root).resolve()
    run_root.mkdir(parents=True, exist_ok=True)
    airflow_home = Path(tempfile.mkdtemp(prefix="kr-demo-airflow-"))
    os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")

    # local: a subcommand loads only what it runs (CLI start-up)
    from kafka_sim.cluster import ClusterSpec, EmulatedCluster
    from kafka_sim.seed import broker_racks, partition_sizes, topic_layout
    from cli.demo_progress import ProgressPrinter
    from cli.local_run import configure_local_airflow, run_dag, set_connection

    zk_server = cluster = zk = None
    started = time.monotonic()
    try:
        zk_server = EmbeddedZooKeeper().start()
        connect = f"{zk_server.connect_string}/kafka"
        _say(f"embedded ZooKeeper on {zk_server.connect_string}, cluster chroot /kafka")
        zk = KazooClient(hosts=connect, timeout=10)
        root = KazooClient(hosts=zk_server.connect_string, timeout=10)
        root.start(timeout=10)
        root.ensure_path("/kafka")
        root.stop()
        root.close()

        racks = broker_racks(args.brokers, args.racks)
        cluster = EmulatedCluster(connect, ClusterSpec(brokers=racks, speed=args.speed, seed=args.seed)).start()
        layout = topic_layout(racks, args.topics, args.partitions, args.replication_factor, args.seed)
        sizes = partition_sizes(layout, "lognormal", args.mean_size * GiB, args.seed)
        cluster.create_topics({t: (layout[t], sizes[t], None) for t in layout})
        total = sum(len(v) for v in layout.values())
        total_bytes = sum(sum(v.values()) for v in sizes.values())
        _say(f"emulated Kafka 2.4 cluster: {args.brokers} brokers in {args.racks} racks, {args.topics} topics, "
             f"{total} partitions (RF {args.replication_factor}), {total_bytes / GiB:,.0f} GiB of leader data, "
             f"clock x{args.speed:g}")
        sizes_file = run_root / "demo-log-dirs.json"
        sizes_file.write_text(cluster.log_dirs_json(), encoding="utf-8")
        if dead:
            _kill(cluster, connect, dead)

        configure_local_airflow(airflow_home)
        set_connection("demo_kafka_zk", {"conn_type": "kafka_zookeeper", "host": zk_server.host,
                                         "port": zk_server.port, "extra": {"chroot": "/kafka"}})
        set_connection("demo_spark", {"conn_type": "spark", "host": "local[*]"})
        _say(f"running DAG decommission_brokers through Airflow (dag.test), removing brokers {removed} "
             f"at {args.throttle / 1024 ** 2:g} MiB/s")
        _say("approval: answered 'Approve' as demo-approver by the demo itself, through Airflow's "
             "human-in-the-loop API (recorded in approval.json). A real run waits for another person.")
        zk.start(timeout=10)
        printer = ProgressPrinter(run_root, "decommission_brokers", _say)   # a line per wave, not silence
        printer.start()
        result = run_dag("decommission_brokers", {
            "zk_conn_id": "demo_kafka_zk", "spark_conn_id": "demo_spark", "brokers_to_remove": removed,
            "throttle_bytes_per_sec": args.throttle, "max_moves_per_broker": args.max_moves_per_broker,
            "sizes_file": str(sizes_file), "dry_run": False,
            "run_root": str(run_root), "poll_interval_s": 0.5, "rehearse": args.rehearse},
            answer="Approve", approver="demo-approver")
        printer.stop()
        final = _final_state(zk, set(removed))
        folder = result.run_folder
        summary_file = folder / "plan" / "summary.json" if folder else None
        summary = json.loads(summary_file.read_text()) if summary_file and summary_file.is_file() else {}
        waves_file = folder / "waves.json" if folder else None
        waves = json.loads(waves_file.read_text())["waves"] if waves_file and waves_file.is_file() else []
        wave_times = _wave_sim_seconds(cluster.history(), waves)
        sim_total = sum(wave_times)
        lower = summary.get("lower_bound_seconds") or 0
        print()
        print(f"Run {result.run_id}: {result.state}")
        failed = sorted(t for t, s in result.task_states.items() if s not in ("success", "skipped"))
        if failed:
            print(f"  tasks not successful: {', '.join(failed)}")
        print(f"  report:             {folder / 'final_report.html' if folder else '(none)'}")
        print(f"  moves:              {summary.get('replica_moves', '?')} replicas "
              f"(lower bound {summary.get('replica_moves_lower_bound', '?')}), in {len(waves)} waves")
        print(f"  bytes moved:        {summary.get('bytes_moved', 0) / GiB:,.1f} GiB")
        if wave_times:
            ratio = f" = {sim_total / lower:.2f}x" if lower else ""
            print(f"  simulated duration: {sim_total / 3600:.2f} h of throttled copying (sum of wave makespans) vs "
                  f"physical lower bound {lower / 3600:.2f} h{ratio}; planner predicted "
                  f"{summary.get('predicted_seconds', 0) / 3600:.2f} h")
        rehearsal = folder / "rehearsal" / "rehearsal.json" if folder else None
        if rehearsal is not None and rehearsal.is_file():
            rehearsed = json.loads(rehearsal.read_text())
            print(f"  before approval:    {rehearsed['headline']} (rehearsal_report.md)")
            print(f"  {rehearsal_fidelity(rehearsed['waves'], wave_times)}")
            print(f"  {total_fidelity(rehearsed.get('elapsed_s'), run_total_seconds(cluster.history(), waves))}")
        from planning.dead_brokers import statement_lines   # local: only the summary needs it

        for line in statement_lines(summary, done=result.state == "success"):
            print(f"  {line}")
        print(f"  replicas left on brokers {removed}: {final['replicas_left']}; leaders left: {final['leaders_left']}")
        print(f"  throttles left: {final['throttles_left']}; reassignment znode left: "
              f"{'yes' if final['reassignment_left'] else 'no'}")
        print(f"  wall time: {time.monotonic() - started:.0f} s")
        ok = (result.state == "success" and final["replicas_left"] == 0 and final["leaders_left"] == 0
              and final["throttles_left"] == 0)
        return 0 if ok else 1
    finally:
        if zk is not None:
            zk.stop()
            zk.close()
        if cluster is not None:
            cluster.stop()
        if zk_server is not None:
            zk_server.stop()
        shutil.rmtree(airflow_home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
