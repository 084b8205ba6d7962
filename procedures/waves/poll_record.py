"""What the wave wait writes at every poll: one wave's last poll in the run folder's ``live_progress.json``.

:func:`record_poll` is called by the wait (the task waiting inline, then the trigger) with the wave's
:class:`~procedures.waves.book.WaveProgress`, the measured rate, how long nothing moved, the throttle
in force and, when it stalls, the cause; :mod:`procedures.live_progress` reads the file for the page.

Failure: none raised — the page is a view, so a write that fails (disk full, folder gone) is
returned as False, never raised into the wait.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from kafka_zk.errors import InvalidPayload
from kafka_zk.files import read_json, write_json_atomic
from procedures.waves.book import WaveProgress

FILE = "live_progress.json"


@dataclass(frozen=True)
class PollRecord:
    """One wave's last poll, as :func:`record_poll` writes it."""

    done: int
    total: int
    bytes_remaining: int
    bytes_total: int
    source: str
    rate_bps: float
    quiet_s: float
    throttle_bps: int | None
    stalled: bool = False
    causes: str = ""
    at: float = 0.0


def record_poll(run_dir: str | Path, progress: WaveProgress, rate_bps: float, quiet_s: float,
                throttle_bps: float | None, now: float, stalled: bool = False, causes: str = "") -> bool:
    """Write wave ``progress.wave_id``'s last poll into ``live_progress.json`` (atomic replace).

    The page is a view: a write that fails (disk full, folder gone) is returned as False, never
    raised into the wait."""
    path = Path(run_dir) / FILE
    try:
        doc = read_json(path) or {"waves": {}}
        doc["waves"][str(progress.wave_id)] = asdict(PollRecord(
            progress.done, progress.total, progress.bytes_remaining, progress.bytes_total, progress.source,
            round(rate_bps, 1), round(quiet_s, 1), None if throttle_bps is None else int(throttle_bps), stalled,
            causes, round(now, 3)))
        write_json_atomic(path, doc)
    except (OSError, InvalidPayload):
        return False
    return True
