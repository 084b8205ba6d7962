"""Window arithmetic on the local clock of each window, daylight saving included."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from procedures.windows.calendar import next_opening, occurrence_at, open_window
from procedures.windows.spec import parse_windows_text

FILE = """\
clusters:
  c1:
    windows:
      - name: berlin-night
        start: "0 1 * * 2,4"
        duration: 4h
        timezone: Europe/Berlin
        runbooks: [decommission_brokers]
      - name: utc-sunday
        start: "0 2 * * 0"
        duration: 1h
        timezone: UTC
        runbooks: ["*"]
"""
C1 = parse_windows_text(FILE).cluster("c1")
UTC = timezone.utc


def at(*a: int) -> datetime:
    return datetime(*a, tzinfo=UTC)


def test_a_berlin_window_opens_at_local_one_in_winter_and_summer():
    # Tue 2026-01-06 01:00 CET = 00:00 UTC; Tue 2026-07-07 01:00 CEST = 2026-07-06 23:00 UTC
    winter = occurrence_at(C1.windows[0], at(2026, 1, 6, 0, 0))
    assert winter and (winter.opens, winter.closes) == (at(2026, 1, 6, 0), at(2026, 1, 6, 4))
    summer = occurrence_at(C1.windows[0], at(2026, 7, 6, 23, 30))
    assert summer and summer.opens == at(2026, 7, 6, 23)
    assert occurrence_at(C1.windows[0], at(2026, 7, 7, 3, 0)) is None  # 05:00 local: closed


def test_the_close_is_exclusive_and_the_open_inclusive():
    w = C1.windows[1]
    assert occurrence_at(w, at(2026, 3, 1, 2, 0)) is not None
    assert occurrence_at(w, at(2026, 3, 1, 2, 59, 59)) is not None
    assert occurrence_at(w, at(2026, 3, 1, 3, 0)) is None
    assert occurrence_at(w, at(2026, 3, 1, 1, 59, 59)) is None


def test_a_runbook_only_sees_windows_that_admit_it():
    tuesday = at(2026, 1, 6, 1, 0)
    assert open_window(C1, "decommission_brokers", tuesday).window.name == "berlin-night"
    assert open_window(C1, "delete_topics", tuesday) is None
    left = open_window(C1, "decommission_brokers", tuesday).left(tuesday)
    assert left == timedelta(hours=3)


def test_the_next_opening_is_the_earliest_admitting_window():
    # Wed 2026-01-07 12:00 UTC: next Berlin window Thu 00:00 UTC; next "*" window Sun 02:00 UTC
    wed = at(2026, 1, 7, 12)
    assert next_opening(C1, "decommission_brokers", wed).opens == at(2026, 1, 8, 0)
    assert next_opening(C1, "delete_topics", wed).opens == at(2026, 1, 11, 2)
    assert next_opening(C1, "decommission_brokers", at(2026, 1, 8, 0)).opens == at(2026, 1, 11, 2)


def test_naive_instants_are_refused():
    with pytest.raises(ValueError, match="no time zone"):
        open_window(C1, "x", datetime(2026, 1, 1))
