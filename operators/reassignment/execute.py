"""ExecuteWavesOperator: submit the plan's waves one at a time, deferring while each one runs.

A loop of deferrals in one task. :meth:`execute` (and :meth:`execute_complete` after each wave)
calls :meth:`_advance`, which walks the waves in order and, for the first one not done:

* all its partitions already finished in ZooKeeper and the admin node gone → marks it done
  (a wave finished while the task was down is never submitted again);
* ``/admin/reassign_partitions`` holds it ("ours": entries ⊆ the wave, same targets) → waits;
* the node holds anything else → :class:`ForeignReassignment`;
* otherwise → checks the wave's unfinished partitions still have the replicas the plan assumed
  (else :class:`StalePlan`), merges the wave's throttled replicas, submits the unfinished
  partitions and records ``submitted`` in ``waves.json``;
* then, for a wave submitted or found running, polls it here for up to ``inline_wait_s``: a wave
  finished by then is marked done without deferring; one with a destination broker not registered
  is handed to the trigger at once, which tells people;
  otherwise it defers on
  :class:`WaveDoneTrigger`, which never resumes the task sooner than ``min_defer_s`` after the
  deferral. Both keep clear of a scheduler race seen on Airflow 3.3.2: a trigger firing before
  the executor reported the deferring attempt's exit gets the resumed task failed ("409 TI was
  not in the running state"). The DAG gives this task retries, and a retry resumes the same wave
  (finished → done; in ``/admin/reassign_partitions`` → ours, waited on, never rewritten).

Progress lives in ZooKeeper and the run folder (``waves.json``), never in memory, so a task that
is killed, retried or cleared resumes where the cluster is. Each wave's deadline is absolute
(submission time + ``wave_timeout_s``), kept across retries. In a dry run every wave's write is
planned and audited, nothing is waited on.

Failure: the approved hash must match the plan (:class:`PlanHashMismatch`); trigger statuses
map to :class:`WaveTimeout`, :class:`WaveStalled` (both final: no retry can change them) and
:class:`WaveWaitFailed` (retried).
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

from airflow.providers.standard.triggers.temporal import DateTimeTrigger

from kafka_zk.admin.reassignment import classify_live_reassignment, submit_reassignment
from kafka_zk.errors import ForeignReassignment, KafkaZkError, StalePlan
from planning.plan_folder.read import load_plan_artifacts
from procedures.run_folder import RunFolder
from kafka_zk.snapshot import read_snapshot
from operators.base import RunbookOperator, as_bool
from operators.deferral import INLINE_WAIT_S, MIN_DEFER_S, not_before, wait_inline
from operators.errors import OutsideWindow, PlanHashMismatch, WaveStalled, WaveTimeout, WaveWaitFailed
from operators.notifications.runbook import conn_ids_of, notify_event
from operators.hooks.zookeeper import ZooKeeperHook
from operators.runtime import require_approval
from procedures.reports.live_progress import record_poll
from operators.reports.links import PlanReportLink, ProgressLink, RunReportsLink
from procedures.waves.stall_causes import blocking_causes
from procedures.reports.state_change import remember_broker_logs, write_stall_excerpt
from procedures.waves.throttles import record_then_apply, resolve_rate
from operators.triggers.reassignment import WaveDoneTrigger
from operators.windows.pause import WindowBook, pause_throttles, resume_throttles
from operators.windows.config import configured_windows
from procedures.windows.guard import (WindowGate, decide_wave, measured_factor, run_costs, run_wave_seconds,
                                     too_long_for_every_window, window_gate)
from procedures.waves.book import (DONE, SUBMITTED, WaveBook, WaveMove, WaveSpec, WaveStatus, live_partitions,
                             partition_done, wave_state)

WAIT_ERRORS = {"timeout": WaveTimeout, "stalled": WaveStalled, "error": WaveWaitFailed}


def raise_for_event(event: dict[str, Any]) -> dict[str, Any]:
    """The wave trigger's event when the wave is done; otherwise the error its status maps to."""
    status = event.get("status")
    if status == "done":
        return event
    raise WAIT_ERRORS.get(status, WaveWaitFailed)(str(event.get("message", status)))


def build_wave_book(plan_dir: str) -> WaveBook:
    """Waves from the plan artifacts (hash-checked), with each partition's size from waves.json."""
    plan = load_plan_artifacts(plan_dir)
    with open(f"{plan_dir}/waves.json", encoding="utf-8") as fh:
        sizes = {(p["topic"], int(p["partition"])): int(p.get("size") or 0)
                 for w in json.load(fh)["waves"] for p in w["partitions"]}
    waves = []
    for i, w in enumerate(plan.waves):
        moves = tuple(WaveMove(tp, tuple(w.current[tp]), tuple(w.target[tp]), sizes.get((tp.topic, tp.partition), 0))
                      for tp in sorted(w.target, key=lambda t: (t.topic, t.partition)))
        waves.append(WaveSpec(i, moves))
    return WaveBook(plan.plan_hash, tuple(waves))


class ExecuteWavesOperator(RunbookOperator):
    """Run every wave of the plan to completion, resumably (see module docstring)."""

    operator_extra_links = (ProgressLink(), PlanReportLink(), RunReportsLink())

    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "throttle_bytes_per_sec",
                                      "wave_timeout_s", "poll_interval_s", "stall_warning_s", "stall_timeout_s",
                                      "broker_logs", "outside_window", "between_windows")
    ui_color = "#cfe2f3"
    #: the clock every wave status change is stamped with (epoch seconds); a test may replace it
    clock = staticmethod(time.time)

    def __init__(self, *, throttle_bytes_per_sec: Any = None, wave_timeout_s: Any = 6 * 3600,
                 poll_interval_s: Any = 5.0, stall_warning_s: Any = None, stall_timeout_s: Any = None,
                 broker_logs: Any = "", inline_wait_s: float = INLINE_WAIT_S, min_defer_s: float = MIN_DEFER_S,
                 outside_window: Any = False, between_windows: Any = "keep", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.inline_wait_s = inline_wait_s
        self.min_defer_s = min_defer_s
        self.throttle_bytes_per_sec = throttle_bytes_per_sec
        self.wave_timeout_s = wave_timeout_s
        self.poll_interval_s = poll_interval_s
        self.stall_warning_s = stall_warning_s
        self.stall_timeout_s = stall_timeout_s
        self.broker_logs = broker_logs   # where the brokers' state-change logs are (procedures/reports/state_change.py)
        self.outside_window = outside_window     # the recorded manual-emergency override of the windows
        self.between_windows = between_windows   # "keep" or "remove" the throttles while waiting for a window

    # -- entry points ------------------------------------------------------------------------

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        if self.is_dry_run:
            return self._dry_run(context, folder)
        ZooKeeperHook(self.zk_conn_id).log_dirs_source()   # a malformed log_dirs_source is refused before any write
        record = require_approval(folder)
        book = WaveBook.load(folder.wave_progress)
        if book is None:
            book = build_wave_book(str(folder.plan_dir))
            book.save(folder.wave_progress)
        if book.plan_hash != record.plan_hash:
            raise PlanHashMismatch(f"{folder.wave_progress} belongs to plan {book.plan_hash[:12]}…, the approved "
                                   f"plan is {record.plan_hash[:12]}…: re-plan and approve again")
        return self._advance(context, folder, book)

    def execute_complete(self, context: Any, event: dict[str, Any]) -> dict:
        folder = self.folder(context)
        book = WaveBook.load(folder.wave_progress)
        if event.get("status") != "done":
            # the cause the trigger named (dead end, stall, timeout) for the report and notification
            folder.write_json(folder.wave_failure, {"wave_id": event.get("wave_id"), "status": event.get("status"),
                                                    "message": str(event.get("message", event.get("status")))})
            write_stall_excerpt(folder.root, event.get("wave_id", -1), event.get("pending", ()),
                                str(event.get("message", event.get("status"))))
            self._notify_failed(context, folder, event)
            raise_for_event({**event, "message": (
                f"{event.get('message', event.get('status'))}. The wave keeps running in the cluster; the teardown "
                "keeps its throttles until it finishes. Clear execute_waves to resume waiting, or see the runbook's "
                "rollback")})
        folder.wave_failure.unlink(missing_ok=True)      # a retry that got through: no stale cause
        wave = book.wave(int(event["wave_id"]))
        if wave.status != DONE:
            book = self._advance_wave(folder, book, wave.id, DONE)
        self.log.info("wave %d done in %.1fs", wave.id, event.get("elapsed_s", 0.0))
        return self._advance(context, folder, book)

    def _notify_failed(self, context: Any, folder: RunFolder, event: dict[str, Any]) -> None:
        """The "failed" notification as the failure is seen, not when the teardown (which may wait
        days for the wave with its throttles kept) and the run end; the notify step tells again."""
        try:
            notify_event(context, folder, "failed", self.log, outcome=f"FAILED at {self.task_id}",
                         body=f"Wave {event.get('wave_id')} failed ({event.get('status')}): "
                              f"{event.get('message', event.get('status'))}. The wave keeps running in the cluster "
                              "and keeps its throttles until it finishes; the teardown waits for it and tells "
                              "when it removes them.",
                         fields={"wave": event.get("wave_id"), "status": event.get("status"),
                                 "still moving": ", ".join(event.get("pending") or ())})
        except Exception as exc:  # noqa: BLE001 - a channel down must not hide the failure itself
            self.log.error("failure notification not sent: %s", exc)

    def resume_after_window(self, context: Any, event: dict[str, Any] | None = None) -> dict:
        """The window the run waited for has opened: re-set throttles if they were removed, go on."""
        folder = self.folder(context)
        windows = WindowBook.load(folder)
        if windows.throttles_removed_at_pause:
            with self.session(context) as (_client, writer):
                resume_throttles(folder, writer, self.throttle_bytes_per_sec)
            self.log.info("window open: throttles re-set on the plan's brokers before the next wave")
        windows.resumed(self.clock())
        windows.save(folder)
        return self._advance(context, folder, WaveBook.load(folder.wave_progress))

    # -- the loop ----------------------------------------------------------------------------

    def _advance(self, context: Any, folder: RunFolder, book: WaveBook) -> dict:
        with self.session(context) as (client, writer):
            for wave in book.waves:
                if wave.status == DONE:
                    continue
                snap = read_snapshot(client, topics={m.tp.topic for m in wave.moves}, with_configs=False)
                live = live_partitions(snap.partitions())
                progress, listed = wave_state(wave, snap)
                if progress.complete and not listed:
                    self.log.info("wave %d already finished in ZooKeeper: not submitting it again", wave.id)
                    book = self._advance_wave(folder, book, wave.id, DONE)
                    continue
                kind = classify_live_reassignment(snap.reassignment, wave.targets)
                if kind == "foreign":
                    raise ForeignReassignment(
                        f"/admin/reassign_partitions holds a reassignment that is not wave {wave.id} of this run "
                        f"({len(snap.reassignment.entries)} partition(s)); wait for it or cancel it, then clear "
                        "execute_waves")
                if kind == "ours":
                    self.log.info("wave %d is already in /admin/reassign_partitions: waiting for it, "
                                  "not rewriting it", wave.id)
                    book = self._advance_wave(folder, book, wave.id, SUBMITTED)
                    wave = book.wave(wave.id)
                else:
                    todo = {m.tp: m for m in wave.moves if not partition_done(live.get(m.tp), m.target)}
                    stale = [f"{tp}: plan assumed {list(m.current)}, cluster has "
                             f"{list(live[tp].replicas) if tp in live else 'no such partition'}"
                             for tp, m in todo.items()
                             if tp not in live or (set(live[tp].replicas) != set(m.current)
                                                   and live[tp].target != m.target)]
                    if stale:
                        raise StalePlan(f"plan is stale, re-plan: wave {wave.id}: " + "; ".join(stale[:10]))
                    self._window_check(context, folder, writer, book, wave)
                    self._throttle_wave(folder, writer, wave)
                    submit_reassignment(writer, snap, {tp: m.target for tp, m in todo.items()})
                    book = self._advance_wave(folder, book, wave.id, SUBMITTED)
                    wave = book.wave(wave.id)
                    self.log.info("wave %d submitted: %d partition(s), %d bytes to copy", wave.id, len(todo),
                                  wave.bytes_total)
                if self._finished_inline(client, folder, wave):
                    book = self._advance_wave(folder, book, wave.id, DONE)
                    self.log.info("wave %d done (before deferring)", wave.id)
                    continue
                self._defer(context, folder, wave)
        self.log.info("all %d waves done (%d partitions)", len(book.waves), book.total_partitions)
        return {"waves": len(book.waves), "partitions": book.total_partitions}

    def _advance_wave(self, folder: RunFolder, book: WaveBook, wave_id: int, to: WaveStatus) -> WaveBook:
        """Move one wave to ``to`` (checked against :data:`procedures.waves.book.ALLOWED`, stamped with
        :attr:`clock`) and save ``waves.json``: the executor's only way to change a wave's status."""
        book = book.advance(wave_id, to, self.clock())
        book.save(folder.wave_progress)
        if to == DONE:
            WindowBook.load(folder).wave_done(wave_id, self.clock(), self.log).save(folder)
        return book

    # -- maintenance windows -----------------------------------------------------------------

    def _gate(self, context: Any) -> WindowGate | None:
        return window_gate(configured_windows(in_task=True), str(self.zk_conn_id), context["dag"].dag_id,
                           as_bool(self.outside_window))

    def _window_check(self, context: Any, folder: RunFolder, writer, book: WaveBook, wave: WaveSpec) -> None:
        """Before a new wave: start it only if it fits in the open window; else wait (deferred) for the
        next opening, keeping (or, with ``between_windows=remove``, removing) the throttles."""
        windows = WindowBook.load(folder)
        gate = self._gate(context)
        if gate is None:
            if as_bool(self.outside_window) and not windows.outside_window_noted:
                self.log.warning("outside_window=true: this run ignores the maintenance windows (recorded)")
                windows.note_outside_window()
                windows.save(folder)
            return
        plan = load_plan_artifacts(str(folder.plan_dir))
        costs = run_costs(self.poll_interval_s, book.waves)      # the shared model (planning/wave_time.py)
        factor = measured_factor((run_wave_seconds(plan.waves[w.id].predicted_seconds, plan.throttle_bytes_per_s,
                                                   self._rate_or_none(), 1.0, costs),
                                  float(w.done_at) - float(w.submitted_at))
                                 for w in book.waves if w.status == DONE and w.submitted_at and w.done_at)
        predicted = run_wave_seconds(plan.waves[wave.id].predicted_seconds, plan.throttle_bytes_per_s,
                                     self._rate_or_none(), factor, costs)
        now = datetime.fromtimestamp(self.clock(), tz=timezone.utc)
        if too_long_for_every_window(gate, [predicted]):
            # the guards checked the plan's figures; the waves run so far say this one is slower: waiting
            # for a window it can never fit would wait forever (each opening deferring to the next)
            reason = (f"wave {wave.id} is now predicted to take {predicted:.0f}s (the plan's figure x {factor:.2f}, "
                      f"the factor measured on this run's finished waves), longer than the longest window admitting "
                      f"{context['dag'].dag_id} ({gate.longest}): it could never start. Nothing of it was written; "
                      "the waves before it are done. Lengthen the window in the windows file and clear execute_waves "
                      "to resume at this wave")
            windows.refuse(wave.id, self.clock(), reason)
            windows.save(folder)
            raise OutsideWindow(reason)
        decision = decide_wave(gate, now, predicted, waited=windows.waited_before(wave.id))
        windows.decided(wave.id, self.clock(), decision, predicted, factor)
        if decision.stop:
            windows.refuse(wave.id, self.clock(), decision.reason)     # the report says "wave N was not started"
            windows.save(folder)
            raise OutsideWindow(f"wave {wave.id} not started: {decision.reason}")
        if decision.start:
            windows.save(folder)
            self.log.info("window guard: wave %d starts: %s", wave.id, decision.reason)
            return
        if decision.resume is None:
            windows.save(folder)
            raise OutsideWindow(f"wave {wave.id}: {decision.reason}, and no window admitting "
                                f"{context['dag'].dag_id} opens within a year: fix the windows file")
        removed = False
        if str(self.between_windows) == "remove":
            pause_throttles(folder, writer)
            removed = True
        windows.paused(wave.id, self.clock(), decision, removed)
        windows.save(folder)
        self.log.warning("window guard: wave %d not started: %s; waiting (deferred, no worker held) until %s opens at "
                         "%s; throttles %s", wave.id, decision.reason, decision.resume.window.name,
                         decision.resume.opens.isoformat(timespec="seconds"),
                         "removed (re-set on resume)" if removed else "kept (data may still be catching up)")
        notify_event(context, folder, "window_paused", self.log,
                     body=f"Wave {wave.id} was not started: {decision.reason}. The run waits (deferred) and resumes "
                          f"when window {decision.resume.window.name} opens at "
                          f"{decision.resume.opens.isoformat(timespec='minutes')}; the throttles are "
                          f"{'removed until then' if removed else 'kept'}.",
                     fields={"waves done": f"{sum(1 for w in book.waves if w.status == DONE)}/{len(book.waves)}",
                             "resumes at": decision.resume.opens.isoformat(timespec="minutes")})
        self.defer(trigger=DateTimeTrigger(moment=decision.resume.opens), method_name="resume_after_window")

    def _finished_inline(self, client, folder: RunFolder, wave: WaveSpec) -> bool:
        """Poll the wave here for up to ``inline_wait_s`` (never past its deadline) before deferring: a
        wave that finishes that fast never defers (:mod:`operators.deferral`)."""
        topics = {m.tp.topic for m in wave.moves}

        def seen() -> str:
            snap = read_snapshot(client, topics=topics, with_configs=False)
            progress, listed = wave_state(wave, snap)
            record_poll(folder.root, progress, 0.0, 0.0, self._rate_or_none(), time.time())   # the live page sees it
            if progress.complete and not listed:
                return "done"
            # a destination broker gone: the trigger judges it and tells people now, not after the
            # inline wait (a controller that has not started the node yet is normal right after a submit)
            gone = any("not registered" in c.cause for c in blocking_causes(snap, wave))
            return "hand_over" if gone else "waiting"

        deadline = (wave.submitted_at or time.time()) + float(self.wave_timeout_s)
        return wait_inline(seen, float(self.inline_wait_s), float(self.poll_interval_s), deadline)

    def _throttle_wave(self, folder: RunFolder, writer, wave: WaveSpec) -> None:
        plan = load_plan_artifacts(str(folder.plan_dir))
        art = plan.waves[wave.id]
        rate = resolve_rate(self.throttle_bytes_per_sec, plan.throttle_bytes_per_s)
        record_then_apply(folder, writer, art.throttles.values(), art.throttled_brokers, rate)

    def _defer(self, context: Any, folder: RunFolder, wave: WaveSpec) -> None:
        deadline = (wave.submitted_at or time.time()) + float(self.wave_timeout_s)
        remember_broker_logs(folder.root, self.broker_logs)
        trigger = WaveDoneTrigger(
            zk_conn_id=self.zk_conn_id, run_id=context["run_id"], wave_id=wave.id, deadline=deadline,
            run_dir=str(folder.root), poll_interval=float(self.poll_interval_s),
            stall_warning_s=None if self.stall_warning_s in (None, "", "None") else float(self.stall_warning_s),
            stall_timeout_s=None if self.stall_timeout_s in (None, "", "None") else float(self.stall_timeout_s),
            not_before=not_before(float(self.min_defer_s)), throttle_bytes_per_s=self._rate_or_none(),
            dag_id=context["dag"].dag_id, notify_conn_ids=conn_ids_of(context))
        self.defer(trigger=trigger, method_name="execute_complete",
                   timeout=timedelta(seconds=max(1.0, deadline - time.time()) + 60))

    def _rate_or_none(self) -> int | None:
        try:
            return resolve_rate(self.throttle_bytes_per_sec, None)
        except KafkaZkError:
            return None

    def _dry_run(self, context: Any, folder: RunFolder) -> dict:
        book = build_wave_book(str(folder.plan_dir))
        self.log.info("dry run of plan %s: every write below is planned and audited, none is made", book.plan_hash)
        with self.session(context) as (client, writer):
            snap = read_snapshot(client, with_configs=False)
            for wave in book.waves:
                self._throttle_wave(folder, writer, wave)
                submit_reassignment(writer, snap, wave.targets)
                self.log.info("dry run: wave %d would submit %d partition(s)", wave.id, len(wave.moves))
        return {"waves": len(book.waves), "partitions": book.total_partitions, "dry_run": True}
