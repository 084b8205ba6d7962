"""GuardsOperator: the last read-only checks before anything is written to the cluster.

Checks, all against the *live* cluster, every problem collected before refusing:

1. the plan on disk is the approved one (hash; skipped in a dry run, which writes nothing);
2. every broker to remove, and every broker the plan moves replicas onto, is registered
   (``/brokers/ids``) — but a broker the plan was made with as down (dead: its replicas are
   re-created from the surviving in-sync replicas). One missing is waited on, re-read every
   ``poll_interval_s`` up to ``registration_wait_s`` (a session that expired, a restart), as
   ``final_verify`` waits, before it is refused;
3. no reassignment is running: ``/admin/reassign_partitions`` absent, no partition with
   adding/removing replicas — unless it is this run's own wave (a cleared or retried run);
4. the plan is not stale: every planned partition still has the replica *set* the plan assumed
   (order may differ: demotion re-orders), or already has its target (a resumed run).

5. a runbook's own guards: a subclass overrides :meth:`GuardsOperator.extra_problems`;
6. the maintenance windows (:mod:`procedures.windows.guard`), when the windows file binds the run's
   cluster and runbook and ``outside_window`` is not set: no wave may be longer than the longest
   window; outside a window a *scheduled* run is refused (it belongs to a window that closed) and
   a manual one waits, deferred, for the next opening before any write; ``outside_window=true``
   (a manual emergency) is recorded here, in the report and in the notification.

The result goes to ``guards.json`` in the run folder. Failure: :class:`ReassignmentInProgress`,
:class:`StalePlan`, :class:`BrokerNotAvailable` (the first problem's type; the message lists all).
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from typing import Any, Sequence

from airflow.providers.standard.triggers.temporal import DateTimeTrigger

from kafka_zk.admin.reassignment import classify_live_reassignment
from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import BrokerNotAvailable, KafkaZkError, ReassignmentInProgress, StalePlan
from kafka_zk.model import ClusterSnapshot
from kafka_zk.snapshot import read_snapshot
from planning.wave_time import WaveCosts
from operators.base import DecommissionStep, as_bool
from operators.errors import OutsideWindow
from procedures.throttles import resolve_rate
from procedures.windows.calendar import next_opening, open_window
from operators.windows.config import configured_windows
from procedures.windows.guard import run_wave_seconds, too_long_for_every_window, window_gate
from operators.runtime import plan_hash, require_approval
from planning.plan_folder.read import load_plan_artifacts

SHOWN = 10


def planned_dead(plan: Any) -> set[int]:
    """The brokers the plan was made with as down (``summary.json``'s ``dead_brokers``)."""
    try:
        with open(plan.summary_path, encoding="utf-8") as f:
            return {int(b) for b in (json.load(f).get("dead_brokers") or {})}
    except (OSError, ValueError):
        return set()


def reassignment_problems(snap: ClusterSnapshot, plan_targets: dict[TopicPartition, tuple[int, ...]]) -> list[str]:
    """Why a reassignment already running blocks this run (empty: none, or only ours)."""
    problems = []
    kind = classify_live_reassignment(snap.reassignment, plan_targets)
    if kind == "foreign":
        entries = snap.reassignment.entries
        shown = ", ".join(f"{e.tp} → {list(e.replicas)}" for e in entries[:SHOWN])
        problems.append(f"a reassignment is already in progress: /admin/reassign_partitions holds {len(entries)} "
                        f"partition(s) this plan did not submit ({shown}). Wait for it to finish "
                        "(kafka-reassign-partitions --verify) or cancel it, then trigger this runbook again")
    moving = [p for p in snap.partitions() if p.is_reassigning
              and tuple(plan_targets.get(p.tp, ())) != p.target]
    if moving:
        shown = ", ".join(f"{p.tp} (adding {list(p.adding)}, removing {list(p.removing)})" for p in moving[:SHOWN])
        problems.append(f"{len(moving)} partition(s) are being reassigned by someone else: {shown}. Wait for that "
                        "reassignment to finish, then trigger this runbook again")
    return problems


def stale_problems(snap: ClusterSnapshot, current: dict[TopicPartition, tuple[int, ...]],
                   target: dict[TopicPartition, tuple[int, ...]]) -> list[str]:
    """Partitions whose live replicas are neither the assumed set nor the planned target."""
    bad = []
    for tp in sorted(target):
        if not snap.has_partition(tp):
            bad.append(f"{tp}: no longer exists")
            continue
        live = snap.partition(tp)
        if tuple(live.replicas) == tuple(target[tp]) or live.target == tuple(target[tp]):
            continue
        if set(live.replicas) != set(current.get(tp, ())):
            bad.append(f"{tp}: plan assumed replicas {list(current.get(tp, ()))}, cluster has {list(live.replicas)}")
    if not bad:
        return []
    more = f" (and {len(bad) - SHOWN} more)" if len(bad) > SHOWN else ""
    return [f"plan is stale, re-plan: {len(bad)} partition(s) changed since the snapshot: "
            + "; ".join(bad[:SHOWN]) + more]


class GuardsOperator(DecommissionStep):
    """Refuse to go on when the cluster or the plan is not what was approved."""

    template_fields: Sequence[str] = (*DecommissionStep.template_fields, "outside_window", "throttle_bytes_per_sec",
                                      "registration_wait_s", "poll_interval_s")
    ui_color = "#fff3cd"

    def __init__(self, *, outside_window: Any = False, throttle_bytes_per_sec: Any = None,
                 registration_wait_s: Any = 120.0, poll_interval_s: Any = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.outside_window = outside_window
        self.throttle_bytes_per_sec = throttle_bytes_per_sec
        self.registration_wait_s = registration_wait_s
        self.poll_interval_s = poll_interval_s

    def poll_sleep(self, seconds: float) -> None:
        """The wait between reads of ``/brokers/ids`` (a rehearsal sleeps on simulated time)."""
        time.sleep(seconds)

    def _registered_snapshot(self, client: Any, expected: set[int], checks: list[str]) -> ClusterSnapshot:
        """The live snapshot once every ``expected`` broker is registered, or at the bound
        (``registration_wait_s``): a broker whose session expired or that is restarting comes back
        within seconds, and is not refused on one read (final_verify waits the same way)."""
        started = time.monotonic()
        deadline = started + float(self.registration_wait_s)
        snap = read_snapshot(client, with_configs=False)
        missing = sorted(expected - set(snap.brokers))
        first_missing = missing
        while missing and time.monotonic() < deadline:
            self.log.warning("broker(s) %s not registered under /brokers/ids (session expired, restarting?): "
                             "waiting up to %.0fs more for them to register again", missing,
                             deadline - time.monotonic())
            self.poll_sleep(min(float(self.poll_interval_s), max(0.0, deadline - time.monotonic())))
            snap = read_snapshot(client, with_configs=False)
            missing = sorted(expected - set(snap.brokers))
        if first_missing:
            waited = time.monotonic() - started
            checks.append(f"broker(s) {first_missing} were not registered at first; waited {waited:.0f}s: "
                          + ("registered again" if not missing else f"{missing} still not registered"))
        return snap

    def resume_in_window(self, context: Any, event: Any = None) -> dict:
        """A window has opened: check everything again, now."""
        return self.execute(context)

    def window_problems(self, context: Any, plan: Any, checks: list[str]) -> list[tuple[type[KafkaZkError], str]]:
        """Check 6 (see module docstring); defers the task when a manual run must wait for a window."""
        dag_id = context["dag"].dag_id
        if as_bool(self.outside_window):
            checks.append("outside_window=true: the maintenance windows are ignored for this run (a manual "
                          "emergency; recorded)")
            return []
        gate = window_gate(configured_windows(in_task=True), str(self.zk_conn_id), dag_id, False)
        if gate is None:
            checks.append(f"no maintenance window binds {dag_id} on {self.zk_conn_id}")
            return []
        try:
            rate = resolve_rate(self.throttle_bytes_per_sec, plan.throttle_bytes_per_s)
        except KafkaZkError:
            rate = plan.throttle_bytes_per_s
        costs = WaveCosts()          # the shared model at the executor's default poll (planning/wave_time.py)
        predicted = [run_wave_seconds(w.predicted_seconds, plan.throttle_bytes_per_s, rate, 1.0, costs)
                     for w in plan.waves]
        problems: list[tuple[type[KafkaZkError], str]] = []
        too_long = too_long_for_every_window(gate, predicted)
        if too_long:
            problems.append((OutsideWindow, f"wave(s) {too_long[:SHOWN]} are predicted to take up to "
                             f"{max(predicted[i] for i in too_long):.0f}s, longer than the longest window admitting "
                             f"{dag_id} ({gate.longest}): they could never start. Set (or lower) max_moves_per_broker, raise "
                             "the throttle, or lengthen the window"))
        now = datetime.now(timezone.utc)
        window = open_window(gate.cluster, dag_id, now)
        if window is not None:
            checks.append(f"inside maintenance window {window.window.name} (closes "
                          f"{window.closes.isoformat(timespec='seconds')})")
            return problems
        upcoming = next_opening(gate.cluster, dag_id, now)
        when = upcoming.opens.isoformat(timespec="seconds") if upcoming else "never (no window within a year)"
        run_type = str(getattr(context["dag_run"].run_type, "value", context["dag_run"].run_type))
        if run_type == "scheduled" or upcoming is None or problems:
            problems.append((OutsideWindow, f"no maintenance window admitting {dag_id} is open at "
                             f"{now.isoformat(timespec='seconds')}; a {run_type} run does not start outside a window "
                             f"(next opening: {when}); nothing was written"))
            return problems
        self.folder(context).write_json(self.folder(context).guards, {
            "ok": None, "checks": checks, "problems": [],
            "waiting_for_window": {"window": upcoming.window.name, "opens": when}})
        self.log.warning("no maintenance window is open now: waiting (deferred, nothing written, no worker held) "
                         "until %s opens at %s (trigger with outside_window=true for an emergency)",
                         upcoming.window.name, when)
        self.defer(trigger=DateTimeTrigger(moment=upcoming.opens), method_name="resume_in_window")
        return problems

    def extra_problems(self, snap: ClusterSnapshot, plan: Any) -> list[tuple[type[KafkaZkError], str]]:
        """A runbook's own guards against the live snapshot and the plan artifacts: each problem as
        (error type, message naming the problem and the fix); none by default."""
        return []

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        checks: list[str] = []
        problems: list[tuple[type[KafkaZkError], str]] = []
        if self.is_dry_run:
            digest = plan_hash(folder.plan_dir)
            checks.append(f"dry run: approval not required (plan {digest[:12]}…)")
        else:
            record = require_approval(folder)
            checks.append(f"plan {record.plan_hash[:12]}… approved ({record.decision}) by {record.by} at {record.at}")
        plan = load_plan_artifacts(str(folder.plan_dir))
        if not self.is_dry_run:
            problems.extend(self.window_problems(context, plan, checks))
        dead = planned_dead(plan)
        destinations = {b for tp, replicas in plan.target.items() for b in replicas
                        if b not in set(plan.rollback.get(tp, ()))}
        with self.session(context) as (client, _writer):
            snap = self._registered_snapshot(client, (set(self.removed) - dead) | destinations, checks)
        missing = sorted(self.removed - dead - set(snap.brokers))
        if missing:
            problems.append((BrokerNotAvailable, f"broker(s) {missing} to remove were registered when the plan "
                             f"was made and are not registered under /brokers/ids now, after waiting "
                             f"{float(self.registration_wait_s):.0f}s (live: {list(snap.live_broker_ids)}): start "
                             "them again, or trigger a new run (its plan re-creates a dead broker's replicas from "
                             "the surviving in-sync replicas)"))
        elif self.removed - dead:
            checks.append(f"brokers to remove {sorted(self.removed - dead)} are registered")
        for b in sorted(dead & self.removed):
            checks.append(f"broker {b} was down when planned ({'registered again now' if b in snap.brokers else 'still down'}): "
                          "its replicas are re-created from the surviving in-sync replicas")
        gone = sorted(destinations - set(snap.brokers))
        if gone:
            problems.append((BrokerNotAvailable, f"broker(s) {gone} the plan moves replicas onto are not registered "
                             f"under /brokers/ids (live: {list(snap.live_broker_ids)}): start them, or re-plan"))
        elif destinations:
            checks.append(f"destination brokers {sorted(destinations)} are registered")
        for cls, text in self.extra_problems(snap, plan):
            problems.append((cls, text))
        for text in reassignment_problems(snap, dict(plan.target)):
            problems.append((ReassignmentInProgress, text))
        if not any(cls is ReassignmentInProgress for cls, _ in problems):
            checks.append("no reassignment in progress" if snap.reassignment is None
                          else "the reassignment in progress is this run's own wave (resuming)")
        for text in stale_problems(snap, dict(plan.rollback), dict(plan.target)):
            problems.append((StalePlan, text))
        if not any(cls is StalePlan for cls, _ in problems):
            checks.append(f"plan is current: {len(plan.target)} partition(s) still have the replicas it assumed")
        folder.write_json(folder.guards, {"ok": not problems, "checks": checks,
                                          "problems": [text for _, text in problems]})
        for line in checks:
            self.log.info("guard passed: %s", line)
        if problems:
            for _, text in problems:
                self.log.error("guard refused: %s", text)
            raise problems[0][0]("; ".join(text for _, text in problems))
        return {"checks": checks}
