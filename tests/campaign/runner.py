"""One campaign run: a real ``decommission_brokers`` DAG run under one injected fault, then the
invariants read back with plain kazoo.

**What a run exercises.** The real DAG file, run by Airflow's ``dag.test()`` on SQLite
(:func:`cli.local_run.run_dag`): every task of the runbook (snapshot, plan hand-over with
``plan_from``, plan report, approval answered by a second person (``campaign-approver``), guards, demotion, throttles,
the wave executor deferring on its trigger, final verification, the throttle teardown and its
janitor, election, drain check, report, notify), against the emulator on the test run's real
ZooKeeper, at ``speed`` simulated seconds per wall second. **What it does not.** The plan comes
from the planner's kernels in-process (:mod:`tests.dags.kernel_plan`: the same kernels the Spark
job calls, not Spark itself, which would cost a minute a run); the human approval page, a real
scheduler/triggerer (their races are pinned by ``tests/dags/test_real_airflow_race.py``) and a
worker process killed mid-wave (``test_task_killed_mid_wave_resumes_without_resubmitting_a_finished_wave``)
are not in the campaign.

**Faults** (drawn by :mod:`tests.campaign.scenario`) land while wave ``fault_wave`` is listed in
``/admin/reassign_partitions``, on the replica that wave adds to its largest partition. A
ZooKeeper outage stops the run's own ZooKeeper server (a private one, on its own data dir, so no
other run shares it) for 6 or 30 s and starts it again on the same port and data: every session,
the emulator's and the runbook's, resumes. ``verify_restart`` waits until every wave is done (the
run's ``waves.json``), then kills a broker holding a moved replica and restarts it after
``fault_length`` s, while ``final_verify`` checks. For the
dead ends (``kill_for_good``, ``fail_append``, ``topic_deleted``) the runner then plays the
operator: once the run's teardown has said it keeps the throttles (``throttle_janitor.json``) or
the run has ended, it applies the fix (restart the broker; raise ``max.message.bytes`` back; move
the controller so the deleted topic's entry leaves the reassignment), so the janitor can finish.

**Outcome.** :class:`RunOutcome` holds the end state observed, the one expected
(:data:`tests.campaign.scenario.EXPECTED`), and every invariant problem; ``repro`` is the
one-line command that reruns the seed.

Failure: a cluster the emulator cannot start raises its error (the seed is in the message of
the caller's report); everything the run itself does is recorded, never raised.
"""

from __future__ import annotations

import json
import threading
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from kazoo.client import KazooClient

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_sim.zookeeper_server import EmbeddedZooKeeper
from tests.campaign import invariants as inv
from tests.campaign.blip_proxy import BlipProxy
from tests.campaign.scenario import EXPECTED, Scenario, draw

DAG_ID = "decommission_brokers"
#: stall_timeout_s: longer than any transient fault (stalls ≤ 6 s, ZooKeeper cuts ≤ 14 s) where one
#: is drawn; for the dead ends the trigger's floor (1.5× the largest partition's copy time at the
#: throttle, ≤ 9 s here) rules
STALL_TIMEOUT_S = {"transient": 20, "dead_end": 1}
WAVE_TIMEOUT_S = 300          # a safety net only: nothing in the campaign should reach it


def repro(seed: int, fault: str | None = None) -> str:
    forced = f" --fault {fault}" if fault else ""
    return f"PYTHONPATH=. python bench/bench_fault_campaign.py --seeds {seed}{forced}"


@dataclass
class RunOutcome:
    """What one run did and whether it was right."""

    seed: int
    fault: str
    expected: str
    observed: str                      # success | failed_then_janitor | failed (other) | error
    state: str = ""
    task_states: dict[str, str] = field(default_factory=dict)
    fault_injected: bool = False
    fault_note: str = ""
    invariant_problems: list[str] = field(default_factory=list)
    end_state_problems: list[str] = field(default_factory=list)
    samples: int = 0
    waves: int = 0
    wall_s: float = 0.0
    run_folder: str | None = None
    repro: str = ""

    @property
    def correct(self) -> bool:
        return self.observed == self.expected and not self.end_state_problems

    def line(self) -> str:
        verdict = "ok" if self.correct and not self.invariant_problems else "WRONG"
        return (f"{verdict} seed={self.seed} fault={self.fault} expected={self.expected} observed={self.observed} "
                f"waves={self.waves} samples={self.samples} wall={self.wall_s:.1f}s {self.fault_note}")


def _plain(hosts: str) -> KazooClient:
    from kazoo.retry import KazooRetry

    # reconnect at least every second: a server back from an outage finds the session still there
    client = KazooClient(hosts=hosts, timeout=10,
                         connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0))
    client.start(timeout=10)
    return client


class FaultInjector(threading.Thread):
    """Waits for wave ``fault_wave`` (a reassignment node that adds a replica), injects the fault,
    ends it (transient faults) or applies the operator's fix (dead ends) when the time comes."""

    def __init__(self, sc: Scenario, cluster: EmulatedCluster, zk: KazooClient, proxy: BlipProxy | None,
                 before: dict, run_root: Path, waves: int, server: EmbeddedZooKeeper | None = None) -> None:
        super().__init__(daemon=True, name="fault-injector")
        self.sc, self.cluster, self.zk, self.proxy, self.server = sc, cluster, zk, proxy, server
        self.before, self.run_root = before, run_root
        self.target_wave = min(sc.fault_wave, max(waves - 1, 0))
        self.run_ended = threading.Event()
        self.injected = False
        self.missed = False          # a dead-end fault aimed at a move that had already finished
        self.note = ""
        self.deleted: set[str] = set()
        self.error: str | None = None

    def run(self) -> None:
        try:
            self._run()
            if EXPECTED[self.sc.fault] == "success":
                self._end_a_kept_teardown()
        except Exception as exc:  # noqa: BLE001 - recorded in the outcome
            self.error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"

    def _end_a_kept_teardown(self) -> None:
        """A run that should succeed whose teardown keeps the throttles (a wave stalled and stays
        listed) would wait for the janitor's deadline (days): the harness plays the operator who
        gives the move up — deletes ``/admin/reassign_partitions`` — so the run ends (failed, its
        report naming the stall) and the test reports it instead of hanging (seed 200 under load)."""
        self._wait_for_janitor()
        if self.run_ended.is_set():
            return
        from kazoo.exceptions import NoNodeError

        try:
            self.zk.delete("/admin/reassign_partitions")
        except NoNodeError:
            pass
        self.note += (" [a wave never finished and the teardown kept the throttles: the harness deleted "
                      "/admin/reassign_partitions so the run could end]")

    def _wave_moves(self) -> list[tuple[str, int, int]] | None:
        """The wave's (topic, partition, added broker) if it is the target one, else None."""
        seen: list[int] = []
        while not self.run_ended.is_set():
            try:
                data, stat = self.zk.get("/admin/reassign_partitions")
            except Exception:  # noqa: BLE001 - not there yet
                time.sleep(0.02)
                continue
            doc = json.loads(data)
            adds = [(e["topic"], int(e["partition"]), b) for e in doc.get("partitions", [])
                    for b in e["replicas"] if b not in self.before.get((e["topic"], int(e["partition"])), [])]
            if adds and stat.czxid not in seen:
                seen.append(stat.czxid)
                if len(seen) - 1 == self.target_wave:
                    return adds
            time.sleep(0.02)
        return None

    def _largest(self, adds: list[tuple[str, int, int]]) -> tuple[str, int, int]:
        return max(adds, key=lambda m: (self.sc.sizes[m[0]][m[1]], m[0], m[1], m[2]))

    def _still_moving(self, topic: str, p: int, broker: int) -> bool:
        """Whether the move the fault aims at is still copying."""
        try:
            doc = json.loads(self.zk.get("/admin/reassign_partitions")[0])
            state = json.loads(self.zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")[0])
        except Exception:  # noqa: BLE001 - node gone: the wave was over
            return False
        listed = any(e["topic"] == topic and int(e["partition"]) == p for e in doc.get("partitions", []))
        return listed and broker not in state.get("isr", [])

    def _wait_for_janitor(self) -> None:
        """Until the teardown keeps the throttles for a wave still listed, or the run ended."""
        while not self.run_ended.is_set():
            if list(self.run_root.glob(f"{DAG_ID}/*/throttle_janitor.json")):
                return
            time.sleep(0.1)

    def _all_waves_done(self) -> bool:
        """Until the run's ``waves.json`` has every wave done (True), or the run ended (False)."""
        while not self.run_ended.is_set():
            for path in self.run_root.glob(f"{DAG_ID}/*/waves.json"):
                try:
                    waves = json.loads(path.read_text())["waves"]
                except (OSError, ValueError, KeyError):
                    continue
                if waves and all(w.get("status") == "done" for w in waves):
                    return True
            time.sleep(0.05)
        return False

    def _restart_at_final_verify(self) -> None:
        if not self._all_waves_done():
            self.note = "the run ended before its waves were done"
            return
        moved = sorted({b for (t, p), replicas in self.before.items() for b in _target_of(self.zk, t, p)
                        if b not in replicas})
        broker = moved[0] if moved else sorted(self.sc.brokers)[0]
        self.cluster.kill_broker(broker)
        self.injected, self.note = True, f"restarted broker {broker} at final_verify ({self.sc.fault_length:.1f}s down)"
        time.sleep(self.sc.fault_length)
        self.cluster.restart_broker(broker)

    def _run(self) -> None:
        sc = self.sc
        if sc.fault == "none":
            return
        if sc.fault == "verify_restart":
            self._restart_at_final_verify()
            return
        adds = self._wave_moves()
        if adds is None:
            self.note = "the run ended before the fault's wave"
            return
        topic, p, broker = self._largest(adds)
        dead_end = EXPECTED[sc.fault] != "success"
        if not dead_end:
            time.sleep(sc.fault_delay)
        c = self.cluster
        if dead_end:      # checked just before it lands: a dead end must hit a move still copying
            self.missed = not self._still_moving(topic, p, broker)
        if sc.fault == "kill_restart":
            c.kill_broker(broker)
            self.injected, self.note = True, f"killed broker {broker}"
            time.sleep(sc.fault_length)
            c.restart_broker(broker)
        elif sc.fault == "controller_move":
            before = c.controller_id()
            after = c.move_controller()
            self.injected, self.note = True, f"controller {before} -> {after}"
        elif sc.fault == "session_expiry":
            c.expire_session(broker)
            self.injected, self.note = True, f"expired broker {broker}'s session"
        elif sc.fault == "stall_resume":
            c.stall_replica(topic, p, broker, True)
            self.injected, self.note = True, f"stalled {topic}-{p} on {broker} for {sc.fault_length:.1f}s"
            time.sleep(sc.fault_length)
            c.stall_replica(topic, p, broker, False)
        elif sc.fault == "zk_blip":
            self.proxy.blip(sc.fault_length)
            self.injected, self.note = True, f"ZooKeeper cut for {sc.fault_length:.1f}s"
        elif sc.fault in ("zk_outage_6", "zk_outage_30"):
            self.server.stop()
            self.injected, self.note = True, f"ZooKeeper server down for {sc.fault_length:.0f}s"
            time.sleep(sc.fault_length)
            self.server.start()
        elif sc.fault == "kill_for_good":
            c.kill_broker(broker)
            self.injected, self.note = True, f"killed broker {broker} for good"
            self._wait_for_janitor()
            c.restart_broker(broker)                       # the operator brings it back
            self.note += "; restarted by the operator"
        elif sc.fault == "fail_append":
            # a user lowers the topic's max.message.bytes below batches already written: the new
            # follower fails every fetch (RecordTooLargeException) while its broker stays up
            _alter_topic_config(self.zk, topic, {"max.message.bytes": "1024"})
            c.fail_append(topic, p, broker, True)
            self.injected, self.note = True, f"{topic}-{p} on {broker} fails appends"
            self._wait_for_janitor()
            _alter_topic_config(self.zk, topic, {"max.message.bytes": None})   # the operator raises it back
            c.fail_append(topic, p, broker, False)
            self.note += "; fixed by the operator"
        elif sc.fault == "topic_deleted":
            self.zk.create(f"/admin/delete_topics/{topic}", b"", makepath=True)  # kafka-topics --delete
            self.deleted.add(topic)
            self.injected, self.note = True, f"deleted {topic} mid-wave"
            self._wait_for_janitor()
            c.move_controller()                            # the new controller drops the dead entry
            self.note += "; controller moved by the operator"
        else:  # pragma: no cover - draw() refuses unknown faults
            raise ValueError(sc.fault)


def _target_of(zk: KazooClient, topic: str, p: int) -> list[int]:
    """The partition's replicas now (plain kazoo); [] if it cannot be read."""
    try:
        return list(json.loads(zk.get(f"/brokers/topics/{topic}")[0])["partitions"][str(p)])
    except Exception:  # noqa: BLE001 - a topic deleted or a read cut: nothing to choose from
        return []


def _wait_connected(zk: KazooClient, timeout: float = 60.0) -> None:
    """Until ``zk`` is connected (a session that expired in an outage is replaced by kazoo), bounded."""
    deadline = time.monotonic() + timeout
    while not zk.connected and time.monotonic() < deadline:
        time.sleep(0.1)


def _alter_topic_config(zk: KazooClient, topic: str, changes: dict[str, str | None]) -> None:
    """What ``kafka-configs --alter`` does for a topic (``None`` deletes the key), as a versioned
    read-modify-write so it never overwrites the runbook's concurrent throttle lists."""
    from kazoo.exceptions import BadVersionError, NoNodeError

    path = f"/config/topics/{topic}"
    for _ in range(100):        # bounded: a write lost to a concurrent one is read and tried again
        try:
            data, stat = zk.get(path)
        except NoNodeError:
            zk.create(path, json.dumps({"version": 1, "config": {}}).encode(), makepath=True)
            continue
        doc = json.loads(data) if data else {"version": 1, "config": {}}
        for k, v in changes.items():
            if v is None:
                doc["config"].pop(k, None)
            else:
                doc["config"][k] = v
        try:
            zk.set(path, json.dumps(doc).encode(), version=stat.version)
            break
        except BadVersionError:
            continue
    else:
        raise RuntimeError(f"{path}: 100 versioned writes in a row lost to concurrent ones")
    zk.create("/config/changes/config_change_", json.dumps({"version": 2, "entity_path": f"topics/{topic}"}).encode(),
              sequence=True, makepath=True)


def _empties_a_rack(sc: Scenario) -> bool:
    return any(all(b in sc.removed for b, r in sc.brokers.items() if r == rack) for rack in set(sc.brokers.values()))


def _user_throttles(zk: KazooClient, sc: Scenario, before: dict) -> None:
    from tests.zk_helpers import set_config_by_hand

    if sc.user_broker_throttle is not None:
        set_config_by_hand(zk, f"brokers/{sc.user_broker_throttle}",
                           {inv.RATE["leader"]: "12345", inv.RATE["follower"]: "12345"})
    if sc.user_topic_throttle is not None:
        leader = before[(sc.user_topic_throttle, 0)][0]
        set_config_by_hand(zk, f"topics/{sc.user_topic_throttle}",
                           {inv.LIST["leader"]: f"0:{leader}", "retention.ms": "3600000"})


def run_chroot(fault: str, seed: int, zk_host: str, zk_port: int, workdir: Path,
               prefix: str) -> tuple[EmbeddedZooKeeper | None, str, int, str]:
    """``(own server or None, host, port, fresh chroot)`` for one run: a ZooKeeper outage gets a server
    of its own (so the outage touches no other run), every run a fresh chroot ``/<prefix><seed>-…``."""
    server = None
    if fault.startswith("zk_outage"):
        server = EmbeddedZooKeeper(data_dir=str(workdir / "zookeeper")).start()
        zk_host, zk_port = server.host, server.port
    chroot = f"/{prefix}{seed}-{int(time.time() * 1000) % 10**9}"
    root = _plain(f"{zk_host}:{zk_port}")
    root.create(chroot)
    root.stop()
    root.close()
    return server, zk_host, zk_port, chroot


def run_one(sc: Scenario, zk_host: str, zk_port: int, workdir: Path) -> RunOutcome:
    """Run ``sc`` against the ZooKeeper at ``zk_host:zk_port`` (a fresh chroot) in ``workdir``."""
    from kafka_zk.codecs import TopicPartition
    from cli.local_run import run_dag
    from tests.dags.kernel_plan import write_kernel_plan

    started = time.monotonic()
    outcome = RunOutcome(sc.seed, sc.fault, EXPECTED[sc.fault], "error", repro=repro(sc.seed))
    server, zk_host, zk_port, chroot = run_chroot(sc.fault, sc.seed, zk_host, zk_port, workdir, "campaign")
    base = f"{zk_host}:{zk_port}"
    cluster = EmulatedCluster(base + chroot, ClusterSpec(brokers=sc.brokers, speed=sc.speed, seed=sc.seed)).start()
    zk = _plain(base + chroot)
    proxy = BlipProxy((zk_host, zk_port)) if sc.fault == "zk_blip" else None
    sampler = injector = None
    try:
        cluster.create_topics({t: (a, sc.sizes[t], None) for t, a in sc.topics.items()})
        before = inv.assignment(zk)
        _user_throttles(zk, sc, before)
        users = inv.throttle_configs(zk)
        sizes = {TopicPartition(t, p): n for t, by_p in sc.sizes.items() for p, n in by_p.items()}
        outcome.waves = write_kernel_plan(base + chroot, workdir / "plan", sc.removed, sizes, sc.throttle,
                                          sc.max_moves_per_broker)
        conn_id = f"campaign_{sc.seed}_{chroot.strip('/').replace('-', '_')}"
        import os
        os.environ[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps({
            "conn_type": "kafka_zookeeper", "host": proxy.hosts if proxy else base,
            "extra": {"chroot": chroot, "connect_timeout": 10, "session_timeout": 10}})
        run_root = workdir / "runs"
        sampler = inv.ThrottleSampler(zk, before)
        injector = FaultInjector(sc, cluster, zk, proxy, before, run_root, outcome.waves, server)
        sampler.start()
        injector.start()
        result = run_dag(DAG_ID, {
            "zk_conn_id": conn_id, "brokers_to_remove": sc.removed, "run_root": str(run_root),
            "throttle_bytes_per_sec": sc.throttle, "max_moves_per_broker": sc.max_moves_per_broker,
            "poll_interval_s": 0.3, "plan_from": str(workdir / "plan"),
            "allow_rack_removal": _empties_a_rack(sc),          # the acknowledgement a whole rack needs
            "wave_timeout_s": WAVE_TIMEOUT_S,
            "stall_timeout_s": STALL_TIMEOUT_S["transient" if EXPECTED[sc.fault] == "success" else "dead_end"], "stall_warning_s": 5},
            answer="Approve", approver="campaign-approver")
        injector.run_ended.set()
        injector.join(timeout=60)
        sampler.stop()
        outcome.state, outcome.task_states = result.state, result.task_states
        outcome.run_folder = str(result.run_folder) if result.run_folder else None
        outcome.fault_injected, outcome.fault_note = injector.injected, injector.note
        if injector.missed:
            outcome.fault_note += " [MISSED: the move had finished when the fault landed]"
        if injector.error:
            outcome.fault_note += f" [injector error: {injector.error}]"
        outcome.samples = sampler.samples
        _wait_connected(zk)          # after a ZooKeeper outage the harness's own session may be new
        outcome.invariant_problems += [f"unthrottled: {v}" for v in sorted(set(sampler.violations))[:10]]
        _judge(outcome, sc, zk, result, before, users, injector.deleted, sampler.last_listed)
    except Exception as exc:  # noqa: BLE001 - an error of the harness is an outcome too
        outcome.observed = "error"
        outcome.end_state_problems.append(f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}")
    finally:
        if injector is not None:
            injector.run_ended.set()
        if sampler is not None and sampler.is_alive():
            sampler.stop()
        zk.stop()
        zk.close()
        cluster.stop()
        if proxy is not None:
            proxy.close()
        if server is not None:
            server.stop()
        outcome.wall_s = time.monotonic() - started
    return outcome


def _judge(outcome: RunOutcome, sc: Scenario, zk: KazooClient, result, before: dict, users: dict,
           deleted: set[str], last_listed: dict[tuple[str, int], float]) -> None:
    """Invariants (always) and the end state the fault calls for."""
    folder = result.run_folder
    outcome.invariant_problems += inv.no_replica_lost(zk, before, deleted)
    outcome.invariant_problems += inv.no_half_written_node(zk)
    outcome.invariant_problems += inv.throttles_restored(zk, users, deleted)
    if zk.exists("/admin/reassign_partitions") is not None:
        outcome.invariant_problems.append("/admin/reassign_partitions still present after the run")
    ts = result.task_states
    if result.state == "success":
        outcome.observed = "success"
        after = inv.assignment(zk)
        for tp, replicas in after.items():
            if set(replicas) & set(sc.removed):
                outcome.end_state_problems.append(f"{tp[0]}-{tp[1]} still on a removed broker: {replicas}")
    elif result.state == "failed" and ts.get("execute_waves") == "failed" and ts.get("remove_throttles") == "success":
        outcome.observed = "failed_then_janitor"
        janitor = folder / "throttle_janitor.json" if folder else None
        if janitor is None or not janitor.exists():
            if not _nothing_copying_at_teardown(folder, deleted, last_listed):
                outcome.end_state_problems.append("no throttle_janitor.json: the teardown did not keep the throttles")
        else:
            doc = json.loads(janitor.read_text())
            if not doc.get("in_flight") or doc.get("removed_at", 0) < doc.get("kept_at", 1):
                outcome.end_state_problems.append(f"janitor record {doc} does not show throttles kept then removed")
        note = (folder / "notification.txt").read_text() if folder and (folder / "notification.txt").exists() else ""
        cause = {"kill_for_good": "not registered", "fail_append": "max.message.bytes",
                 "topic_deleted": "deleted"}.get(sc.fault)
        if cause and not (cause in note and cause in _report(folder)):
            outcome.end_state_problems.append(f"the report and notification do not name the cause ({cause!r})")
    else:
        failed = sorted(t for t, s in ts.items() if s == "failed")
        outcome.observed = f"failed ({', '.join(failed) or result.state})"


def _nothing_copying_at_teardown(folder: Path | None, deleted: set[str],
                                 last_listed: dict[tuple[str, int], float]) -> bool:
    """Every move of the waves left unfinished belongs to a deleted topic or had left
    ``/admin/reassign_partitions`` (as the sampler saw it) before the teardown's first write: nothing
    of the run could still copy, so the teardown rightly removed the throttles at once instead of
    keeping them (it keeps them only while the node lists a partition of the run; the controller drops
    a deleted topic's partitions from it). Seed 311 (topic_deleted): the wave's two other moves had
    finished at the first poll; only the deleted topic's was open."""
    doc = json.loads((folder / "waves.json").read_text()) if folder and (folder / "waves.json").exists() else {}
    open_moves = [m for w in doc.get("waves", []) if w.get("status") == "submitted" for m in w.get("moves", [])]
    if not open_moves or not any(m["topic"] in deleted for m in open_moves):
        return False
    teardown = _first_write_at(folder, "remove_throttles") if folder else None
    if teardown is None:
        return False
    return all(m["topic"] in deleted or last_listed.get((m["topic"], m["partition"]), 0.0) < teardown
               for m in open_moves)


def _first_write_at(folder: Path, task: str) -> float | None:
    """Epoch seconds of ``task``'s first ZooKeeper write in the run's audit log (None: it wrote nothing)."""
    path = folder / "audit.jsonl"
    if not path.exists():
        return None
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("task") == task and not rec.get("dry_run") and rec.get("op") in ("create", "set", "delete"):
            return datetime.fromisoformat(rec["time"]).timestamp()
    return None


def _report(folder: Path | None) -> str:
    if folder is None:
        return ""
    path = folder / "final_report.md"
    return path.read_text() if path.exists() else ""


def run_seeds(seeds: list[int], zk_host: str, zk_port: int, workdir: Path, fault: str | None = None,
              log=print, *, draw=draw, run=None, repro=repro, prefix: str = "seed") -> list[RunOutcome]:
    """Run every seed in turn (``fault`` forces the kind); each outcome is logged as it ends. ``draw``,
    ``run`` and ``repro`` are a campaign's own (the roll campaign passes its; default: this one's)."""
    run = run or run_one
    out = []
    for seed in seeds:
        sc = draw(seed, fault)
        log(f"run {sc.describe()}")
        o = run(sc, zk_host, zk_port, workdir / f"{prefix}{seed}-{sc.fault}")
        o.repro = repro(seed, fault)
        log(o.line())
        if not o.correct or o.invariant_problems:
            for p in (o.invariant_problems + o.end_state_problems)[:12]:
                log(f"    {p}")
            log(f"    task states: {o.task_states}")
            log(f"    repro: {o.repro}")
        out.append(o)
    return out
