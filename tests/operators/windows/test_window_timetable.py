"""The timetable schedules a runbook at each opening of a window that admits it, following the
file as it is when the scheduler asks, and never a run outside a window."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pendulum
import pytest
from airflow.timetables.base import DataInterval, TimeRestriction

from procedures.windows.calendar import open_window
from procedures.windows.spec import ENV_VAR, parse_windows_text
from operators.windows.timetable import MaintenanceWindowTimetable

FILE = """\
clusters:
  c1:
    windows:
      - name: berlin-night
        start: "0 1 * * 2,4"
        duration: 4h
        timezone: Europe/Berlin
        runbooks: [decommission_brokers]
"""
UTC = timezone.utc


@pytest.fixture
def windows_file(tmp_path, monkeypatch):
    path = tmp_path / "windows.yaml"
    path.write_text(FILE)
    monkeypatch.setenv(ENV_VAR, str(path))
    return path


def restriction(earliest: datetime, catchup: bool = True) -> TimeRestriction:
    return TimeRestriction(earliest=pendulum.instance(earliest), latest=None, catchup=catchup)


def test_runs_start_at_each_window_opening_in_order(windows_file):
    tt = MaintenanceWindowTimetable("c1", "decommission_brokers")
    first = tt.next_dagrun_info(last_automated_data_interval=None,
                                restriction=restriction(datetime(2026, 1, 5, tzinfo=UTC)))
    assert first.run_after == datetime(2026, 1, 6, 0, tzinfo=UTC)   # Tue 01:00 CET
    assert first.data_interval.end == datetime(2026, 1, 6, 4, tzinfo=UTC)
    second = tt.next_dagrun_info(last_automated_data_interval=first.data_interval,
                                 restriction=restriction(datetime(2026, 1, 5, tzinfo=UTC)))
    assert second.run_after == datetime(2026, 1, 8, 0, tzinfo=UTC)  # Thu


def test_every_scheduled_run_falls_inside_a_window(windows_file):
    tt = MaintenanceWindowTimetable("c1", "decommission_brokers")
    cluster = parse_windows_text(FILE).cluster("c1")
    last = None
    for _ in range(60):   # ~7 months, across both daylight-saving changes
        info = tt.next_dagrun_info(last_automated_data_interval=last,
                                   restriction=restriction(datetime(2026, 1, 1, tzinfo=UTC)))
        assert open_window(cluster, "decommission_brokers", info.run_after) is not None, info
        last = info.data_interval


def test_the_schedule_follows_an_edited_file(windows_file):
    tt = MaintenanceWindowTimetable("c1", "decommission_brokers")
    r = restriction(datetime(2026, 1, 5, tzinfo=UTC))
    assert tt.next_dagrun_info(last_automated_data_interval=None, restriction=r).run_after.day == 6
    windows_file.write_text(FILE.replace("2,4", "5"))   # Fridays only
    assert tt.next_dagrun_info(last_automated_data_interval=None, restriction=r).run_after.day == 9


def test_nothing_is_scheduled_without_a_file_a_cluster_or_an_admitting_window(windows_file, monkeypatch):
    r = restriction(datetime(2026, 1, 5, tzinfo=UTC))
    assert MaintenanceWindowTimetable("c1", "delete_topics").next_dagrun_info(
        last_automated_data_interval=None, restriction=r) is None
    assert MaintenanceWindowTimetable("c9", "decommission_brokers").next_dagrun_info(
        last_automated_data_interval=None, restriction=r) is None
    windows_file.write_text("clusters: {}\n")   # malformed: refused, nothing scheduled
    assert MaintenanceWindowTimetable("c1", "decommission_brokers").next_dagrun_info(
        last_automated_data_interval=None, restriction=r) is None
    monkeypatch.delenv(ENV_VAR)
    assert MaintenanceWindowTimetable("c1", "decommission_brokers").next_dagrun_info(
        last_automated_data_interval=None, restriction=r) is None


def test_without_catchup_a_window_already_closed_is_not_run_late(windows_file):
    tt = MaintenanceWindowTimetable("c1", "decommission_brokers")
    info = tt.next_dagrun_info(last_automated_data_interval=None,
                               restriction=restriction(datetime(2020, 1, 1, tzinfo=UTC), catchup=False))
    assert info.run_after > datetime.now(UTC) - timedelta(hours=4)


def test_it_round_trips_through_serialization_and_the_plugin_registers_it():
    tt = MaintenanceWindowTimetable("c1", "decommission_brokers")
    assert MaintenanceWindowTimetable.deserialize(tt.serialize()) == tt
    from operators.plugin import KafkaRunbooksPlugin
    assert MaintenanceWindowTimetable in KafkaRunbooksPlugin.timetables
