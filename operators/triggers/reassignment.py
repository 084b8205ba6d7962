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
* ``stalled`` — no partition finished and no replica joined an ISR for ``stall_timeout_s``;
* ``timeout`` — the absolute ``deadline`` (epoch seconds) passed;
* ``error`` — ZooKeeper unreachable or the progress file unreadable (the message says which).

The payload also carries the last progress figures. The operator's ``execute_complete`` maps
every status but ``done`` to an error type (:mod:`operators.errors`).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, AsyncIterator

from airflow.triggers.base import TriggerEvent

from kafka_zk.errors import KafkaZkError
from kafka_zk.run_folder import RunFolder
from operators.waves import WaveBook, WaveProgress, live_partitions, measure, overall_done, progress_line
from operators.state_change import write_stall_excerpt
from operators.triggers.base import ZooKeeperPollTrigger


class WaveDoneTrigger(ZooKeeperPollTrigger):
    """Fires once wave ``wave_id`` of run ``run_id`` is finished by the controller (or stalls)."""

    def __init__(self, zk_conn_id: str, run_id: str, wave_id: int, deadline: float, run_dir: str,
                 poll_interval: float = 2.0, stall_warning_s: float = 300.0,
                 stall_timeout_s: float | None = None) -> None:
        super().__init__(zk_conn_id, deadline, poll_interval)
        self.run_id = run_id
        self.wave_id = int(wave_id)
        self.run_dir = str(run_dir)
        self.stall_warning_s = float(stall_warning_s)
        self.stall_timeout_s = None if stall_timeout_s is None else float(stall_timeout_s)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{__name__}.WaveDoneTrigger", {
            "zk_conn_id": self.zk_conn_id, "run_id": self.run_id, "wave_id": self.wave_id,
            "deadline": self.deadline, "run_dir": self.run_dir, "poll_interval": self.poll_interval,
            "stall_warning_s": self.stall_warning_s, "stall_timeout_s": self.stall_timeout_s})

    # -- blocking part, run in a thread ------------------------------------------------------

    def _poll(self) -> tuple[WaveBook, WaveProgress, bool]:
        from kafka_zk.snapshot import read_snapshot
        book = WaveBook.load(RunFolder(Path(self.run_dir)).wave_progress)
        if book is None:
            raise KafkaZkError(f"{self.run_dir}/waves.json is missing: the execute_waves task writes it "
                               "before it waits; re-run execute_waves")
        wave = book.wave(self.wave_id)
        snap = read_snapshot(self._client(), topics={m.tp.topic for m in wave.moves}, with_configs=False)
        progress = measure(wave, live_partitions(snap.partitions()))
        ours_listed = snap.reassignment is not None and any(e.tp in wave.targets for e in snap.reassignment.entries)
        return book, progress, ours_listed

    # -- the event loop side -----------------------------------------------------------------

    def _event(self, status: str, progress: WaveProgress | None, message: str, **extra: Any) -> TriggerEvent:
        payload = {"status": status, "run_id": self.run_id, "wave_id": self.wave_id, "message": message}
        if progress is not None:
            payload.update(done=progress.done, total=progress.total, bytes_remaining=progress.bytes_remaining,
                           bytes_total=progress.bytes_total, pending=list(progress.pending))
        payload.update(extra)
        return TriggerEvent(payload)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        started = time.time()
        last_change = started
        last_key: tuple[int, int] | None = None
        first_remaining: int | None = None
        excerpt_written = False
        progress: WaveProgress | None = None
        try:
            while True:
                try:
                    book, progress, still_listed = await asyncio.to_thread(self._poll)
                except KafkaZkError as exc:
                    yield self._event("error", progress, str(exc))
                    return
                now = time.time()
                if first_remaining is None:
                    first_remaining = progress.bytes_remaining
                key = (progress.done, progress.bytes_remaining)
                if key != last_key:
                    last_key, last_change = key, now
                copied = max(0, first_remaining - progress.bytes_remaining)
                self.log.info("%s", progress_line(progress, overall_done(book, progress), book.total_partitions,
                                                  now - started, copied))
                if progress.complete and not still_listed:
                    yield self._event("done", progress, f"wave {self.wave_id} finished",
                                      elapsed_s=round(now - started, 3))
                    return
                if now >= self.deadline:
                    yield self._event("timeout", progress,
                                      f"wave {self.wave_id} not finished by its deadline "
                                      f"({progress.done}/{progress.total} partitions done; still moving: "
                                      f"{', '.join(progress.pending)})")
                    return
                quiet = now - last_change
                if quiet >= self.stall_warning_s:
                    self.log.warning("wave %d: no progress for %.0fs; still moving: %s", self.wave_id, quiet,
                                     ", ".join(progress.pending))
                    if not excerpt_written:          # the brokers' side of the stall, once per wait
                        excerpt_written = True
                        await asyncio.to_thread(write_stall_excerpt, self.run_dir, self.wave_id, progress.pending,
                                                f"no progress for {quiet:.0f}s")
                if self.stall_timeout_s is not None and quiet >= self.stall_timeout_s:
                    yield self._event("stalled", progress,
                                      f"wave {self.wave_id} made no progress for {quiet:.0f}s "
                                      f"({progress.done}/{progress.total} done; still moving: "
                                      f"{', '.join(progress.pending)})")
                    return
                await self._pause(now)
        finally:
            await asyncio.to_thread(self._close)
