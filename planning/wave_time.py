"""What a run of waves takes besides copying: each wave's fixed cost and the gap before the next.

One model, shared by the plan's estimate (spark_jobs/summary.py, the plan report and approval
text), the rehearsal (cli/rehearsal_run.py: it waits the modelled gap after each wave it sees end)
and the window guard (operators/reassignment/execute.py: a wave's predicted duration)::

    span of wave i  = copy_i (the busiest broker's bytes ÷ throttle) + fixed
    gap after i     = when the executor sees wave i done − its end + the next wave's writes
    total           = Σ span_i + Σ gap_i (i < last) + the last wave's detection
                      ("first write to last wave done": wave 0 submitted → the last one seen done)

``fixed`` is the controller's per-wave cost measured on real Kafka 2.4.1 (tests/vectors/
real_kafka_2_4_1/, ZooKeeper commit times; the emulator's defaults, kafka_sim/spec.py): its
reaction to a new ``/admin/reassign_partitions`` (0.18 s), a new replica's first fetch (0.5 s),
the completion after the last ISR join (0.3 s). The executor sees a wave end at one of its polls
(``poll_interval_s``, 5 s by default): within its inline wait (20 s) at the first poll after the
end, counted from the submission (a 1 s wave is seen at 5 s); after it, on the trigger's polls, on
average half a poll late, plus Airflow resuming the deferred task (:data:`RESUME_S`), then the
next wave's throttles and node (:data:`SUBMIT_S`). Calibrated on real 2.4.1 runs (issue 38): an
add_brokers plan of 9 waves and 1.7 s of copying took ~47 s (each wave seen at its first 5 s
poll); a decommission of 6 waves at 1 MiB/s waited 1–8 s between waves (half a 5 s poll, the resume).

:func:`measured_costs` takes the executor's time between waves from a run's own history
(``waves.json``: a wave's ``done_at`` to the next one's ``submitted_at``; ``done_at`` is stamped
after Airflow resumed the task, so the resume stays the model's) when it has any. Nothing here
reads a clock or a file.

Failure: a negative or non-finite figure raises :class:`kafka_zk.errors.InvalidInput`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from statistics import median
from typing import Iterable, Sequence

from kafka_zk.errors import InvalidInput

#: Kafka 2.4.1's per-move fixed cost (simulated seconds; kafka_sim/spec.py documents each measurement)
REASSIGN_REACTION_S = 0.18
FETCH_START_S = 0.5
REASSIGN_COMPLETION_S = 0.3
WAVE_FIXED_S = REASSIGN_REACTION_S + FETCH_START_S + REASSIGN_COMPLETION_S
#: the executor's defaults (operators/reassignment/execute.py, operators/deferral.py)
POLL_S = 5.0
INLINE_WAIT_S = 20.0
#: Airflow resuming a deferred task after its trigger's event, and the executor's reads and writes
#: before the next wave's node (window check, throttles, the node): calibrated above
RESUME_S = 1.5
SUBMIT_S = 0.2
CALIBRATED = "calibrated defaults: real Kafka 2.4.1"


@dataclass(frozen=True)
class WaveCosts:
    """The non-copying part of a run of waves (module docstring); seconds."""

    fixed_s: float = WAVE_FIXED_S
    poll_s: float = POLL_S
    inline_wait_s: float = INLINE_WAIT_S
    resume_s: float = RESUME_S
    submit_s: float = SUBMIT_S
    between_s: float | None = None      # measured done → next submitted on this run (replaces submit_s)
    source: str = CALIBRATED

    def __post_init__(self) -> None:
        for name in ("fixed_s", "poll_s", "inline_wait_s", "resume_s", "submit_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise InvalidInput(f"wave cost {name}={value!r} must be a finite number of seconds ≥ 0")
        if self.between_s is not None and not (math.isfinite(self.between_s) and self.between_s >= 0):
            raise InvalidInput(f"wave cost between_s={self.between_s!r} must be a finite number of seconds ≥ 0")

    def span(self, copy_s: float) -> float:
        """A wave's span: its copying at the throttle plus the controller's fixed cost."""
        return max(0.0, float(copy_s)) + self.fixed_s

    def detection(self, span_s: float) -> float:
        """Seconds from a wave's end until the executor has it done (its next poll; see the docstring)."""
        if self.poll_s <= 0:
            return self.resume_s
        if span_s <= self.inline_wait_s:
            return math.ceil(span_s / self.poll_s - 1e-9) * self.poll_s - span_s
        return self.poll_s / 2 + self.resume_s

    def gap(self, span_s: float) -> float:
        """From a wave's end to the next wave's start: its detection and the executor's work between."""
        return self.detection(span_s) + (self.submit_s if self.between_s is None else self.between_s)

    def overhead(self, copy_s: float) -> float:
        """A wave's seconds from its submission to seen done, less its copying (the window guard's)."""
        return self.fixed_s + self.detection(self.span(copy_s))


@dataclass(frozen=True)
class Estimate:
    """A run's duration in its parts (seconds): what the approver reads."""

    waves: int
    copy_s: float          # Σ busiest broker's bytes ÷ throttle
    fixed_s: float         # Σ the controller's per-wave cost
    gaps_s: float          # Σ executor's detection and the writes between waves (and the last wave seen done)
    source: str

    @property
    def total_s(self) -> float:
        return self.copy_s + self.fixed_s + self.gaps_s

    def to_json(self) -> dict:
        return {"waves": self.waves, "copy_s": round(self.copy_s, 3), "fixed_s": round(self.fixed_s, 3),
                "gaps_s": round(self.gaps_s, 3), "total_s": round(self.total_s, 3), "source": self.source}

    def text(self) -> str:
        """``47 s = 1.7 s copying at the throttle + 8.8 s fixed (9 waves) + 36.5 s between waves``."""
        return (f"{seconds_text(self.total_s)} = {seconds_text(self.copy_s)} copying at the throttle + "
                f"{seconds_text(self.fixed_s)} fixed ({self.waves} wave{'s' if self.waves != 1 else ''}) + "
                f"{seconds_text(self.gaps_s)} between waves ({self.source})")


def estimate(copy_s: Sequence[float | None], costs: WaveCosts = WaveCosts()) -> Estimate:
    """The run's duration, first write to last wave done, for waves copying ``copy_s`` each (None: 0)."""
    copies = [max(0.0, float(c or 0.0)) for c in copy_s]
    spans = [costs.span(c) for c in copies]
    gaps = sum(costs.gap(s) for s in spans[:-1]) + (costs.detection(spans[-1]) if spans else 0.0)
    return Estimate(len(copies), sum(copies), costs.fixed_s * len(copies), gaps, costs.source)


def measured_costs(history: Iterable[tuple[float | None, float | None]], costs: WaveCosts = WaveCosts()
                   ) -> WaveCosts:
    """``costs`` with the executor's time between waves measured on a run's own history: pairs of
    (``done_at`` of wave i, ``submitted_at`` of wave i+1), epoch seconds; unchanged without one."""
    between = [float(s) - float(d) for d, s in history if d is not None and s is not None and float(s) >= float(d)]
    if not between:
        return costs
    return replace(costs, between_s=median(between),
                   source=f"measured on this run's {len(between)} gap{'s' if len(between) > 1 else ''} between waves")


def history_pairs(waves: Sequence[object]) -> list[tuple[float | None, float | None]]:
    """(done_at of wave i, submitted_at of wave i+1) of a run's waves (objects or dicts with those fields)."""
    def field(w: object, name: str) -> float | None:
        value = w.get(name) if isinstance(w, dict) else getattr(w, name, None)
        try:
            return None if value in (None, "") else float(value)
        except (TypeError, ValueError):
            return None
    return [(field(a, "done_at"), field(b, "submitted_at")) for a, b in zip(waves, waves[1:])]


def seconds_text(s: float) -> str:
    """``47 s``, ``12.5 min``, ``4.20 h``."""
    if s < 120:
        return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.2f} h"
