"""One rolling_restart campaign run: the real ``rolling_restart`` DAG run under one injected fault, then
the invariants read back with plain kazoo and the emulator's record.

**What a run exercises.** The real DAG file, run by Airflow's ``dag.test()`` on SQLite
(:func:`cli.local_run.run_dag`): plan, approval answered by a second person
(``campaign-approver``), the roll (every broker of the cluster, one at a time, the controller last;
the action ``kafka-runbook sim fault restart {broker} STOP_S START_S`` run by Airflow's
SubprocessHook, served by the emulator's command queue on a thread), the final report and notify,
against the emulator on a real ZooKeeper at ``speed`` simulated seconds per wall second.

**Faults** (:mod:`tests.campaign.roll_scenario`) land on the roll's broker at ``fault_position``:

* ``zk_outage_6`` / ``zk_outage_30`` — once that broker deregistered for its restart (its new process
  starts 60 simulated seconds later, 3 s at 20x), the run's own ZooKeeper server (a private one, on
  its own data dir) is stopped for 6 or 30 s and started again on the same port and data;
* ``task_killed`` — the DAG runs in a child process (its own process group, as a worker pod); once
  that broker's action has started (``kill_at`` = ``action``) or it deregistered (``down``), the whole
  group is SIGKILLed; then the roll task is cleared (the run again with the same run id, ``plan`` and
  ``approve`` marked success: what clearing ``roll`` in the UI runs) and must finish;
* ``broker_not_back`` — that broker's action only stops it (``shutdown-broker``); the roll must stop
  at its registration gate, named; the runner then plays the operator (starts the broker) and clears
  the roll task, which must finish without restarting it again.

**Judge** (:func:`judge`, invariants always): every broker of the plan started exactly once (the
emulator's record of process starts), no partition offline in any sample of an independent reader
(but one whose leader's session expired in a ZooKeeper outage, by the emulator's record: ZooKeeper's
rule, not the roll's doing; noted), no admin node left, the replica orders as before; then the end state the fault calls for
(:data:`tests.campaign.roll_scenario.EXPECTED`): success with every preferred leader leading; or a
stop whose batch, report and notification name the broker and the gate, then success.

Failure: a cluster the emulator cannot start raises its error; everything the run does is recorded
in the :class:`~tests.campaign.runner.RunOutcome`, never raised.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

from kazoo.client import KazooClient

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_sim.control import CommandQueue
from kafka_sim.zookeeper_server import EmbeddedZooKeeper
from tests.campaign import invariants as inv
from tests.campaign.roll_scenario import EXPECTED, RollScenario, draw
from tests.campaign.runner import RunOutcome, _plain, _wait_connected, run_chroot
from tests.campaign.runner import run_seeds as campaign_seeds

DAG_ID = "rolling_restart"
REPO = Path(__file__).resolve().parents[2]
OUTAGE_START_S = 60.0          # simulated seconds from the stop to the new process's registration (faulted broker)
REGISTER_TIMEOUT_S = 20        # wall seconds: the roll's registration gate (broker_not_back stops there)
PRODUCE_RATE = 256 * 1024
CHILD = """
import json, os, sys
from datetime import datetime
from cli.local_run import configure_local_airflow, run_dag
configure_local_airflow(os.environ["KR_TEST_AIRFLOW_HOME"])
run_dag("rolling_restart", json.loads(sys.argv[1]), when=datetime.fromisoformat(sys.argv[2]), answer="Approve",
        approver="campaign-approver")
"""


def repro(seed: int, fault: str | None = None) -> str:
    forced = f" --fault {fault}" if fault else ""
    return f"PYTHONPATH=. python bench/bench_fault_campaign.py --runbook {DAG_ID} --seeds {seed}{forced}"


def process_starts(cluster: EmulatedCluster) -> dict[int, int]:
    """How often each broker's process was started (the emulator's record)."""
    out: dict[int, int] = {}
    for e in cluster.history():
        if e.kind == "broker_started" and e.broker is not None:
            out[e.broker] = out.get(e.broker, 0) + 1
    return out


def _czxid(zk: KazooClient, broker: int) -> int | None:
    try:
        stat = zk.exists(f"/brokers/ids/{broker}")
    except Exception:  # noqa: BLE001 - a read cut by an outage: unknown
        return -1
    return None if stat is None else stat.czxid


class OfflineSampler(threading.Thread):
    """Reads every partition state with plain kazoo; keeps those seen without a live leader (outages skipped)."""

    def __init__(self, zk: KazooClient) -> None:
        super().__init__(daemon=True, name="offline-sampler")
        self.zk = zk
        self.offline: dict[str, int] = {}     # what was seen offline -> its leader (not registered)
        self.samples = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                live = {int(b) for b in self.zk.get_children("/brokers/ids")}
                for (topic, p) in inv.assignment(self.zk):
                    state = inv.read(self.zk, f"/brokers/topics/{topic}/partitions/{p}/state")
                    if state and (state["leader"] == -1 or state["leader"] not in live):
                        # a leader's session gone is seen a moment before the controller's new state: judge twice
                        time.sleep(0.3)
                        again = inv.read(self.zk, f"/brokers/topics/{topic}/partitions/{p}/state")
                        live = {int(b) for b in self.zk.get_children("/brokers/ids")}
                        if again and (again["leader"] == -1 or again["leader"] not in live):
                            self.offline[f"{topic}-{p}: leader {again['leader']}, ISR {again['isr']}"] = again["leader"]
                self.samples += 1
            except Exception:  # noqa: BLE001 - ZooKeeper down (an outage): nothing to sample
                pass
            self.stopping.wait(0.05)


class RollFault(threading.Thread):
    """Waits for the target broker's moment, injects the fault (see module docstring)."""

    def __init__(self, sc: RollScenario, target: int, zk: KazooClient, server: EmbeddedZooKeeper | None,
                 run_root: Path, kill_at: str) -> None:
        super().__init__(daemon=True, name="roll-fault")
        self.sc, self.target, self.zk, self.server, self.run_root, self.kill_at = sc, target, zk, server, run_root, kill_at
        self.child: subprocess.Popen | None = None
        self.before = _czxid(zk, target)
        self.ended = threading.Event()
        self.injected = False
        self.note = ""
        self.error: str | None = None

    def run(self) -> None:
        try:
            self._run()
        except Exception as exc:  # noqa: BLE001 - recorded in the outcome
            self.error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"

    def _down(self) -> bool:
        while not self.ended.is_set():
            if _czxid(self.zk, self.target) is None:
                return True
            time.sleep(0.01)
        return False

    def _action_started(self) -> bool:
        while not self.ended.is_set():
            for path in self.run_root.glob(f"{DAG_ID}/*/restart_progress.json"):
                try:
                    batches = json.loads(path.read_text())["batches"]
                except (OSError, ValueError, KeyError):
                    continue
                if any(str(self.target) in b.get("acted", {}) for b in batches):
                    return True
            time.sleep(0.01)
        return False

    def _run(self) -> None:
        fault = self.sc.fault
        if fault in ("zk_outage_6", "zk_outage_30"):
            if not self._down():
                self.note = "the run ended before the broker went down"
                return
            seconds = 6.0 if fault == "zk_outage_6" else 30.0
            self.server.stop()
            self.injected, self.note = True, f"ZooKeeper down {seconds:.0f}s while broker {self.target} restarted"
            time.sleep(seconds)           # the outage itself: the fault's length
            self.server.start()
        elif fault == "task_killed":
            landed = self._action_started() if self.kill_at == "action" else self._down()
            if not landed or self.child is None or self.child.poll() is not None:
                self.note = "the run ended before the kill"
                return
            os.killpg(self.child.pid, signal.SIGKILL)
            self.injected = True
            moment = (f"as broker {self.target}'s action started" if self.kill_at == "action"
                      else f"while broker {self.target} was down")
            self.note = f"roll killed (SIGKILL, process group) {moment}"
        elif fault == "broker_not_back":
            self.injected, self.note = True, f"broker {self.target}'s action stops it for good"


def _action(connect: str, target: int, sc: RollScenario) -> str:
    sim = f"{sys.executable} -m cli.main sim fault --zookeeper {connect} --timeout 60"
    start_s = OUTAGE_START_S if sc.fault.startswith("zk_outage") else 6.9
    restart = f"{sim} restart {{broker}} 16 {start_s:g}"
    if sc.fault == "broker_not_back":
        return f"if [ {{broker}} = {target} ]; then {sim} shutdown-broker {{broker}}; else {sim} restart {{broker}}; fi"
    if sc.fault.startswith("zk_outage"):
        return f"if [ {{broker}} = {target} ]; then {restart}; else {sim} restart {{broker}}; fi"
    return restart


def _serve_commands(cluster: EmulatedCluster, stop: threading.Event) -> threading.Thread:
    queue = CommandQueue(cluster.tool_client)

    def serve() -> None:
        while not stop.is_set():
            try:
                queue.run_pending(cluster, 0.2)
            except Exception:  # noqa: BLE001 - ZooKeeper down (an outage): serve again once it answers
                time.sleep(0.2)
    t = threading.Thread(target=serve, daemon=True, name="sim-commands")
    t.start()
    return t


def run_one(sc: RollScenario, zk_host: str, zk_port: int, workdir: Path) -> RunOutcome:
    """Run ``sc`` against the ZooKeeper at ``zk_host:zk_port`` (a fresh chroot) in ``workdir``."""
    from kafka_zk.snapshot import read_snapshot
    from cli.local_run import run_dag
    from procedures.restart.plan import plan_roll

    started = time.monotonic()
    outcome = RunOutcome(sc.seed, sc.fault, EXPECTED[sc.fault], "error", repro=repro(sc.seed))
    server, zk_host, zk_port, chroot = run_chroot(sc.fault, sc.seed, zk_host, zk_port, workdir, "roll")
    base = f"{zk_host}:{zk_port}"
    connect = base + chroot
    cluster = EmulatedCluster(connect, ClusterSpec(brokers=sc.brokers, speed=sc.speed, seed=sc.seed,
                                                   produce_rate=PRODUCE_RATE)).start()
    zk = _plain(connect)
    stop_serving = threading.Event()
    sampler = fault = child = None
    try:
        cluster.create_topics({t: (a, sc.sizes[t], {"min.insync.replicas": str(sc.min_isr[t])} if t in sc.min_isr
                                   else None) for t, a in sc.topics.items()})
        _serve_commands(cluster, stop_serving)
        before = inv.assignment(zk)
        starts = process_starts(cluster)
        order = list(plan_roll(read_snapshot(zk, with_configs=False), "all", [], "broker", "x {broker}").brokers)
        target = order[sc.fault_position % len(order)]
        conn_id = f"roll_campaign_{sc.seed}_{chroot.strip('/').replace('-', '_')}"
        os.environ[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps({
            "conn_type": "kafka_zookeeper", "host": base,
            "extra": {"chroot": chroot, "connect_timeout": 10, "session_timeout": 10}})
        run_root = workdir / "runs"
        conf = {"zk_conn_id": conn_id, "run_root": str(run_root), "action": _action(connect, target, sc),
                "poll_interval_s": 0.2, "register_timeout_s": REGISTER_TIMEOUT_S, "stop_gate_timeout_s": 120}
        when = datetime.now(timezone.utc).replace(microsecond=0)
        kill_at = "action" if sc.seed % 2 else "down"
        sampler = OfflineSampler(zk)
        fault = RollFault(sc, target, zk, server, run_root, kill_at)
        sampler.start()
        first = None
        if sc.fault == "task_killed":
            child = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(conf), when.isoformat()], cwd=REPO,
                                     env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
            fault.child = child
            fault.start()
            child.wait(timeout=600)
            fault.ended.set()
            fault.join(30)
            result = run_dag(DAG_ID, conf, when=when, mark_success="^(plan|approve)$")   # the roll task cleared
        else:
            fault.start()
            result = run_dag(DAG_ID, conf, answer="Approve", approver="campaign-approver", when=when)
            if sc.fault == "broker_not_back":      # what the stop left, before the resume rewrites it
                first = {"task_states": result.task_states, "batches": _batches(result.run_folder),
                         "report": _text(result.run_folder, "final_report.md"),
                         "note": _text(result.run_folder, "notifications.jsonl")}
                cluster.restart_broker(target)                 # the operator starts it by hand
                result = run_dag(DAG_ID, conf, when=when, mark_success="^(plan|approve)$")
        fault.ended.set()
        fault.join(60)
        sampler.stopping.set()
        sampler.join(30)
        outcome.state, outcome.task_states = result.state, result.task_states
        outcome.run_folder = str(result.run_folder) if result.run_folder else None
        outcome.fault_injected, outcome.fault_note = fault.injected, fault.note
        if fault.error:
            outcome.fault_note += f" [injector error: {fault.error}]"
        outcome.samples = sampler.samples
        _wait_connected(zk)          # after a ZooKeeper outage the harness's own session may be new
        judge(outcome, sc, zk, cluster, result, first, before, starts, order, target, sampler.offline)
    except Exception as exc:  # noqa: BLE001 - an error of the harness is an outcome too
        outcome.observed = "error"
        outcome.end_state_problems.append(f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}")
    finally:
        if fault is not None:
            fault.ended.set()
        if sampler is not None:
            sampler.stopping.set()
        if child is not None and child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(timeout=30)
        stop_serving.set()
        zk.stop()
        zk.close()
        cluster.stop()
        if server is not None:
            server.stop()
        outcome.wall_s = time.monotonic() - started
    return outcome


def _batches(folder: Path | None) -> list[dict]:
    path = folder / "restart_progress.json" if folder else None
    return json.loads(path.read_text())["batches"] if path and path.is_file() else []


def _text(folder: Path | None, name: str) -> str:
    path = folder / name if folder else None
    return path.read_text() if path and path.is_file() else ""


def judge(outcome: RunOutcome, sc: RollScenario, zk: KazooClient, cluster: EmulatedCluster, result, first: dict | None,
          before: dict, starts: dict[int, int], order: list[int], target: int, offline: dict[str, int]) -> None:
    """Invariants (always) and the end state the fault calls for."""
    after = process_starts(cluster)
    restarted = {b: after.get(b, 0) - starts.get(b, 0) for b in sorted(sc.brokers)}
    wrong = {b: n for b, n in restarted.items() if n != (1 if b in order else 0)}
    if wrong:
        outcome.invariant_problems.append(f"brokers not restarted exactly once (starts seen): {wrong}")
    # a leader whose session expired in a ZooKeeper outage (the emulator's record) is deregistered until it
    # registers again: ZooKeeper's rule, not the roll's doing (seed 1017: broker 2 in a 30 s outage)
    expired = {e.broker for e in cluster.history() if e.kind == "session_expired"} \
        if sc.fault.startswith("zk_outage") else set()
    outcome.invariant_problems += [f"offline in a sample: {p}" for p, leader in sorted(offline.items())
                                   if leader not in expired][:10]
    excused = sorted(p for p, leader in offline.items() if leader in expired)
    if excused:
        outcome.fault_note += f" [offline while its leader's session had expired in the outage: {', '.join(excused[:4])}]"
    for node in ("/admin/reassign_partitions", "/admin/preferred_replica_election"):
        if zk.exists(node) is not None:
            outcome.invariant_problems.append(f"{node} still present after the run")
    if inv.assignment(zk) != before:
        changed = {tp: r for tp, r in inv.assignment(zk).items() if before.get(tp) != r}
        outcome.invariant_problems.append(f"replica orders not restored: {dict(list(changed.items())[:5])}")
    if first is not None:            # broker_not_back: the stop must name the broker and the gate
        batches = first["batches"]
        stopped = next((b for b in batches if b["brokers"] == [str(target)]), {})
        later = batches[batches.index(stopped) + 1:] if stopped in batches else []
        report, note = first["report"], first["note"]
        problems = []
        if first["task_states"].get("roll") != "failed":
            problems.append(f"the roll did not stop: {first['task_states']}")
        if (stopped.get("state"), stopped.get("stopped_at")) != ("failed", "registration"):
            problems.append(f"broker {target}'s batch not failed at the registration gate: "
                            f"{stopped.get('state')}/{stopped.get('stopped_at')}")
        if f"broker {target} did not come back: stopped at the registration gate" not in stopped.get("message", ""):
            problems.append(f"the batch's message does not name broker {target} and the gate: {stopped.get('message')}")
        if any(b["state"] != "pending" for b in later):
            problems.append(f"a batch after the stop was started: {[(b['brokers'], b['state']) for b in later]}")
        for name, text in (("report", report), ("notification", note)):
            if f"broker {target} did not come back: stopped at the registration gate" not in text:
                problems.append(f"the {name} does not name broker {target} and the registration gate")
        outcome.end_state_problems += problems
    batches = _batches(result.run_folder)
    if result.state == "success" and batches and all(b["state"] == "done" for b in batches):
        outcome.observed = "stopped_then_resumed" if first is not None else "success"
        leaders = {tp: inv.read(zk, f"/brokers/topics/{tp[0]}/partitions/{tp[1]}/state")["leader"] for tp in before}
        away = {tp: (before[tp][0], leader) for tp, leader in leaders.items() if leader != before[tp][0]}
        if away:
            outcome.end_state_problems.append(
                f"preferred leaders not back (preferred, leader): {dict(list(away.items())[:5])}")
    else:
        failed = sorted(t for t, s in result.task_states.items() if s == "failed")
        stops = [f"{b['brokers']}@{b.get('stopped_at')}: {b.get('message', '')[:160]}"
                 for b in batches if b.get("message")]
        outcome.observed = f"failed ({', '.join(failed) or result.state})"
        outcome.end_state_problems += stops[:3]


def run_seeds(seeds: list[int], zk_host: str, zk_port: int, workdir: Path, fault: str | None = None,
              log=print) -> list[RunOutcome]:
    """Run every roll seed in turn (``fault`` forces the kind); each outcome is logged as it ends."""
    return campaign_seeds(seeds, zk_host, zk_port, workdir, fault, log, draw=draw, run=run_one, repro=repro,
                          prefix="roll-seed")
