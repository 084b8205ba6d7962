"""The window guard: may a run write now, and does its next wave finish before the window closes?

Pure decisions on the windows file (:mod:`procedures.windows.spec`), the window arithmetic
(:mod:`procedures.windows.calendar`) and the times the executor gives it; no Airflow, no clock
read here.

* :func:`window_gate` — the cluster's windows for this runbook, or ``None`` when the run is not
  bound by windows (no file, no entry for the cluster, or the recorded ``outside_window`` Param).
* :func:`decide_wave` — start the next wave, or wait for the next opening: a wave starts only
  when a window admitting the runbook is open and the wave's predicted duration (the planner's
  copy time at the run's throttle plus the shared model's fixed cost and detection,
  :func:`run_wave_seconds` and :func:`run_costs` over :mod:`planning.wave_time`, times
  the factor measured on this run's finished waves) fits in
  the time the window has left. A wave whose duration is unknown (no partition sizes) starts
  whenever a window is open.
  A wave that fits a window's full length but not what is left of it waits for the next opening
  — once: resumed there (``waited``) a few seconds late, it would again miss by the lateness and
  wait forever. So a wave that waited starts at the opening it waited for when it overruns the
  window's close by at most :func:`resume_allowance_s` (the resume's lateness is all it misses
  by), and otherwise the decision is to stop (``stop``), naming the wave's prediction, the window
  and the fix (docs/maintenance-windows.md, "A wave that fits only at the opening").
* :func:`measured_factor` — actual over predicted wave durations so far (1.0 before any).
* :func:`too_long_for_every_window` — waves no window is long enough for (refused before any
  write: they would wait forever).

Failure: none; the caller turns "cannot fit" into an error naming the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Iterable, Sequence

from kafka_zk.errors import KafkaZkError
from planning.wave_time import WaveCosts, history_pairs, measured_costs

from procedures.windows.calendar import OpenWindow, next_opening, open_window
from procedures.windows.spec import ClusterWindows, WindowsFile

#: bounds on the measured correction (one odd wave must not make the guard absurd)
FACTOR_MIN, FACTOR_MAX = 0.25, 20.0
#: how far past a window's close a wave that waited for that window's opening may be predicted to
#: run (the resume's lateness): this share of the window's length, at least the minimum
RESUME_ALLOWANCE_SHARE, RESUME_ALLOWANCE_MIN_S = 0.05, 60.0


@dataclass(frozen=True)
class WindowGate:
    """The windows one run is bound by."""

    cluster: ClusterWindows
    runbook: str

    @property
    def longest(self) -> timedelta:
        return max((w.duration for w in self.cluster.windows if w.admits(self.runbook)), default=timedelta(0))


@dataclass(frozen=True)
class WaveDecision:
    """Start now, wait until ``resume`` opens, or (``stop``) neither: ``reason`` says why in one
    sentence (and, for a stop, the fix)."""

    start: bool
    reason: str
    window: OpenWindow | None = None      # the window open now, if any
    resume: OpenWindow | None = None      # the next opening, when not starting
    stop: bool = False                    # waiting again would not help (see the module docstring)


def window_gate(windows: WindowsFile | None, conn_id: str, runbook: str, outside_window: bool) -> WindowGate | None:
    """The gate of this run, or ``None`` when windows do not bind it."""
    if outside_window or windows is None:
        return None
    cluster = windows.cluster(conn_id)
    if cluster is None or not any(w.admits(runbook) for w in cluster.windows):
        return None
    return WindowGate(cluster, runbook)


def predicted_wave_seconds(planned_s: float | None, planned_rate: int | None, run_rate: int | None,
                           factor: float, overhead_s: float = 0.0) -> float | None:
    """The planner's copy time rescaled to the run's throttle, plus the planner's per-wave overhead
    (submission, the controller's steps, the completion poll), corrected by ``factor``."""
    if planned_s is None:
        return None
    scale = (planned_rate / run_rate) if planned_rate and run_rate else 1.0
    return (float(planned_s) * scale + float(overhead_s)) * factor


def run_wave_seconds(planned_s: float | None, planned_rate: int | None, run_rate: int | None, factor: float,
                     costs: WaveCosts) -> float | None:
    """A wave's seconds from its submission to seen done: its copy time at the run's throttle plus the
    shared model's fixed cost and detection (planning/wave_time.py), corrected by ``factor``."""
    copy = predicted_wave_seconds(planned_s, planned_rate, run_rate, 1.0)
    return None if copy is None else (copy + costs.overhead(copy)) * factor


def run_costs(poll_interval_s: Any, waves: Sequence[Any] = ()) -> WaveCosts:
    """The run's wave costs: the shared model at its poll interval, its gaps measured on ``waves``
    (its ``waves.json`` so far) when it has any."""
    try:
        costs = WaveCosts(poll_s=float(poll_interval_s))
    except (TypeError, ValueError, KafkaZkError):
        costs = WaveCosts()
    return measured_costs(history_pairs(list(waves)), costs)


def measured_factor(finished: Iterable[tuple[float | None, float]]) -> float:
    """Sum of actual over sum of predicted seconds of finished waves (pairs ``(predicted, actual)``)."""
    pairs = [(p, a) for p, a in finished if p and p > 0 and a >= 0]
    if not pairs:
        return 1.0
    factor = sum(a for _, a in pairs) / sum(p for p, _ in pairs)
    return min(FACTOR_MAX, max(FACTOR_MIN, factor))


def resume_allowance_s(window_length_s: float) -> float:
    """Seconds past the close a resumed wave may be predicted to run (see the module docstring)."""
    return max(RESUME_ALLOWANCE_MIN_S, RESUME_ALLOWANCE_SHARE * window_length_s)


def decide_wave(gate: WindowGate, now: datetime, predicted_s: float | None, waited: bool = False) -> WaveDecision:
    """Start the next wave now, wait for the next opening, or stop (see module docstring);
    ``waited``: this wave has already waited for an opening."""
    window = open_window(gate.cluster, gate.runbook, now)
    if window is None:
        resume = next_opening(gate.cluster, gate.runbook, now)
        return WaveDecision(False, f"no window admitting {gate.runbook} is open at {_t(now)}", None, resume)
    left = window.left(now).total_seconds()
    if predicted_s is None:
        return WaveDecision(True, f"window {window.window.name} open until {_t(window.closes)} (wave duration "
                                  "unknown: no partition sizes)", window)
    if predicted_s <= left:
        return WaveDecision(True, f"predicted {predicted_s:.0f}s fits in the {left:.0f}s left in window "
                                  f"{window.window.name} (closes {_t(window.closes)})", window)
    length = (window.closes - window.opens).total_seconds()
    if waited and predicted_s <= length:
        return _at_the_opening_waited_for(window, now, predicted_s, left, length)
    resume = next_opening(gate.cluster, gate.runbook, window.closes - timedelta(seconds=1))
    return WaveDecision(False, f"predicted {predicted_s:.0f}s does not fit in the {left:.0f}s left in window "
                               f"{window.window.name} (closes {_t(window.closes)})", window, resume)


def _at_the_opening_waited_for(window: OpenWindow, now: datetime, predicted_s: float, left: float,
                               length: float) -> WaveDecision:
    """A wave that fits the window's length, resumed too late in the opening it waited for."""
    late, over, allowance = (now - window.opens).total_seconds(), predicted_s - left, resume_allowance_s(length)
    name = window.window.name
    if over <= allowance:
        return WaveDecision(True, f"predicted {predicted_s:.0f}s fits window {name}'s {length:.0f}s but not the "
                                  f"{left:.0f}s left: it waited for this opening and was resumed {late:.0f}s after "
                                  f"it, so it starts and may end {over:.0f}s after the close at {_t(window.closes)} "
                                  f"(resume allowance {allowance:.0f}s)", window)
    return WaveDecision(False, f"predicted {predicted_s:.0f}s fits window {name}'s {length:.0f}s but not the "
                               f"{left:.0f}s left: it waited for this opening and was resumed {late:.0f}s after it "
                               f"(opened {_t(window.opens)}), more than the {allowance:.0f}s a resume may be late; "
                               "waiting again could miss again forever. Nothing of it was written. Widen the window and "
                               "clear the step to resume at this wave, or plan again with smaller waves (set or lower "
                               "max_moves_per_broker)", window, stop=True)


def too_long_for_every_window(gate: WindowGate, predicted: Sequence[float | None]) -> list[int]:
    """Indexes of waves predicted to take longer than the longest window admitting the runbook."""
    longest = gate.longest.total_seconds()
    return [i for i, p in enumerate(predicted) if p is not None and p > longest]


def _t(t: datetime) -> str:
    return t.isoformat(timespec="seconds")
