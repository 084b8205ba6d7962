"""What the window guard decided in one run (``windows.json`` in the run folder), and the throttle
choice while a run waits between windows.

:class:`WindowBook` records, for the report and the notification: every decision before a wave
(start, or wait and why, with the predicted duration and the measured factor), each pause (the
wave not started, when the run resumes, whether the throttles were kept or removed), the waves
that were in flight when their window closed (a ZooKeeper-mode reassignment cannot be paused: it
runs to its end, and the report says so), and the recorded ``outside_window`` override.

:func:`pause_throttles` / :func:`resume_throttles` implement ``between_windows=remove``: the
run's throttles are restored to their pre-run values while it waits (only ever between waves,
when no wave of the run is copying) and set again from the same record when the next window
opens. The default, ``keep``, leaves them (data may still be catching up).

Failure: none beyond the throttle writes' own (:mod:`kafka_zk.admin.throttles`).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

from kafka_zk.admin.throttles import ThrottleRecord, remove_throttles
from procedures.run_folder import RunFolder
from kafka_zk.writer import ZkWriter
from procedures.throttles import record_then_apply, resolve_rate
from procedures.windows.guard import WaveDecision
from planning.plan_folder.read import load_plan_artifacts

FILE = "windows.json"


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).isoformat(timespec="seconds")


@dataclass
class WindowBook:
    """The content of ``windows.json`` (see module docstring)."""

    decisions: list[dict[str, Any]] = field(default_factory=list)
    pauses: list[dict[str, Any]] = field(default_factory=list)
    overran: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)      # waves stopped: no window can hold them
    started: dict[str, dict[str, Any]] = field(default_factory=dict)   # wave id -> window it started in
    outside_window: bool = False
    throttles_removed_at_pause: bool = False

    @classmethod
    def load(cls, folder: RunFolder) -> "WindowBook":
        doc = folder.read_json(folder.root / FILE)
        return cls(**doc) if isinstance(doc, dict) else cls()

    def save(self, folder: RunFolder) -> None:
        folder.write_json(folder.root / FILE, asdict(self))

    @property
    def outside_window_noted(self) -> bool:
        return self.outside_window

    def note_outside_window(self) -> None:
        self.outside_window = True

    def decided(self, wave_id: int, now: float, d: WaveDecision, predicted_s: float | None, factor: float) -> None:
        self.decisions.append({"wave": wave_id, "at": _iso(now), "start": d.start, "reason": d.reason,
                               "predicted_s": None if predicted_s is None else round(predicted_s, 1),
                               "factor": round(factor, 3)})
        if d.start and d.window is not None:
            self.started[str(wave_id)] = {"window": d.window.window.name,
                                          "closes": d.window.closes.isoformat(timespec="seconds"),
                                          "closes_epoch": d.window.closes.timestamp()}

    def paused(self, wave_id: int, now: float, d: WaveDecision, throttles_removed: bool,
               what: str | None = None) -> None:
        """A pause before wave ``wave_id``; ``what`` names a step that is no wave (``batch 2/5``, ``the
        change``): such a run sets no throttles, so none are recorded."""
        self.throttles_removed_at_pause = throttles_removed
        self.pauses.append({"before_wave": wave_id, "at": _iso(now), "reason": d.reason,
                            "resumes_at": d.resume.opens.isoformat(timespec="seconds") if d.resume else None,
                            "resume_window": d.resume.window.name if d.resume else None,
                            "throttles": None if what else "removed, re-set on resume" if throttles_removed else "kept",
                            "resumed_at": None, **({"what": what} if what else {})})

    def waited_before(self, wave_id: int) -> bool:
        """Has this wave (or batch) already waited for a window's opening?"""
        return any(p["before_wave"] == wave_id for p in self.pauses)

    def refuse(self, wave_id: int, now: float, reason: str) -> None:
        """A wave the run stops at because no window can ever hold it (the reason says why)."""
        self.refused.append({"wave": wave_id, "at": _iso(now), "reason": reason})

    def resumed(self, now: float) -> None:
        if self.pauses and self.pauses[-1]["resumed_at"] is None:
            self.pauses[-1]["resumed_at"] = _iso(now)
        self.throttles_removed_at_pause = False

    def wave_done(self, wave_id: int, now: float, log: logging.Logger) -> "WindowBook":
        """Note a wave that finished after its window closed (it ran to its end, as it must)."""
        started = self.started.get(str(wave_id))
        if started and now > started["closes_epoch"]:
            self.overran.append({"wave": wave_id, "window": started["window"], "closed": started["closes"],
                                 "finished": _iso(now)})
            log.warning("wave %d was in flight when window %s closed at %s and ran to its end at %s "
                        "(a ZooKeeper-mode reassignment cannot be paused)", wave_id, started["window"],
                        started["closes"], _iso(now))
        return self


def pause_throttles(folder: RunFolder, writer: ZkWriter) -> list[str]:
    """Restore the pre-run throttle values while the run waits for a window (between waves only)."""
    if not folder.throttle_record.is_file():
        return []
    return remove_throttles(writer, ThrottleRecord.load(folder.throttle_record))


def resume_throttles(folder: RunFolder, writer: ZkWriter, rate_param: Any) -> None:
    """Set the plan's broker throttle rates again (the next wave adds its topic lists itself)."""
    plan = load_plan_artifacts(str(folder.plan_dir))
    rate = resolve_rate(rate_param, plan.throttle_bytes_per_s)
    brokers = sorted({b for w in plan.waves for b in w.throttled_brokers})
    record_then_apply(folder, writer, (), brokers, rate)
