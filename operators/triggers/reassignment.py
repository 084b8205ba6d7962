"""WaveDoneTrigger: wait, without holding a worker, until the controller finishes one wave.

The trigger carries only primitives (connection id, run id, wave id, an *absolute* deadline,
the run folder and poll timings), so a restarted triggerer resumes the same wait with the same
clock. Each poll reads the wave's partitions and ``/admin/reassign_partitions`` through
:func:`kafka_zk.snapshot.read_snapshot` in a worker thread (``asyncio.to_thread``: kazoo calls
never block the event loop) and logs one progress line: partitions done/total for the wave and
the whole plan, bytes remaining, throughput and ETA. With no progress for ``stall_warning_s``
it logs a warning at every poll.

It yields exactly one :class:`TriggerEvent`, ``status`` being:

* ``done`` — every partition of the wave has replicas == target, nothing adding/removing,
  the whole target in the ISR, and ``/admin/reassign_partitions`` no longer lists any of them
  (gone, or — if someone else wrote one since — holding none of ours);
* ``stalled`` — no partition finished and no replica joined an ISR for ``stall_timeout_s`` (and
  never sooner than 1.5× the time the wave's largest partition takes at
  ``throttle_bytes_per_s``, the floor that also applies to ``stall_warning_s``);
* ``stalled`` with ``dead_end`` — at once when a topic of the wave was deleted while its
  partition moved (it can never finish); every stall warning and ``stalled`` message names the
  stopped partitions and the likely cause (:mod:`operators.stall_causes`: destination broker
  not registered, follower up but failing its fetches — a lowered ``max.message.bytes`` named);
* ``timeout`` — the absolute ``deadline`` (epoch seconds) passed;
* ``error`` — ZooKeeper unreachable for longer than ``zk_outage_s`` (a session expiry or a
  short outage is retried at every poll with a fresh client, logged with its real cause, and
  the message names that cause), or the progress file unreadable (the message says which).

``not_before`` (epoch seconds, set by the executor to a few seconds after it defers) holds a
``done`` back until then: on a real scheduler a trigger that fires before the executor has
reported the deferring attempt's exit gets the resumed task failed ("finished with state
success, but the task instance's state attribute is queued", then "409 TI was not in the
running state" on the worker).

The payload also carries the last progress figures. The operator's ``execute_complete`` maps
every status but ``done`` to an error type (:mod:`operators.errors`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, AsyncIterator

from airflow.triggers.base import TriggerEvent

from kazoo.exceptions import KazooException

from kafka_zk.errors import KafkaZkError, ZkUnavailable
from kafka_zk.run_folder import RunFolder
from kafka_zk.snapshot import read_snapshot
from operators.stall_causes import StallCause, stall_causes
from operators.state_change import write_stall_excerpt
from operators.triggers.base import ZooKeeperPollTrigger
from operators.waves import WaveBook, WaveProgress, overall_done, progress_line, wave_state


ZK_OUTAGE_S = 120.0


def zk_cause(exc: BaseException) -> str:
    """The underlying ZooKeeper error of ``exc`` (kazoo's, when ours wraps one), as ``Type: text``."""
    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    text = str(root) if root is not exc else str(exc)
    return f"{type(root).__name__}: {text}" if text else type(root).__name__


class WaveDoneTrigger(ZooKeeperPollTrigger):
    """Fires once wave ``wave_id`` of run ``run_id`` is finished by the controller (or stalls)."""

    def __init__(self, zk_conn_id: str, run_id: str, wave_id: int, deadline: float, run_dir: str,
                 poll_interval: float = 2.0, stall_warning_s: float = 300.0,
                 stall_timeout_s: float | None = None, not_before: float | None = None,
                 zk_outage_s: float = ZK_OUTAGE_S, throttle_bytes_per_s: float | None = None) -> None:
        super().__init__(zk_conn_id, deadline, poll_interval)
        self._gone: list[str] = []
        self.throttle_bytes_per_s = None if throttle_bytes_per_s in (None, 0) else float(throttle_bytes_per_s)
        self.zk_outage_s = float(zk_outage_s)
        self.not_before = None if not_before is None else float(not_before)
        self.run_id = run_id
        self.wave_id = int(wave_id)
        self.run_dir = str(run_dir)
        self.stall_warning_s = float(stall_warning_s)
        self.stall_timeout_s = None if stall_timeout_s is None else float(stall_timeout_s)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{__name__}.WaveDoneTrigger", {
            "zk_conn_id": self.zk_conn_id, "run_id": self.run_id, "wave_id": self.wave_id,
            "deadline": self.deadline, "run_dir": self.run_dir, "poll_interval": self.poll_interval,
            "stall_warning_s": self.stall_warning_s, "stall_timeout_s": self.stall_timeout_s,
            "not_before": self.not_before, "zk_outage_s": self.zk_outage_s,
            "throttle_bytes_per_s": self.throttle_bytes_per_s})

    # -- blocking part, run in a thread ------------------------------------------------------

    def stall_floor_s(self, book: WaveBook) -> float:
        """No stall can be judged sooner than 1.5× the time the wave's largest partition takes at
        the throttle (a healthy 40 GiB copy at 40 MiB/s shows no ISR change for 17 minutes)."""
        if not self.throttle_bytes_per_s:
            return 0.0
        largest = max((m.size for m in book.wave(self.wave_id).moves), default=0)
        return 1.5 * largest / self.throttle_bytes_per_s

    def _poll(self) -> tuple[WaveBook, WaveProgress, bool]:
        book = WaveBook.load(RunFolder(Path(self.run_dir)).wave_progress)
        if book is None:
            raise KafkaZkError(f"{self.run_dir}/waves.json is missing: the execute_waves task writes it "
                               "before it waits; re-run execute_waves")
        wave = book.wave(self.wave_id)
        topics = {m.tp.topic for m in wave.moves}
        snap = read_snapshot(self._client(), topics=topics, with_configs=False)
        progress, ours_listed = wave_state(wave, snap)
        self._gone = sorted(t for t in topics if t not in snap.topics)
        return book, progress, ours_listed

    def _diagnose(self) -> list[StallCause]:
        """The likely cause of each stopped partition (a snapshot with config overrides)."""
        book = WaveBook.load(RunFolder(Path(self.run_dir)).wave_progress)
        wave = book.wave(self.wave_id)
        snap = read_snapshot(self._client(), topics={m.tp.topic for m in wave.moves}, with_configs=True)
        return stall_causes(snap, wave)

    async def _causes_text(self) -> str:
        try:
            causes = await asyncio.to_thread(self._diagnose)
        except (KafkaZkError, KazooException) as exc:
            return f"cause not read ({zk_cause(exc)})"
        return "; ".join(str(c) for c in causes[:10]) or "no cause visible in ZooKeeper"

    # -- the event loop side -----------------------------------------------------------------

    def _event(self, status: str, progress: WaveProgress | None, message: str, **extra: Any) -> TriggerEvent:
        payload = {"status": status, "run_id": self.run_id, "wave_id": self.wave_id, "message": message}
        if progress is not None:
            payload.update(done=progress.done, total=progress.total, bytes_remaining=progress.bytes_remaining,
                           bytes_total=progress.bytes_total, pending=list(progress.pending))
        payload.update(extra)
        return TriggerEvent(payload)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        started = self.clock.time()
        last_change = started
        last_key: tuple[int, int] | None = None
        failing_since: float | None = None
        first_remaining: int | None = None
        excerpt_written = False
        progress: WaveProgress | None = None
        try:
            while True:
                try:
                    book, progress, still_listed = await asyncio.to_thread(self._poll)
                    failing_since = None
                except (ZkUnavailable, KazooException) as exc:
                    now = self.clock.time()
                    failing_since = failing_since or now
                    cause = zk_cause(exc)
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
                if first_remaining is None:
                    first_remaining = progress.bytes_remaining
                key = (progress.done, progress.bytes_remaining)
                if key != last_key:
                    last_key, last_change = key, now
                copied = max(0, first_remaining - progress.bytes_remaining)
                quiet = now - last_change
                floor = self.stall_floor_s(book)
                warn = quiet >= max(self.stall_warning_s, floor)
                self.log.info("%s", progress_line(progress, overall_done(book, progress), book.total_partitions,
                                                  now - started, copied, stalled=warn))
                if self._gone and not progress.complete:
                    yield self._event("stalled", progress, f"wave {self.wave_id} cannot finish: "
                                      + await self._causes_text(), dead_end=True)
                    return
                if progress.complete and not still_listed:
                    if self.not_before is not None and now < self.not_before:
                        await self.clock.sleep(self.not_before - now)   # see not_before in the docstring
                        continue
                    yield self._event("done", progress, f"wave {self.wave_id} finished",
                                      elapsed_s=round(now - started, 3))
                    return
                if now >= self.deadline:
                    yield self._event("timeout", progress,
                                      f"wave {self.wave_id} not finished by its deadline "
                                      f"({progress.done}/{progress.total} partitions done; still moving: "
                                      f"{', '.join(progress.pending)})")
                    return
                causes = await self._causes_text() if warn else ""
                if warn:
                    self.log.warning("wave %d: no progress for %.0fs%s; ETA unknown; stopped: %s", self.wave_id,
                                     quiet, f" (the largest partition needs {floor / 1.5:.0f}s at the throttle)"
                                     if floor else "", causes)
                    if not excerpt_written:          # the brokers' side of the stall, once per wait
                        excerpt_written = True
                        await asyncio.to_thread(write_stall_excerpt, self.run_dir, self.wave_id, progress.pending,
                                                f"no progress for {quiet:.0f}s")
                if self.stall_timeout_s is not None and quiet >= max(self.stall_timeout_s, floor):
                    yield self._event("stalled", progress,
                                      f"wave {self.wave_id} made no progress for {quiet:.0f}s "
                                      f"({progress.done}/{progress.total} done; stopped: {causes})")
                    return
                await self._pause(now)
        finally:
            await asyncio.to_thread(self._close)
