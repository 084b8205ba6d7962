"""The project's Airflow plugin: the maintenance-window timetable, the reports app and the run-note listener.

Airflow loads it through the package's ``airflow.plugins`` entry point (pyproject.toml); a
deployment that does not pip-install the package copies a two-line shim importing
:class:`KafkaRunbooksPlugin` into ``$AIRFLOW_HOME/plugins``. The scheduler needs the timetable
registered to deserialize DAGs scheduled by it; the API server mounts the reports app at
``/kafka-runbooks`` (behind Airflow's login, see :mod:`operators.reports.app`); the scheduler calls
the listener of :mod:`operators.reports.run_notes` when a run ends, which writes the run's outcome as its note;
the API server puts :class:`~operators.approval.answer_gate.AnswerGate` in front of its calls (a late
answer to an approval, and the four-eyes refusal, said in words and recorded on the run).

Failure: none at import beyond Airflow's own; a missing registration shows in the scheduler as
"Timetable class ... is not registered" and the report links answer 404.
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from operators.approval.answer_gate import AnswerGate
from operators.reports import run_notes
from operators.reports.app import app
from procedures.reports.locations import URL_PREFIX
from operators.windows.timetable import MaintenanceWindowTimetable


class KafkaRunbooksPlugin(AirflowPlugin):
    name = "kafka_runbooks"
    timetables = [MaintenanceWindowTimetable]
    listeners = [run_notes]
    fastapi_apps = [{"app": app, "url_prefix": URL_PREFIX, "name": "Kafka Runbooks reports"}]
    fastapi_root_middlewares = [{"middleware": AnswerGate, "args": [], "kwargs": {}, "name": "Kafka Runbooks answer gate"}]
