"""The Airflow plugin that registers the project's timetable, so the scheduler can load it.

Airflow only deserializes custom timetables that a plugin names. The package's
``airflow.plugins`` entry point (pyproject.toml) points here; a deployment that does not
install the package copies this file into ``$AIRFLOW_HOME/plugins``.

Failure: none at import beyond Airflow's own; a missing registration shows in the scheduler as
"Timetable class ... is not registered".
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from operators.windows.timetable import MaintenanceWindowTimetable


class KafkaRunbooksPlugin(AirflowPlugin):
    name = "kafka_runbooks"
    timetables = [MaintenanceWindowTimetable]
