"""MaintenanceWindowTimetable: schedule a runbook at each opening of its cluster's windows.

A DAG with ``schedule=MaintenanceWindowTimetable("kafka_zookeeper_default", "decommission_brokers")``
gets one run at the start of every window of that cluster that admits the runbook, as the windows
file says *when the scheduler asks* (edit the file and the next run follows it; no DAG change).
A run's data interval is the window's occurrence (start → close), so the run, its guard and
its report know which window they belong to. Runs are never caught up: a window that closed
while the scheduler was down is skipped, not run late.

The file's path is resolved at each call: :data:`~procedures.windows.spec.ENV_VAR` or, when
the scheduler can read Variables, :data:`~procedures.windows.spec.VARIABLE`. The class must be
registered with Airflow (``operators.plugin``) for the scheduler to deserialize it.

Failure: with no file, a malformed file, or no window admitting the runbook within a year, the
timetable schedules nothing and logs why (the scheduler must keep running; the runbook's own
window guard refuses to write when it runs).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone
from typing import Any

import pendulum
from airflow.timetables.base import DagRunInfo, DataInterval, TimeRestriction, Timetable

from procedures.windows.calendar import next_opening, open_window
from operators.windows.config import configured_windows_path
from procedures.windows.spec import VARIABLE, WindowsFileError, load_windows_file

log = logging.getLogger(__name__)


class MaintenanceWindowTimetable(Timetable):
    """Runs at the opening of each window (see module docstring)."""

    periodic = True
    run_ordering = ("logical_date",)

    def __init__(self, conn_id: str, runbook: str) -> None:
        self.conn_id = conn_id
        self.runbook = runbook
        self.description = f"at each maintenance window of {conn_id} that admits {runbook}"

    @property
    def summary(self) -> str:
        return f"windows of {self.conn_id}"

    def serialize(self) -> dict[str, Any]:
        return {"conn_id": self.conn_id, "runbook": self.runbook}

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> "MaintenanceWindowTimetable":
        return cls(data["conn_id"], data["runbook"])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MaintenanceWindowTimetable) and self.serialize() == other.serialize()

    def __hash__(self) -> int:
        return hash((self.conn_id, self.runbook))

    def infer_manual_data_interval(self, *, run_after: datetime) -> DataInterval:
        """A manual run's interval is the window open at that moment, or the instant itself."""
        cluster = self._cluster()
        occ = open_window(cluster, self.runbook, run_after) if cluster else None
        if occ is None:
            return DataInterval.exact(run_after)
        return DataInterval(start=pendulum.instance(occ.opens), end=pendulum.instance(occ.closes))

    def next_dagrun_info(self, *, last_automated_data_interval: DataInterval | None,
                         restriction: TimeRestriction) -> DagRunInfo | None:
        cluster = self._cluster()
        if cluster is None:
            return None
        after = (last_automated_data_interval.start if last_automated_data_interval
                 else (restriction.earliest or datetime.now(timezone.utc)) - timedelta(seconds=1))
        now = datetime.now(timezone.utc)
        if not restriction.catchup:
            # never run a window late: start from the window open now, or the next one
            current = open_window(cluster, self.runbook, now)
            floor = (current.opens - timedelta(seconds=1)) if current else now
            after = max(after, floor)
        occ = next_opening(cluster, self.runbook, after)
        if occ is None:
            log.warning("no window of %s admits %s within a year: nothing scheduled", self.conn_id, self.runbook)
            return None
        if restriction.latest is not None and occ.opens > restriction.latest:
            return None
        # run at the opening (DagRunInfo.interval would run at the close)
        opens, closes = pendulum.instance(occ.opens), pendulum.instance(occ.closes)
        return DagRunInfo(run_after=opens, data_interval=DataInterval(start=opens, end=closes))

    def _cluster(self):
        path = configured_windows_path()
        if path is None:
            log.warning("no windows file configured (%s): %s is not scheduled", VARIABLE, self.runbook)
            return None
        try:
            cluster = load_windows_file(path).cluster(self.conn_id)
        except WindowsFileError as e:
            log.error("windows file refused, nothing scheduled: %s", e)
            return None
        if cluster is None:
            log.warning("windows file %s names no cluster %s: %s is not scheduled", path, self.conn_id, self.runbook)
        return cluster
