"""Window arithmetic: is a window open now, when does it close, when does the next one open.

Starts are cron expressions in the window's own time zone (croniter, so daylight-saving
changes follow the local clock: "01:00 Europe/Berlin" is 00:00 UTC in winter and 23:00 UTC the
day before in summer). Every function takes the instant to judge (an aware datetime) instead of
reading the clock, so callers and tests decide what "now" is.

Failure: a naive datetime raises ``ValueError`` (an instant without a zone is ambiguous).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from procedures.windows.spec import ClusterWindows, Window

# How far ahead :func:`next_opening` looks before saying "no window admits this runbook".
HORIZON = timedelta(days=366)


@dataclass(frozen=True)
class OpenWindow:
    """One occurrence of a window: ``opens`` ≤ t < ``closes`` (UTC)."""

    window: Window
    opens: datetime
    closes: datetime

    def left(self, now: datetime) -> timedelta:
        return max(self.closes - _utc(now), timedelta(0))


def _utc(t: datetime) -> datetime:
    if t.tzinfo is None:
        raise ValueError(f"{t!r} has no time zone; pass an aware datetime")
    # a plain datetime, whatever subclass came in (pendulum's confuses croniter's arithmetic)
    return datetime.fromtimestamp(t.timestamp(), tz=timezone.utc)


def _occurrence(window: Window, opens_local: datetime) -> OpenWindow:
    opens = opens_local.astimezone(timezone.utc)
    return OpenWindow(window=window, opens=opens, closes=opens + window.duration)


def occurrence_at(window: Window, now: datetime) -> OpenWindow | None:
    """The occurrence of ``window`` open at ``now``, if any (the latest start not after now)."""
    t = _utc(now)
    local = t.astimezone(window.zone)
    from croniter import croniter      # here: a run without windows never loads it (start-up CPU)

    # croniter's get_prev is strictly before its base: step a second past now to count a start at now
    last = croniter(window.start, local + timedelta(seconds=1)).get_prev(datetime)
    occ = _occurrence(window, last)
    return occ if occ.opens <= t < occ.closes else None


def open_window(cluster: ClusterWindows, runbook: str, now: datetime) -> OpenWindow | None:
    """The window open at ``now`` that admits ``runbook``, the one closing last if several."""
    found = [o for w in cluster.windows if w.admits(runbook) for o in [occurrence_at(w, now)] if o is not None]
    return max(found, key=lambda o: o.closes, default=None)


def next_opening(cluster: ClusterWindows, runbook: str, after: datetime) -> OpenWindow | None:
    """The first occurrence starting strictly after ``after`` of a window admitting ``runbook``."""
    t = _utc(after)
    best: OpenWindow | None = None
    from croniter import croniter

    for w in cluster.windows:
        if not w.admits(runbook):
            continue
        start = croniter(w.start, t.astimezone(w.zone)).get_next(datetime)
        occ = _occurrence(w, start)
        if occ.opens - t <= HORIZON and (best is None or occ.opens < best.opens):
            best = occ
    return best
