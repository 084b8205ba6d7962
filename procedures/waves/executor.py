"""The wave executor, without Airflow: submit the plan's waves one at a time, resumably.

:class:`WaveExecutor` walks the waves in order (:meth:`WaveExecutor.advance`) and, for the first one
not done:

* all its partitions already finished in ZooKeeper and the admin node gone → marks it done
  (a wave finished while the step was down is never submitted again);
* ``/admin/reassign_partitions`` holds it ("ours": entries ⊆ the wave, same targets) → waits;
* the node holds anything else → :class:`ForeignReassignment`;
* otherwise → checks the wave's unfinished partitions still have the replicas the plan assumed
  (else :class:`StalePlan`), asks the maintenance windows (:meth:`WaveExecutor._window_check`),
  merges the wave's throttled replicas, submits the unfinished partitions and records
  ``submitted`` in ``waves.json``;
* then polls a wave submitted or found running for up to ``inline_wait_s``: one finished by then
  is marked done; otherwise the executor returns :class:`WaitForWave` (the caller waits —
  Airflow defers on :class:`operators.triggers.reassignment.WaveDoneTrigger`, the rehearsal runs
  :class:`procedures.waves.watch.WaveWatch` on its simulated clock — and calls
  :meth:`WaveExecutor.wave_ended` with the wait's event), or :class:`WaitForWindow` when the next
  wave must wait for a window (then :meth:`WaveExecutor.window_opened`); :class:`AllDone` at the end.

Progress lives in ZooKeeper and the run folder (``waves.json``, ``windows.json``), never in memory,
so a step that is killed, retried or cleared resumes where the cluster is. Each wave's deadline is
absolute (submission time + ``wave_timeout_s``). Its seams (:class:`Seams`): the ZooKeeper session
(a client and the audited writer), the clock (epoch seconds), the notifier, the windows gate and
the log; :mod:`operators.reassignment.execute` gives Airflow's, :mod:`procedures.rehearsal.executor`
the rehearsal's.

Failure: the approved hash must match the plan (:class:`PlanHashMismatch`); a wave's event other
than ``done`` raises :class:`WaveTimeout`, :class:`WaveStalled` or :class:`WaveWaitFailed`
(:func:`raise_for_event`); a wave no window admits raises :class:`OutsideWindow`
(all :mod:`procedures.errors`); nothing is written after a refusal.
"""

from __future__ import annotations

import json
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Mapping, Protocol

from kafka_zk.admin.reassignment import classify_live_reassignment, submit_reassignment
from kafka_zk.errors import ForeignReassignment, KafkaZkError, StalePlan
from planning.plan_folder.read import load_plan_artifacts
from kafka_zk.snapshot import read_snapshot
from kafka_zk.writer import ZkWriter
from procedures.errors import OutsideWindow, PlanHashMismatch, WaveStalled, WaveTimeout, WaveWaitFailed
from procedures.inline_wait import wait_inline
from procedures.waves.poll_record import record_poll
from procedures.reports.state_change import remember_broker_logs, write_stall_excerpt
from procedures.run_folder import RunFolder
from procedures.waves.book import (DONE, SUBMITTED, WaveBook, WaveMove, WaveSpec, WaveStatus, live_partitions,
                                   partition_done, wave_state)
from procedures.waves.stall_causes import blocking_causes
from procedures.throttles import record_then_apply, resolve_rate
from procedures.windows.guard import (WindowGate, decide_wave, measured_factor, run_costs, run_wave_seconds,
                                      too_long_for_every_window)
from procedures.windows.pause import WindowBook, pause_throttles, resume_throttles

WAIT_ERRORS = {"timeout": WaveTimeout, "stalled": WaveStalled, "error": WaveWaitFailed}


def raise_for_event(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """The wave wait's event when the wave is done; otherwise the error its status maps to."""
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


def _optional_s(value: Any) -> float | None:
    return None if value in (None, "", "None") else float(value)


class Notifier(Protocol):
    """Tells people (the run's channels); must not raise for a channel that is down."""

    def __call__(self, event: str, *, body: str, fields: Mapping[str, Any], outcome: str | None = None) -> None: ...


@dataclass(frozen=True)
class Seams:
    """What the executor needs of the world, all of it I/O (module docstring)."""

    session: Callable[[], AbstractContextManager[tuple[Any, ZkWriter]]]   # a client and the audited writer
    clock: Callable[[], float]                                             # epoch seconds
    notify: Notifier
    gate: Callable[[], WindowGate | None]                                 # the windows this run obeys
    log: Any


@dataclass(frozen=True)
class Settings:
    """The step's parameters (the runbook's Params, rendered)."""

    runbook: str                               # the DAG id: what the windows must admit
    task_id: str = "execute_waves"             # the step, as the failure notification names it
    throttle_bytes_per_sec: Any = None
    wave_timeout_s: float = 6 * 3600.0
    poll_interval_s: float = 5.0
    stall_warning_s: float | None = None
    stall_timeout_s: float | None = None
    broker_logs: str = ""
    inline_wait_s: float = 20.0
    outside_window: bool = False
    between_windows: str = "keep"             # "keep" or "remove" the throttles while waiting for a window

    @classmethod
    def of(cls, runbook: str, task_id: str = "execute_waves", **params: Any) -> "Settings":
        """From raw Param values (a stall threshold of ``""`` or ``"None"`` is none)."""
        for key in ("stall_warning_s", "stall_timeout_s"):
            if key in params:
                params[key] = _optional_s(params[key])
        for key in ("wave_timeout_s", "poll_interval_s", "inline_wait_s"):
            if key in params:
                params[key] = float(params[key])
        params["broker_logs"] = params.get("broker_logs") or ""
        params["between_windows"] = str(params.get("between_windows", "keep"))
        return cls(runbook=runbook, task_id=task_id, **params)


@dataclass(frozen=True)
class AllDone:
    result: dict[str, Any]


@dataclass(frozen=True)
class WaitForWave:
    """Wait for wave ``wave_id`` to end (the trigger's primitives), then call :meth:`WaveExecutor.wave_ended`."""

    wave_id: int
    deadline: float
    run_dir: str
    poll_interval: float
    stall_warning_s: float | None
    stall_timeout_s: float | None
    throttle_bytes_per_s: int | None


@dataclass(frozen=True)
class WaitForWindow:
    """Wait until ``opens``, then call :meth:`WaveExecutor.window_opened`."""

    opens: datetime


Step = AllDone | WaitForWave | WaitForWindow


class WaveExecutor:
    """Run every wave of the plan in ``folder`` to completion, resumably (see the module docstring)."""

    def __init__(self, folder: RunFolder, settings: Settings, seams: Seams) -> None:
        self.folder = folder
        self.settings = settings
        self.seams = seams
        self.log = seams.log

    # -- entry points ------------------------------------------------------------------------

    def start(self, approved_hash: str | None) -> Step:
        """Resume from ``waves.json`` (or build it from the plan); ``approved_hash``: the plan the run
        approved (None: a rehearsal's fresh book, which only its private copy sees)."""
        folder = self.folder
        book = WaveBook.load(folder.wave_progress) if approved_hash is not None else None
        if book is None:
            book = build_wave_book(str(folder.plan_dir))
            book.save(folder.wave_progress)
        if approved_hash is not None and book.plan_hash != approved_hash:
            raise PlanHashMismatch(f"{folder.wave_progress} belongs to plan {book.plan_hash[:12]}…, the approved "
                                   f"plan is {approved_hash[:12]}…: re-plan and approve again")
        return self.advance(book)

    def wave_ended(self, event: Mapping[str, Any]) -> Step:
        """The wait's event: on ``done`` go on; otherwise record, tell and raise the cause."""
        folder = self.folder
        book = WaveBook.load(folder.wave_progress)
        if event.get("status") != "done":
            # the cause the wait named (dead end, stall, timeout) for the report and notification
            folder.write_json(folder.wave_failure, {"wave_id": event.get("wave_id"), "status": event.get("status"),
                                                    "message": str(event.get("message", event.get("status")))})
            write_stall_excerpt(folder.root, event.get("wave_id", -1), event.get("pending", ()),
                                str(event.get("message", event.get("status"))))
            self._notify_failed(event)
            raise_for_event({**event, "message": (
                f"{event.get('message', event.get('status'))}. The wave keeps running in the cluster; the teardown "
                "keeps its throttles until it finishes. Clear execute_waves to resume waiting, or see the runbook's "
                "rollback")})
        folder.wave_failure.unlink(missing_ok=True)      # a retry that got through: no stale cause
        wave = book.wave(int(event["wave_id"]))
        if wave.status != DONE:
            book = self._advance_wave(book, wave.id, DONE)
        self.log.info("wave %d done in %.1fs", wave.id, event.get("elapsed_s", 0.0))
        return self.advance(book)

    def window_opened(self) -> Step:
        """The window the run waited for has opened: re-set throttles if they were removed, go on."""
        folder = self.folder
        windows = WindowBook.load(folder)
        if windows.throttles_removed_at_pause:
            with self.seams.session() as (_client, writer):
                resume_throttles(folder, writer, self.settings.throttle_bytes_per_sec)
            self.log.info("window open: throttles re-set on the plan's brokers before the next wave")
        windows.resumed(self.seams.clock())
        windows.save(folder)
        return self.advance(WaveBook.load(folder.wave_progress))

    def dry_run(self) -> dict:
        """Every wave's write planned and audited by the session's dry-run writer; nothing waited on."""
        book = build_wave_book(str(self.folder.plan_dir))
        self.log.info("dry run of plan %s: every write below is planned and audited, none is made", book.plan_hash)
        with self.seams.session() as (client, writer):
            snap = read_snapshot(client, with_configs=False)
            for wave in book.waves:
                self._throttle_wave(writer, wave)
                submit_reassignment(writer, snap, wave.targets)
                self.log.info("dry run: wave %d would submit %d partition(s)", wave.id, len(wave.moves))
        return {"waves": len(book.waves), "partitions": book.total_partitions, "dry_run": True}

    # -- the loop ----------------------------------------------------------------------------

    def advance(self, book: WaveBook) -> Step:
        folder = self.folder
        with self.seams.session() as (client, writer):
            for wave in book.waves:
                if wave.status == DONE:
                    continue
                snap = read_snapshot(client, topics={m.tp.topic for m in wave.moves}, with_configs=False)
                live = live_partitions(snap.partitions())
                progress, listed = wave_state(wave, snap)
                if progress.complete and not listed:
                    self.log.info("wave %d already finished in ZooKeeper: not submitting it again", wave.id)
                    book = self._advance_wave(book, wave.id, DONE)
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
                    book = self._advance_wave(book, wave.id, SUBMITTED)
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
                    opens = self._window_check(writer, book, wave)
                    if opens is not None:
                        return WaitForWindow(opens)
                    self._throttle_wave(writer, wave)
                    submit_reassignment(writer, snap, {tp: m.target for tp, m in todo.items()})
                    book = self._advance_wave(book, wave.id, SUBMITTED)
                    wave = book.wave(wave.id)
                    self.log.info("wave %d submitted: %d partition(s), %d bytes to copy", wave.id, len(todo),
                                  wave.bytes_total)
                if self._finished_inline(client, wave):
                    book = self._advance_wave(book, wave.id, DONE)
                    self.log.info("wave %d done (before deferring)", wave.id)
                    continue
                return self._wait_for(wave)
        self.log.info("all %d waves done (%d partitions)", len(book.waves), book.total_partitions)
        return AllDone({"waves": len(book.waves), "partitions": book.total_partitions})

    def _advance_wave(self, book: WaveBook, wave_id: int, to: WaveStatus) -> WaveBook:
        """Move one wave to ``to`` (checked against :data:`procedures.waves.book.ALLOWED`, stamped with the
        clock) and save ``waves.json``: the executor's only way to change a wave's status."""
        book = book.advance(wave_id, to, self.seams.clock())
        book.save(self.folder.wave_progress)
        if to == DONE:
            WindowBook.load(self.folder).wave_done(wave_id, self.seams.clock(), self.log).save(self.folder)
        return book

    # -- maintenance windows -----------------------------------------------------------------

    def _window_check(self, writer: ZkWriter, book: WaveBook, wave: WaveSpec) -> datetime | None:
        """Before a new wave: None to start it now (it fits the open window); else when the next opening
        comes (the caller waits for it), keeping (or, with ``between_windows=remove``, removing) the
        throttles; :class:`OutsideWindow` when it may never start."""
        folder, s, clock = self.folder, self.settings, self.seams.clock
        windows = WindowBook.load(folder)
        gate = self.seams.gate()
        if gate is None:
            if s.outside_window and not windows.outside_window_noted:
                self.log.warning("outside_window=true: this run ignores the maintenance windows (recorded)")
                windows.note_outside_window()
                windows.save(folder)
            return None
        plan = load_plan_artifacts(str(folder.plan_dir))
        costs = run_costs(s.poll_interval_s, book.waves)      # the shared model (planning/wave_time.py)
        factor = measured_factor((run_wave_seconds(plan.waves[w.id].predicted_seconds, plan.throttle_bytes_per_s,
                                                   self._rate_or_none(), 1.0, costs),
                                  float(w.done_at) - float(w.submitted_at))
                                 for w in book.waves if w.status == DONE and w.submitted_at and w.done_at)
        predicted = run_wave_seconds(plan.waves[wave.id].predicted_seconds, plan.throttle_bytes_per_s,
                                     self._rate_or_none(), factor, costs)
        now = datetime.fromtimestamp(clock(), tz=timezone.utc)
        if too_long_for_every_window(gate, [predicted]):
            # the guards checked the plan's figures; the waves run so far say this one is slower: waiting
            # for a window it can never fit would wait forever (each opening deferring to the next)
            reason = (f"wave {wave.id} is now predicted to take {predicted:.0f}s (the plan's figure x {factor:.2f}, "
                      f"the factor measured on this run's finished waves), longer than the longest window admitting "
                      f"{s.runbook} ({gate.longest}): it could never start. Nothing of it was written; "
                      "the waves before it are done. Lengthen the window in the windows file and clear execute_waves "
                      "to resume at this wave")
            windows.refuse(wave.id, clock(), reason)
            windows.save(folder)
            raise OutsideWindow(reason)
        decision = decide_wave(gate, now, predicted, waited=windows.waited_before(wave.id))
        windows.decided(wave.id, clock(), decision, predicted, factor)
        if decision.stop:
            windows.refuse(wave.id, clock(), decision.reason)     # the report says "wave N was not started"
            windows.save(folder)
            raise OutsideWindow(f"wave {wave.id} not started: {decision.reason}")
        if decision.start:
            windows.save(folder)
            self.log.info("window guard: wave %d starts: %s", wave.id, decision.reason)
            return None
        if decision.resume is None:
            windows.save(folder)
            raise OutsideWindow(f"wave {wave.id}: {decision.reason}, and no window admitting "
                                f"{s.runbook} opens within a year: fix the windows file")
        removed = False
        if s.between_windows == "remove":
            pause_throttles(folder, writer)
            removed = True
        windows.paused(wave.id, clock(), decision, removed)
        windows.save(folder)
        self.log.warning("window guard: wave %d not started: %s; waiting (deferred, no worker held) until %s opens at "
                         "%s; throttles %s", wave.id, decision.reason, decision.resume.window.name,
                         decision.resume.opens.isoformat(timespec="seconds"),
                         "removed (re-set on resume)" if removed else "kept (data may still be catching up)")
        self.seams.notify(
            "window_paused",
            body=f"Wave {wave.id} was not started: {decision.reason}. The run waits (deferred) and resumes "
                 f"when window {decision.resume.window.name} opens at "
                 f"{decision.resume.opens.isoformat(timespec='minutes')}; the throttles are "
                 f"{'removed until then' if removed else 'kept'}.",
            fields={"waves done": f"{sum(1 for w in book.waves if w.status == DONE)}/{len(book.waves)}",
                    "resumes at": decision.resume.opens.isoformat(timespec="minutes")})
        return decision.resume.opens

    # -- one wave ----------------------------------------------------------------------------

    def _finished_inline(self, client: Any, wave: WaveSpec) -> bool:
        """Poll the wave here for up to ``inline_wait_s`` (never past its deadline) before handing it to
        the wait: a wave that finishes that fast never waits (:mod:`procedures.inline_wait`)."""
        topics = {m.tp.topic for m in wave.moves}

        def seen() -> str:
            snap = read_snapshot(client, topics=topics, with_configs=False)
            progress, listed = wave_state(wave, snap)
            record_poll(self.folder.root, progress, 0.0, 0.0, self._rate_or_none(), time.time())   # the live page
            if progress.complete and not listed:
                return "done"
            # a destination broker gone: the wait judges it and tells people now, not after the
            # inline wait (a controller that has not started the node yet is normal right after a submit)
            gone = any("not registered" in c.cause for c in blocking_causes(snap, wave))
            return "hand_over" if gone else "waiting"

        deadline = (wave.submitted_at or time.time()) + self.settings.wave_timeout_s
        return wait_inline(seen, self.settings.inline_wait_s, self.settings.poll_interval_s, deadline)

    def _throttle_wave(self, writer: ZkWriter, wave: WaveSpec) -> None:
        plan = load_plan_artifacts(str(self.folder.plan_dir))
        art = plan.waves[wave.id]
        rate = resolve_rate(self.settings.throttle_bytes_per_sec, plan.throttle_bytes_per_s)
        record_then_apply(self.folder, writer, art.throttles.values(), art.throttled_brokers, rate)

    def _wait_for(self, wave: WaveSpec) -> WaitForWave:
        s = self.settings
        remember_broker_logs(self.folder.root, s.broker_logs)
        return WaitForWave(wave.id, (wave.submitted_at or time.time()) + s.wave_timeout_s, str(self.folder.root),
                           s.poll_interval_s, s.stall_warning_s, s.stall_timeout_s, self._rate_or_none())

    def _notify_failed(self, event: Mapping[str, Any]) -> None:
        """The "failed" notification as the failure is seen, not when the teardown (which may wait
        days for the wave with its throttles kept) and the run end; the notify step tells again."""
        try:
            self.seams.notify(
                "failed", outcome=f"FAILED at {self.settings.task_id}",
                body=f"Wave {event.get('wave_id')} failed ({event.get('status')}): "
                     f"{event.get('message', event.get('status'))}. The wave keeps running in the cluster "
                     "and keeps its throttles until it finishes; the teardown waits for it and tells "
                     "when it removes them.",
                fields={"wave": event.get("wave_id"), "status": event.get("status"),
                        "still moving": ", ".join(event.get("pending") or ())})
        except Exception as exc:  # noqa: BLE001 - a channel down must not hide the failure itself
            self.log.error("failure notification not sent: %s", exc)

    def _rate_or_none(self) -> int | None:
        try:
            return resolve_rate(self.settings.throttle_bytes_per_sec, None)
        except KafkaZkError:
            return None
