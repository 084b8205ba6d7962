"""What one poll of a running wave means: ``observe(state, seen, now) -> (state, decision)``, pure.

The wait on a wave (:mod:`procedures.waves.watch`, behind :class:`operators.triggers.reassignment.
WaveDoneTrigger` and the rehearsal) polls ZooKeeper; every poll's reading (:class:`Seen`) goes
through :func:`observe` with the wait's :class:`WatchState`, and comes back as the next state and a
:class:`Decision`: the effects to perform in order (log lines, the one stall notification, the live
progress record, the brokers' state-change excerpt, an outage ridden out for the run's history) and
what to do next — end the wait with an
event, poll again after a pause, hold a ``done`` back until ``not_before``, reconnect after a
ZooKeeper failure, or first read the likely causes of the stop (:data:`DIAGNOSE`: the loop reads
them, puts them in ``seen.causes`` and calls :func:`observe` again on the same state). The rules
(stall thresholds, dead ends, the controller's evidence, the outage bound) are in
:mod:`operators.triggers.reassignment`'s docstring; the seven ends are ``error`` (outage too long;
a failure no retry clears), ``stalled`` (a topic deleted; blocked past ``dead_end_s``; no progress
past the stall timeout), ``timeout`` and ``done``.

Pure: no I/O, no clock, never raises; the same inputs give the same outputs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from procedures.waves.book import WaveBook, WaveProgress, moved, overall_done, progress_line
from procedures.waves.controller_evidence import ControllerWatch
from procedures.waves.stall_causes import CONTROLLER, StallCause

MIN_STALL_WARNING_S = 60.0
DEAD_END_S = 300.0          # how long a cause waiting cannot clear may last before the wait ends
BLOCKED_NOTICE_S = 10.0     # how long it lasts before people are told (at least three polls)
ENDING = "The wait ends now: the step fails; the wave keeps its throttles until it finishes."
KEEPS_WAITING = "The run keeps waiting; the wave keeps its throttles."

Next = Literal["pause", "hold", "reconnect", "diagnose", "end"]
PAUSE: Next = "pause"            # sleep one poll interval (never past the deadline), poll again
HOLD: Next = "hold"              # sleep until ``Decision.hold_until``, poll again
RECONNECT: Next = "reconnect"    # close the client (the next poll builds a fresh one), then pause
DIAGNOSE: Next = "diagnose"      # read the causes, then observe the same poll again
END: Next = "end"                # yield ``Decision.event``: the wait is over


@dataclass(frozen=True)
class Limits:
    """The wait's settings (the trigger's primitives)."""

    run_id: str
    wave_id: int
    deadline: float
    poll_interval: float
    stall_warning_s: float | None = None
    stall_timeout_s: float | None = None
    not_before: float | None = None
    zk_outage_s: float = 60.0
    throttle_bytes_per_s: float | None = None
    dead_end_s: float = 300.0
    blocked_notice_s: float = 10.0
    controller_evidence_s: float = 60.0

    def stall_floor_s(self, book: WaveBook) -> float:
        """No stall can be judged from ISR joins sooner than 1.5× the time the wave's largest
        partition takes at the throttle (a healthy 40 GiB copy at 40 MiB/s shows no ISR change
        for 17 minutes)."""
        if not self.throttle_bytes_per_s:
            return 0.0
        largest = max((m.size for m in book.wave(self.wave_id).moves), default=0)
        return 1.5 * largest / self.throttle_bytes_per_s

    def warning_after_s(self, book: WaveBook, progress: WaveProgress, max_age_s: float | None) -> float:
        """Seconds without progress before a stall warning."""
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


@dataclass(frozen=True)
class Poll:
    """What one poll read."""

    book: WaveBook
    progress: WaveProgress
    still_listed: bool
    gone: tuple[str, ...]                 # topics of the wave deleted
    blocked: tuple[StallCause, ...]       # causes waiting cannot clear
    sizes_note: str                       # why follower log sizes were not used ("" when they were)
    max_age_s: float | None               # the log-dirs source's max age (None: no source)
    controller: int | None = None         # /controller's broker
    controller_epoch: int | None = None   # /controller_epoch


@dataclass(frozen=True)
class Seen:
    """One poll's outcome: what it read, or why it read nothing; plus the causes when asked for."""

    poll: Poll | None = None
    outage: str | None = None             # ZooKeeper unreachable: the cause (retried up to zk_outage_s)
    broken: str | None = None             # a failure no retry clears (the progress file, the log-dirs source)
    causes: tuple[StallCause, ...] | str | None = None   # the stop's likely causes (str: why not read)


@dataclass(frozen=True)
class WatchState:
    """Everything the wait carries from one poll to the next."""

    limits: Limits
    started: float
    last_change: float
    last_key: tuple[int, int, str] | None = None    # (done, bytes remaining, source) at the last poll
    failing_since: float | None = None
    blocked_since: float | None = None
    watch: ControllerWatch = field(default_factory=ControllerWatch)   # evidence the controller is not acting
    base: tuple[str, int, float] | None = None     # (source, bytes remaining, time) the rate is taken from
    note_logged: str | None = None
    excerpt_written: bool = False
    stall_notified: bool = False                   # one stall notification per wait
    progress: WaveProgress | None = None
    last_cause: str = ""                           # the last ZooKeeper failure's cause (an outage's)

    @classmethod
    def start(cls, limits: Limits, now: float) -> "WatchState":
        return cls(limits, now, now)


@dataclass(frozen=True)
class Log:
    level: int
    text: str


@dataclass(frozen=True)
class Notify:
    """The stall notification (the state's progress is the one it names)."""

    what: str
    causes: str
    then: str


@dataclass(frozen=True)
class Record:
    """One line of the live progress page (:func:`procedures.waves.poll_record.record_poll`)."""

    rate: float
    quiet: float
    warn: bool
    causes: str


@dataclass(frozen=True)
class Outage:
    """A ZooKeeper outage the wait rode out, for the run's history
    (:func:`procedures.reports.history.record_outage`)."""

    during: str
    seconds: float
    cause: str


@dataclass(frozen=True)
class Excerpt:
    """The brokers' state-change lines of the stopped partitions, once per wait."""

    pending: tuple[str, ...]
    reason: str


Effect = Log | Notify | Record | Excerpt | Outage


@dataclass(frozen=True)
class Decision:
    next: Next
    effects: tuple[Effect, ...] = ()
    event: dict[str, Any] | None = None
    hold_until: float | None = None


def event(limits: Limits, status: str, progress: WaveProgress | None, message: str, **extra: Any) -> dict[str, Any]:
    """The wait's one event payload (``status``, ids, message, and the last progress figures)."""
    payload: dict[str, Any] = {"status": status, "run_id": limits.run_id, "wave_id": limits.wave_id,
                               "message": message}
    if progress is not None:
        payload.update(done=progress.done, total=progress.total, bytes_remaining=progress.bytes_remaining,
                       bytes_total=progress.bytes_total, pending=list(progress.pending),
                       progress_source=progress.source)
    payload.update(extra)
    return payload


class _Effects:
    """The effects of one observation, and the stall notification's once-per-wait rule."""

    def __init__(self, state: WatchState) -> None:
        self.out: list[Effect] = []
        self.notified = state.stall_notified
        self.progress = state.progress

    def log(self, level: int, text: str) -> None:
        self.out.append(Log(level, text))

    def notify(self, what: str, causes: str, then: str = KEEPS_WAITING) -> None:
        if not self.notified and self.progress is not None and not self.progress.complete:
            self.notified = True
            self.out.append(Notify(what, causes, then))


def _causes_text(limits: Limits, causes: tuple[StallCause, ...] | str, watch: ControllerWatch, now: float) -> str:
    if isinstance(causes, str):
        return causes
    weighed = [(watch.verdict(c, now, limits.controller_evidence_s) or c) if c.kind == CONTROLLER else c
               for c in causes]
    return "; ".join(str(c) for c in weighed[:10]) or "no cause visible in ZooKeeper"


def _weigh_controller(limits: Limits, seen: Poll, watch: ControllerWatch, now: float,
                      fx: _Effects) -> tuple[tuple[StallCause, ...], ControllerWatch]:
    """The poll's blocking causes with the controller's counted only on evidence: replaced by its
    verdict once it has lasted ``controller_evidence_s``, left out (and logged as a slow controller,
    without advice) before that."""
    controller = next((c for c in seen.blocked if c.kind == CONTROLLER), None)
    watch = watch.observe(controller, seen.controller, seen.controller_epoch, now)
    if controller is None:
        return seen.blocked, watch
    verdict = watch.verdict(controller, now, limits.controller_evidence_s)
    if verdict is None:
        fx.log(logging.INFO, f"wave {limits.wave_id}: {watch.observed(now)}; waiting (a loaded controller can take "
                             f"this long: a forced election is advised only if it lasts "
                             f"{limits.controller_evidence_s:.0f}s)")
        return tuple(c for c in seen.blocked if c is not controller), watch
    return tuple(verdict if c is controller else c for c in seen.blocked), watch


def observe(state: WatchState, seen: Seen, now: float) -> tuple[WatchState, Decision]:
    """The next state and what to do, for one poll's ``seen`` at ``now`` (see the module docstring)."""
    lim, before = state.limits, state
    if seen.poll is None:
        return _failed(state, seen, now)
    p = seen.poll
    progress = p.progress
    fx = _Effects(replace(state, progress=progress))
    if state.failing_since is not None:       # an outage ridden out: the run's history names it
        fx.out.append(Outage(f"wave {lim.wave_id}", now - state.failing_since, state.last_cause))
    state = replace(state, progress=progress, failing_since=None)
    if p.sizes_note != state.note_logged:
        state = replace(state, note_logged=p.sizes_note)
        if p.sizes_note:
            fx.log(logging.INFO, f"wave {lim.wave_id}: progress judged from ISR joins only ({p.sizes_note})")
    if state.base is None or state.base[0] != progress.source:
        state = replace(state, base=(progress.source, progress.bytes_remaining, now))
    if moved(state.last_key, progress):     # a source switch alone does not restart the stall clock
        state = replace(state, last_change=now)
    state = replace(state, last_key=(progress.done, progress.bytes_remaining, progress.source))
    base = state.base
    copied = max(0, base[1] - progress.bytes_remaining)
    quiet = now - state.last_change
    warn = quiet >= lim.warning_after_s(p.book, progress, p.max_age_s) and not progress.complete
    fx.log(logging.INFO, progress_line(progress, overall_done(p.book, progress), p.book.total_partitions,
                                       now - base[2], copied, stalled=warn))
    blocked, watch = _weigh_controller(lim, p, state.watch, now, fx)
    state = replace(state, watch=watch)

    def causes_text() -> str | None:
        return None if seen.causes is None else _causes_text(lim, seen.causes, watch, now)

    def end(status: str, message: str, **extra: Any) -> tuple[WatchState, Decision]:
        done = replace(state, stall_notified=fx.notified)
        return done, Decision(END, tuple(fx.out), event(lim, status, progress, message, **extra))

    if p.gone and not progress.complete:
        if (causes := causes_text()) is None:
            return before, Decision(DIAGNOSE)
        fx.notify("cannot finish", causes, ENDING)
        return end("stalled", f"wave {lim.wave_id} cannot finish: " + causes, dead_end=True)
    if progress.complete and not p.still_listed:
        if lim.not_before is not None and now < lim.not_before:     # the scheduler race: hold ``done`` back
            return state, Decision(HOLD, tuple(fx.out), hold_until=lim.not_before)
        return end("done", f"wave {lim.wave_id} finished", elapsed_s=round(now - state.started, 3))
    if now >= lim.deadline:
        if (causes := causes_text()) is None:
            return before, Decision(DIAGNOSE)
        fx.notify("was not finished by its deadline", causes, ENDING)
        return end("timeout", f"wave {lim.wave_id} not finished by its deadline ({progress.done}/{progress.total} "
                              f"partitions done; still moving: {', '.join(progress.pending)}; stopped: {causes})")
    blocked_since = (state.blocked_since or now) if blocked else None
    state = replace(state, blocked_since=blocked_since)
    if blocked:
        text = "; ".join(str(c) for c in blocked[:10])
        # a cause waiting cannot clear (a destination broker gone, a controller not acting on evidence):
        # said once it has lasted blocked_notice_s (a broker mid-restart is no news)
        if now - blocked_since >= min(lim.blocked_notice_s, lim.dead_end_s):
            fx.notify("is blocked", text, f"The run waits up to {lim.dead_end_s:.0f}s for it to clear, then fails; "
                                          "the wave keeps its throttles.")
        if now - blocked_since >= lim.dead_end_s:
            return end("stalled", f"wave {lim.wave_id} cannot finish as the cluster stands (for "
                                  f"{now - blocked_since:.0f}s): {text}", dead_end=True)
        fx.log(logging.WARNING, f"wave {lim.wave_id}: {text} (ending the wait if it lasts "
                                f"{lim.dead_end_s - (now - blocked_since):.0f}s more)")
    timeout_after = lim.timeout_after_s(p.book, progress)
    times_out = timeout_after is not None and quiet >= timeout_after and not progress.complete
    causes = ""
    if warn or times_out:
        if (read := causes_text()) is None:
            return before, Decision(DIAGNOSE)
        causes = read if warn else ""
    fx.out.append(Record(copied / max(now - base[2], 1e-9), quiet, warn, causes))
    if warn:
        floor = lim.stall_floor_s(p.book)
        fx.log(logging.WARNING, f"wave {lim.wave_id}: no progress for {quiet:.0f}s (judged from {progress.source}"
                                + (f"; the largest partition needs {floor / 1.5:.0f}s at the throttle"
                                   if floor and not progress.measured else "")
                                + f"); ETA unknown; stopped: {causes}")
        if not state.excerpt_written:       # the brokers' side of the stall, once per wait
            state = replace(state, excerpt_written=True)
            fx.out.append(Excerpt(progress.pending, f"no progress for {quiet:.0f}s"))
        fx.notify(f"made no progress for {quiet:.0f}s", causes)
    if times_out:
        causes = causes or causes_text() or ""
        fx.notify(f"made no progress for {quiet:.0f}s", causes, ENDING)
        return end("stalled", f"wave {lim.wave_id} made no progress for {quiet:.0f}s ({progress.done}/"
                              f"{progress.total} done; judged from {progress.source}; ETA unknown; stopped: {causes})")
    return replace(state, stall_notified=fx.notified), Decision(PAUSE, tuple(fx.out))


def _failed(state: WatchState, seen: Seen, now: float) -> tuple[WatchState, Decision]:
    """A poll that read nothing: a failure no retry clears ends the wait; an outage is retried with a
    fresh client until it has lasted ``zk_outage_s`` (or the deadline passed)."""
    lim = state.limits
    if seen.outage is None:
        return state, Decision(END, (), event(lim, "error", state.progress, seen.broken or "the poll failed"))
    failing_since = state.failing_since or now
    state = replace(state, failing_since=failing_since, last_cause=seen.outage)
    if now - failing_since >= lim.zk_outage_s or now >= lim.deadline:
        return state, Decision(END, (), event(lim, "error", state.progress, (
            f"ZooKeeper unreachable for {now - failing_since:.0f}s while waiting on wave {lim.wave_id} "
            f"(last error: {seen.outage}); the wave keeps running in the cluster")))
    return state, Decision(RECONNECT, (Log(logging.WARNING, (
        f"wave {lim.wave_id}: ZooKeeper read failed ({seen.outage}); retrying for up to "
        f"{lim.zk_outage_s - (now - failing_since):.0f}s more")),))
