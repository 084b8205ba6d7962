"""The demo's console while waves run: one line when a wave starts, a progress line at a steady rhythm
while it copies, one when it is done — instead of minutes of silence.

:class:`ProgressPrinter` is a daemon thread that reads the newest run folder of a DAG under a run
root with :func:`procedures.live_progress.run_progress` (the same files the live progress page reads)
and prints what changed; :func:`progress_lines` is the pure part (two views in, lines out).

Failure: none raised; a folder that cannot be read yet is skipped until the next look.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

from kafka_zk.errors import KafkaZkError
from procedures.run_folder import RunFolder
from procedures.live_progress import RunProgress, WaveRow, duration_text, rate_text, run_progress
from procedures.waves.book import human_bytes


def _line(w: WaveRow, n: int, p: RunProgress) -> str:
    copied = (f", {human_bytes(w.bytes_total - w.bytes_remaining)} of {human_bytes(w.bytes_total)} copied"
              if p.sized and w.bytes_remaining is not None else "")
    rate = f", {rate_text(w.measured_rate)}" if w.measured_rate else ""
    return (f"wave {w.id + 1}/{n}: {w.done}/{w.total} partitions{copied}{rate}, ETA wave {duration_text(w.eta_s)}, "
            f"run {duration_text(p.eta_s)}")


def progress_lines(before: RunProgress | None, now: RunProgress, rhythm_due: bool) -> list[str]:
    """What to print going from ``before`` to ``now``: starts and ends of waves, and (when
    ``rhythm_due``) the progress of every wave copying."""
    old = {w.id: w for w in (before.waves if before else ())}
    n = len(now.waves)
    out = []
    for w in now.waves:
        was = old.get(w.id)
        if w.status == "copying" and (was is None or was.status == "pending"):
            size = f", {human_bytes(w.bytes_total)} to copy" if now.sized else " (sizes unknown)"
            out.append(f"wave {w.id + 1}/{n} started: {w.total} partitions{size}")
        elif w.status == "done" and (was is None or was.status != "done"):
            out.append(f"wave {w.id + 1}/{n} done ({sum(x.done for x in now.waves)}/"
                       f"{sum(x.total for x in now.waves)} partitions moved in all)")
        elif w.status == "copying" and rhythm_due:
            out.append(_line(w, n, now) + (f" — STALLED: {w.stall}" if w.stall else ""))
    return out


class ProgressPrinter(threading.Thread):
    """Prints :func:`progress_lines` for the newest run of ``dag_id`` under ``run_root`` (a daemon)."""

    def __init__(self, run_root: Path, dag_id: str, say: Callable[[str], None], every_s: float = 1.0,
                 rhythm_s: float = 10.0) -> None:
        super().__init__(daemon=True, name="demo-progress")
        self.run_root, self.dag_id, self.say = Path(run_root), dag_id, say
        self.every_s, self.rhythm_s = every_s, rhythm_s
        self.stopped = threading.Event()

    def _folder(self) -> RunFolder | None:
        runs = [p for p in (self.run_root / self.dag_id).glob("*") if (p / "waves.json").is_file()]
        return RunFolder(max(runs, key=lambda p: p.stat().st_mtime)) if runs else None

    def run(self) -> None:
        before: RunProgress | None = None
        last_rhythm = time.monotonic()
        while not self.stopped.wait(self.every_s):
            folder = self._folder()
            if folder is None:
                continue
            try:
                now = run_progress(folder)
            except (KafkaZkError, OSError):
                continue
            due = time.monotonic() - last_rhythm >= self.rhythm_s
            for line in progress_lines(before, now, due):
                self.say(line)
            if due:
                last_rhythm = time.monotonic()
            before = now

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=10)
