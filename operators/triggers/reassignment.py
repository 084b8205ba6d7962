"""WaveDoneTrigger: wait, without holding a worker, until the controller finishes one wave.

The trigger carries only primitives (connection id, run id, wave id, an *absolute* deadline,
the run folder and poll timings), so a restarted triggerer resumes the same wait with the same
clock (``self.clock``, :mod:`operators.triggers.clock`). Each poll reads the wave's partitions
and ``/admin/reassign_partitions`` through :func:`kafka_zk.snapshot.read_snapshot` in a worker
thread (``asyncio.to_thread``: kazoo calls never block the event loop), plus the follower log
sizes of the connection's ``log_dirs_source`` when it names one
(:mod:`procedures.plan.log_dirs_source`), and logs one progress line: partitions done/total for the
wave and the whole plan, bytes remaining, throughput and ETA, and what the bytes were judged
from (follower log sizes, or ISR joins only).

**Stalls.** Progress is a change in partitions done or bytes remaining. With follower log sizes
a healthy copy changes at every poll, so a stall is judged from those bytes: the warning comes
after ``stall_warning_s`` without a byte copied (default: the longer of 60 s, ten polls and the
source's max age plus two polls). From ISR joins only, a healthy copy shows no change until a
replica joins, so nothing is called a stall sooner than 1.5× the time the wave's largest
partition takes at ``throttle_bytes_per_s`` (the default warning is that, at least 60 s; an
explicit ``stall_warning_s`` or ``stall_timeout_s`` is raised to it).

It yields exactly one :class:`TriggerEvent`, ``status`` being:

* ``done`` — every partition of the wave has replicas == target, nothing adding/removing,
  the whole target in the ISR, and ``/admin/reassign_partitions`` no longer lists any of them
  (gone, or — if someone else wrote one since — holding none of ours);
* ``stalled`` — no progress for ``stall_timeout_s`` (judged as above); every stall warning and
  ``stalled`` message names the stopped partitions and the likely cause
  (:mod:`procedures.waves.stall_causes`: follower up but failing its fetches — a lowered
  ``max.message.bytes`` named — …);
* ``stalled`` with ``dead_end`` — at once when a topic of the wave was deleted while its
  partition moved (it can never finish); and when a cause that waiting cannot clear has lasted
  ``dead_end_s``: a destination broker not registered, no controller, or a controller that
  never started the node (the message gives the fix: restart the broker or re-plan; force a
  controller election by deleting ``/controller``). A controller that has not started the node
  counts only on evidence (:mod:`procedures.waves.controller_evidence`): the same controller
  epoch, its session alive, for ``min(CONTROLLER_EVIDENCE_S, dead_end_s)``; before that a slow
  controller is logged as such, never with the advice to move it;
* ``timeout`` — the absolute ``deadline`` (epoch seconds) passed (the message names the likely
  cause of each stopped partition, as a stall's does);
* ``error`` — ZooKeeper unreachable for longer than ``zk_outage_s`` (a session expiry or a
  short outage is retried at every poll with a fresh client, logged with its real cause, and
  the message names that cause), the progress file unreadable, or the connection's
  ``log_dirs_source`` malformed (the message says which).

**The stall notification** (one per wait, to the run's ``notify_conn_ids``) goes out when the
problem is first seen: when a cause waiting cannot clear (a destination broker not registered,
no controller...) has lasted ``BLOCKED_NOTICE_S`` (10 s, at least three polls), at the first
stall warning, and in any case before a ``stalled`` or
``timeout`` event, naming the causes.

``not_before`` (epoch seconds, set by the executor to a few seconds after it defers) holds a
``done`` back until then (:mod:`operators.triggers.base`, :mod:`operators.deferral`).

The payload also carries the last progress figures. The operator's ``execute_complete`` maps
every status but ``done`` to an error type (:mod:`operators.errors`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator

from airflow.triggers.base import TriggerEvent

from kazoo.exceptions import KazooException

from kafka_zk.errors import KafkaZkError, ZkUnavailable
from kafka_zk.outage import ZK_OUTAGE_S, zk_cause
from procedures.reports.history import record_outage
from procedures.run_folder import RunFolder
from kafka_zk.snapshot import read_snapshot
from operators.notifications.runbook import build, deliver
from procedures.plan.log_dirs_source import LogDirsSource, read_log_dirs
from procedures.waves.controller_evidence import CONTROLLER_EVIDENCE_S, ControllerWatch
from procedures.waves.stall_causes import CONTROLLER, StallCause, blocking_causes, stall_causes
from procedures.waves.book import WaveBook, WaveProgress, moved, overall_done, progress_line, wave_state
from procedures.reports.live_progress import record_poll
from procedures.reports.state_change import write_stall_excerpt
from operators.triggers.base import ZooKeeperPollTrigger


DEAD_END_S = 300.0
BLOCKED_NOTICE_S = 10.0
MIN_STALL_WARNING_S = 60.0


@dataclass(frozen=True)
class Poll:
    """What one poll saw."""

    book: WaveBook
    progress: WaveProgress
    still_listed: bool
    gone: tuple[str, ...]                 # topics of the wave deleted
    blocked: tuple[StallCause, ...]       # causes waiting cannot clear
    sizes_note: str                       # why follower log sizes were not used ("" when they were)
    max_age_s: float | None               # the log-dirs source's max age (None: no source)
    controller: int | None = None         # /controller's broker
    controller_epoch: int | None = None   # /controller_epoch


class WaveDoneTrigger(ZooKeeperPollTrigger):
    """Fires once wave ``wave_id`` of run ``run_id`` is finished by the controller (or stalls)."""

    def __init__(self, zk_conn_id: str, run_id: str, wave_id: int, deadline: float, run_dir: str,
                 poll_interval: float = 2.0, stall_warning_s: float | None = None,
                 stall_timeout_s: float | None = None, not_before: float | None = None,
                 zk_outage_s: float = ZK_OUTAGE_S, throttle_bytes_per_s: float | None = None,
                 dead_end_s: float = DEAD_END_S, dag_id: str = "", notify_conn_ids: list[str] | None = None) -> None:
        super().__init__(zk_conn_id, deadline, poll_interval, not_before)
        self.dag_id = dag_id
        self.notify_conn_ids = list(notify_conn_ids or [])
        self.throttle_bytes_per_s = None if throttle_bytes_per_s in (None, 0) else float(throttle_bytes_per_s)
        self.zk_outage_s = float(zk_outage_s)
        self.run_id = run_id
        self.wave_id = int(wave_id)
        self.run_dir = str(run_dir)
        self.stall_warning_s = None if stall_warning_s is None else float(stall_warning_s)
        self.stall_timeout_s = None if stall_timeout_s is None else float(stall_timeout_s)
        self.dead_end_s = float(dead_end_s)
        self.blocked_notice_s = max(BLOCKED_NOTICE_S, 3 * self.poll_interval)
        self.controller_evidence_s = min(CONTROLLER_EVIDENCE_S, self.dead_end_s)
        self._source: LogDirsSource | None = None
        self._source_read = False

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{__name__}.WaveDoneTrigger", {
            "zk_conn_id": self.zk_conn_id, "run_id": self.run_id, "wave_id": self.wave_id,
            "deadline": self.deadline, "run_dir": self.run_dir, "poll_interval": self.poll_interval,
            "stall_warning_s": self.stall_warning_s, "stall_timeout_s": self.stall_timeout_s,
            "not_before": self.not_before, "zk_outage_s": self.zk_outage_s,
            "throttle_bytes_per_s": self.throttle_bytes_per_s, "dead_end_s": self.dead_end_s,
            "dag_id": self.dag_id, "notify_conn_ids": self.notify_conn_ids})

    def _notify_stall(self, what: str, progress: WaveProgress, causes: str, then: str) -> None:
        """The stall notification (once per wait), to the run's channels; never raises."""

        folder = RunFolder(Path(self.run_dir))
        try:
            note = build("stall", folder, self.dag_id or "runbook", self.run_id,
                         f"Wave {self.wave_id} {what} ({progress.done}/{progress.total} partitions done; judged "
                         f"from {progress.source}). Stopped: {causes or 'see the task log'}. {then}",
                         fields={"wave": self.wave_id, "still moving": ", ".join(progress.pending[:10]),
                                 "cause": causes or "unknown"})
            deliver(note, folder, self.notify_conn_ids, {}, self.log)
        except Exception as e:  # a notification must never end the wait
            self.log.error("stall notification not sent: %s", e)

    # -- thresholds --------------------------------------------------------------------------

    def stall_floor_s(self, book: WaveBook) -> float:
        """No stall can be judged from ISR joins sooner than 1.5× the time the wave's largest
        partition takes at the throttle (a healthy 40 GiB copy at 40 MiB/s shows no ISR change
        for 17 minutes)."""
        if not self.throttle_bytes_per_s:
            return 0.0
        largest = max((m.size for m in book.wave(self.wave_id).moves), default=0)
        return 1.5 * largest / self.throttle_bytes_per_s

    def warning_after_s(self, book: WaveBook, progress: WaveProgress, max_age_s: float | None) -> float:
        """Seconds without progress before a stall warning (see the module docstring)."""
        if progress.measured:
            if self.stall_warning_s is not None:
                return self.stall_warning_s
            return max(MIN_STALL_WARNING_S, 10 * self.poll_interval, (max_age_s or 0.0) + 2 * self.poll_interval)
        floor = self.stall_floor_s(book)
        return max(self.stall_warning_s if self.stall_warning_s is not None else MIN_STALL_WARNING_S, floor)

    def timeout_after_s(self, book: WaveBook, progress: WaveProgress) -> float | None:
        if self.stall_timeout_s is None:
            return None
        return self.stall_timeout_s if progress.measured else max(self.stall_timeout_s, self.stall_floor_s(book))

    # -- blocking part, run in a thread ------------------------------------------------------

    def _log_dirs_source(self) -> LogDirsSource | None:
        if not self._source_read:
            self._client()
            self._source = self._hook.log_dirs_source()
            self._source_read = True
        return self._source

    def _poll(self) -> Poll:
        book = WaveBook.load(RunFolder(Path(self.run_dir)).wave_progress)
        if book is None:
            raise KafkaZkError(f"{self.run_dir}/waves.json is missing: the execute_waves task writes it "
                               "before it waits; re-run execute_waves")
        wave = book.wave(self.wave_id)
        topics = {m.tp.topic for m in wave.moves}
        client = self._client()
        snap = read_snapshot(client, topics=topics, with_configs=False)
        source = self._log_dirs_source()
        reading = read_log_dirs(source, client)
        progress, ours_listed = wave_state(wave, snap, reading.sizes)
        if reading.sizes is not None and not progress.measured:
            note = f"{source} has no size for a new replica still copying"
        else:
            note = reading.note
        return Poll(book, progress, ours_listed, tuple(sorted(t for t in topics if t not in snap.topics)),
                    tuple(blocking_causes(snap, wave)), note, None if source is None else source.max_age_s,
                    snap.controller_id, snap.controller_epoch)

    def _diagnose(self) -> list[StallCause]:
        """The likely cause of each stopped partition (a snapshot with config overrides)."""
        book = WaveBook.load(RunFolder(Path(self.run_dir)).wave_progress)
        wave = book.wave(self.wave_id)
        snap = read_snapshot(self._client(), topics={m.tp.topic for m in wave.moves}, with_configs=True)
        return stall_causes(snap, wave)

    async def _causes_text(self, watch: ControllerWatch, now: float) -> str:
        try:
            causes = await asyncio.to_thread(self._diagnose)
        except (KafkaZkError, KazooException) as exc:
            return f"cause not read ({zk_cause(exc)})"
        causes = [(watch.verdict(c, now, self.controller_evidence_s) or c) if c.kind == CONTROLLER else c
                  for c in causes]
        return "; ".join(str(c) for c in causes[:10]) or "no cause visible in ZooKeeper"

    def _weigh_controller(self, seen: Poll, watch: ControllerWatch,
                          now: float) -> tuple[tuple[StallCause, ...], ControllerWatch]:
        """The poll's blocking causes with the controller's counted only on evidence: replaced by
        its verdict once it has lasted ``controller_evidence_s``, left out (and logged as a slow
        controller, without advice) before that."""
        controller = next((c for c in seen.blocked if c.kind == CONTROLLER), None)
        watch = watch.observe(controller, seen.controller, seen.controller_epoch, now)
        if controller is None:
            return seen.blocked, watch
        verdict = watch.verdict(controller, now, self.controller_evidence_s)
        if verdict is None:
            self.log.info("wave %d: %s; waiting (a loaded controller can take this long: a forced election is "
                          "advised only if it lasts %.0fs)", self.wave_id, watch.observed(now),
                          self.controller_evidence_s)
            return tuple(c for c in seen.blocked if c is not controller), watch
        return tuple(verdict if c is controller else c for c in seen.blocked), watch

    # -- the event loop side -----------------------------------------------------------------

    def _event(self, status: str, progress: WaveProgress | None, message: str, **extra: Any) -> TriggerEvent:
        payload = {"status": status, "run_id": self.run_id, "wave_id": self.wave_id, "message": message}
        if progress is not None:
            payload.update(done=progress.done, total=progress.total, bytes_remaining=progress.bytes_remaining,
                           bytes_total=progress.bytes_total, pending=list(progress.pending),
                           progress_source=progress.source)
        payload.update(extra)
        return TriggerEvent(payload)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        started = self.clock.time()
        last_change = started
        last_key: tuple[int, int, str] | None = None     # (done, bytes remaining, source) at the last poll
        failing_since: float | None = None
        blocked_since: float | None = None
        watch = ControllerWatch()                        # evidence that the controller is not acting
        base: tuple[str, int, float] | None = None       # (source, bytes remaining, time) the rate is taken from
        note_logged: str | None = None
        excerpt_written = False
        stall_notified = False       # one stall notification per wait, sent when the problem is first seen
        last_cause = ""
        progress: WaveProgress | None = None

        async def notify_stall(what: str, causes: str, then: str = "The run keeps waiting; the wave keeps "
                                                                     "its throttles.") -> None:
            nonlocal stall_notified
            if not stall_notified and progress is not None and not progress.complete:
                stall_notified = True
                await asyncio.to_thread(self._notify_stall, what, progress, causes, then)

        ending = "The wait ends now: the step fails; the wave keeps its throttles until it finishes."
        try:
            while True:
                try:
                    seen = await asyncio.to_thread(self._poll)
                    progress = seen.progress
                    if failing_since is not None:      # an outage ridden out: the run's history names it
                        await asyncio.to_thread(record_outage, RunFolder(Path(self.run_dir)), f"wave {self.wave_id}",
                                                self.clock.time() - failing_since, last_cause)
                    failing_since = None
                except (ZkUnavailable, KazooException) as exc:
                    now = self.clock.time()
                    failing_since = failing_since or now
                    cause = last_cause = zk_cause(exc)
                    if now - failing_since >= self.zk_outage_s or now >= self.deadline:
                        yield self._event("error", progress, (
                            f"ZooKeeper unreachable for {now - failing_since:.0f}s while waiting on wave "
                            f"{self.wave_id} (last error: {cause}); the wave keeps running in the cluster"))
                        return
                    self.log.warning("wave %d: ZooKeeper read failed (%s); retrying for up to %.0fs more",
                                     self.wave_id, cause, self.zk_outage_s - (now - failing_since))
                    await asyncio.to_thread(self._close)   # the next poll builds a fresh client
                    await self._pause(now)
                    continue
                except KafkaZkError as exc:
                    yield self._event("error", progress, str(exc))
                    return
                now = self.clock.time()
                if seen.sizes_note != note_logged:
                    note_logged = seen.sizes_note
                    if note_logged:
                        self.log.info("wave %d: progress judged from ISR joins only (%s)", self.wave_id, note_logged)
                if base is None or base[0] != progress.source:
                    base = (progress.source, progress.bytes_remaining, now)
                if moved(last_key, progress):   # a source switch alone does not restart the stall clock
                    last_change = now
                last_key = (progress.done, progress.bytes_remaining, progress.source)
                copied = max(0, base[1] - progress.bytes_remaining)
                quiet = now - last_change
                warn_after = self.warning_after_s(seen.book, progress, seen.max_age_s)
                warn = quiet >= warn_after and not progress.complete
                self.log.info("%s", progress_line(progress, overall_done(seen.book, progress),
                                                  seen.book.total_partitions, now - base[2], copied, stalled=warn))
                blocked, watch = self._weigh_controller(seen, watch, now)
                if seen.gone and not progress.complete:
                    causes = await self._causes_text(watch, now)
                    await notify_stall("cannot finish", causes, ending)
                    yield self._event("stalled", progress, f"wave {self.wave_id} cannot finish: " + causes,
                                      dead_end=True)
                    return
                if progress.complete and not seen.still_listed:
                    if await self._too_early(now):   # see not_before in the docstring
                        continue
                    yield self._event("done", progress, f"wave {self.wave_id} finished",
                                      elapsed_s=round(now - started, 3))
                    return
                if now >= self.deadline:
                    causes = await self._causes_text(watch, now)
                    await notify_stall("was not finished by its deadline", causes, ending)
                    yield self._event("timeout", progress,
                                      f"wave {self.wave_id} not finished by its deadline "
                                      f"({progress.done}/{progress.total} partitions done; still moving: "
                                      f"{', '.join(progress.pending)}; stopped: {causes})")
                    return
                blocked_since = (blocked_since or now) if blocked else None
                if blocked:
                    text = "; ".join(str(c) for c in blocked[:10])
                    # a cause waiting cannot clear (a destination broker gone, a controller not acting on
                    # evidence): said once it has lasted BLOCKED_NOTICE_S (a broker mid-restart is no news)
                    if now - blocked_since >= min(self.blocked_notice_s, self.dead_end_s):
                        await notify_stall("is blocked", text, f"The run waits up to {self.dead_end_s:.0f}s for it "
                                           "to clear, then fails; the wave keeps its throttles.")
                    if now - blocked_since >= self.dead_end_s:
                        yield self._event("stalled", progress, f"wave {self.wave_id} cannot finish as the cluster "
                                          f"stands (for {now - blocked_since:.0f}s): {text}", dead_end=True)
                        return
                    self.log.warning("wave %d: %s (ending the wait if it lasts %.0fs more)", self.wave_id, text,
                                     self.dead_end_s - (now - blocked_since))
                causes = await self._causes_text(watch, now) if warn else ""
                await asyncio.to_thread(record_poll, self.run_dir, progress, copied / max(now - base[2], 1e-9), quiet,
                                        self.throttle_bytes_per_s, now, warn, causes)   # the live progress page
                if warn:
                    floor = self.stall_floor_s(seen.book)
                    self.log.warning("wave %d: no progress for %.0fs (judged from %s%s); ETA unknown; stopped: %s",
                                     self.wave_id, quiet, progress.source,
                                     f"; the largest partition needs {floor / 1.5:.0f}s at the throttle"
                                     if floor and not progress.measured else "", causes)
                    if not excerpt_written:          # the brokers' side of the stall, once per wait
                        excerpt_written = True
                        await asyncio.to_thread(write_stall_excerpt, self.run_dir, self.wave_id, progress.pending,
                                                f"no progress for {quiet:.0f}s")
                    await notify_stall(f"made no progress for {quiet:.0f}s", causes)
                timeout_after = self.timeout_after_s(seen.book, progress)
                if timeout_after is not None and quiet >= timeout_after and not progress.complete:
                    causes = causes or await self._causes_text(watch, now)
                    await notify_stall(f"made no progress for {quiet:.0f}s", causes, ending)
                    yield self._event("stalled", progress,
                                      f"wave {self.wave_id} made no progress for {quiet:.0f}s "
                                      f"({progress.done}/{progress.total} done; judged from {progress.source}; "
                                      f"ETA unknown; stopped: {causes})")
                    return
                await self._pause(now)
        finally:
            await asyncio.to_thread(self._close)
