"""The wait on one wave: poll ZooKeeper, let :func:`procedures.waves.observe.observe` judge, act.

:class:`WaveWatch` is the I/O loop around the pure ``observe``: each poll reads the wave's partitions
and ``/admin/reassign_partitions`` (:func:`kafka_zk.snapshot.read_snapshot`, in a worker thread so an
event loop never blocks on ZooKeeper) and, when the connection names one, the follower log sizes;
the decision's effects are performed in order (an outage ridden out into the run's history, log
lines, the stall notification, the live progress record, the state-change excerpt) and :meth:`WaveWatch.watch` yields the one event payload that ends
the wait. Its seams are what a subclass supplies: ``_client()`` / ``_close()`` (the ZooKeeper
session), ``_log_dirs_source()``, ``_notify_stall(what, progress, causes, then)`` (the notifier),
``clock`` (``time()`` and ``async sleep()``) and ``log``. Airflow's
:class:`operators.triggers.reassignment.WaveDoneTrigger` and the rehearsal
(:mod:`procedures.rehearsal.executor`) are the two.

Failure: nothing raises out of :meth:`WaveWatch.watch` but what a seam raises outside a poll; every
end of the wait is an event (``observe``'s module docstring).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, AsyncIterator, Protocol

from kazoo.exceptions import KazooException

from kafka_zk.errors import KafkaZkError, ZkUnavailable
from kafka_zk.outage import ZK_OUTAGE_S, zk_cause
from kafka_zk.snapshot import read_snapshot
from procedures.plan.log_dirs_source import LogDirsSource, read_log_dirs
from procedures.reports.history import record_outage
from procedures.waves.poll_record import record_poll
from procedures.reports.state_change import write_stall_excerpt
from procedures.run_folder import RunFolder
from procedures.waves.book import WaveBook, wave_state
from procedures.waves.controller_evidence import CONTROLLER_EVIDENCE_S
from procedures.waves.observe import (BLOCKED_NOTICE_S, DEAD_END_S, DIAGNOSE, END, HOLD, RECONNECT, Excerpt, Limits,
                                      Log, Notify, Outage, Poll, Record, Seen, WatchState, observe)
from procedures.waves.stall_causes import StallCause, blocking_causes, stall_causes


class Clock(Protocol):
    """Epoch seconds and a sleep on the same time line (the wall clock, or a simulated one)."""

    def time(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class WaveWatch:
    """The wait on wave ``wave_id`` of the run in ``run_dir`` (see the module docstring). A subclass sets
    the attributes below and supplies the seams: ``_client() -> KazooClient`` and ``_close()`` (blocking:
    called in a worker thread), ``_log_dirs_source() -> LogDirsSource | None`` and
    ``_notify_stall(what, progress, causes, then)`` (must not raise)."""

    run_id: str
    wave_id: int
    run_dir: str
    deadline: float
    poll_interval: float
    stall_warning_s: float | None
    stall_timeout_s: float | None
    not_before: float | None
    zk_outage_s: float
    throttle_bytes_per_s: float | None
    dead_end_s: float
    blocked_notice_s: float
    controller_evidence_s: float
    clock: Clock
    log: Any

    def _configure(self, run_id: str, wave_id: int, deadline: float, run_dir: str, poll_interval: float = 2.0,
                   stall_warning_s: float | None = None, stall_timeout_s: float | None = None,
                   not_before: float | None = None, zk_outage_s: float = ZK_OUTAGE_S,
                   throttle_bytes_per_s: float | None = None, dead_end_s: float = DEAD_END_S) -> None:
        """Set the wait's settings (the trigger's primitives) and the thresholds derived from them."""
        self.run_id = run_id
        self.wave_id = int(wave_id)
        self.deadline = float(deadline)
        self.run_dir = str(run_dir)
        self.poll_interval = float(poll_interval)
        self.stall_warning_s = None if stall_warning_s is None else float(stall_warning_s)
        self.stall_timeout_s = None if stall_timeout_s is None else float(stall_timeout_s)
        self.not_before = None if not_before is None else float(not_before)
        self.zk_outage_s = float(zk_outage_s)
        self.throttle_bytes_per_s = None if throttle_bytes_per_s in (None, 0) else float(throttle_bytes_per_s)
        self.dead_end_s = float(dead_end_s)
        self.blocked_notice_s = max(BLOCKED_NOTICE_S, 3 * self.poll_interval)
        self.controller_evidence_s = min(CONTROLLER_EVIDENCE_S, self.dead_end_s)
        self._book_read: tuple[tuple[int, int, int, int], WaveBook] | None = None

    def _book(self) -> WaveBook | None:
        """The run's ``waves.json``, parsed again only when the file changed (another inode, mtime or
        size: the executor replaces it atomically), not at every poll; ``None`` when it is missing."""
        path = RunFolder(Path(self.run_dir)).wave_progress
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        key = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)
        cached = self._book_read             # set by _configure, the one place every watch is built
        if cached is not None and cached[0] == key:
            return cached[1]
        book = WaveBook.load(path)
        self._book_read = None if book is None else (key, book)
        return book

    # -- the blocking reads, run in a worker thread ------------------------------------------

    def limits(self) -> Limits:
        return Limits(self.run_id, self.wave_id, self.deadline, self.poll_interval, self.stall_warning_s,
                      self.stall_timeout_s, self.not_before, self.zk_outage_s, self.throttle_bytes_per_s,
                      self.dead_end_s, self.blocked_notice_s, self.controller_evidence_s)

    def _poll(self) -> Poll:
        book = self._book()
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
        book = self._book()
        if book is None:
            raise KafkaZkError(f"{self.run_dir}/waves.json is missing: the execute_waves task writes it "
                               "before it waits; re-run execute_waves")
        wave = book.wave(self.wave_id)
        snap = read_snapshot(self._client(), topics={m.tp.topic for m in wave.moves}, with_configs=True)
        return stall_causes(snap, wave)

    async def _causes(self) -> tuple[StallCause, ...] | str:
        try:
            return tuple(await asyncio.to_thread(self._diagnose))
        except (KafkaZkError, KazooException) as exc:
            return f"cause not read ({zk_cause(exc)})"

    # -- the loop ----------------------------------------------------------------------------

    async def _seen(self) -> Seen:
        try:
            return Seen(poll=await asyncio.to_thread(self._poll))
        except (ZkUnavailable, KazooException) as exc:
            return Seen(outage=zk_cause(exc))
        except KafkaZkError as exc:
            return Seen(broken=str(exc))

    async def _perform(self, effects: tuple, state: WatchState, now: float) -> None:
        for fx in effects:
            if isinstance(fx, Log):
                self.log.log(fx.level, "%s", fx.text)
            elif isinstance(fx, Notify):
                await asyncio.to_thread(self._notify_stall, fx.what, state.progress, fx.causes, fx.then)
            elif isinstance(fx, Record):      # the live progress page
                await asyncio.to_thread(record_poll, self.run_dir, state.progress, fx.rate, fx.quiet,
                                        self.throttle_bytes_per_s, now, fx.warn, fx.causes)
            elif isinstance(fx, Excerpt):
                await asyncio.to_thread(write_stall_excerpt, self.run_dir, self.wave_id, fx.pending, fx.reason)
            elif isinstance(fx, Outage):
                await asyncio.to_thread(record_outage, RunFolder(Path(self.run_dir)), fx.during, fx.seconds, fx.cause)

    async def watch(self) -> AsyncIterator[dict[str, Any]]:
        """Poll until the wave ends; yield the one event payload (``observe``'s module docstring)."""
        state = WatchState.start(self.limits(), self.clock.time())
        try:
            while True:
                seen = await self._seen()
                now = self.clock.time()
                new, decision = observe(state, seen, now)
                if decision.next == DIAGNOSE:
                    new, decision = observe(state, replace(seen, causes=await self._causes()), now)
                state = new
                await self._perform(decision.effects, state, now)
                if decision.next == END:
                    yield decision.event
                    return
                if decision.next == HOLD:
                    await self.clock.sleep(decision.hold_until - now)
                    continue
                if decision.next == RECONNECT:
                    await asyncio.to_thread(self._close)      # the next poll builds a fresh client
                await self.clock.sleep(min(self.poll_interval, max(0.0, self.deadline - now)))
        finally:
            await asyncio.to_thread(self._close)

