"""Where the maintenance-windows file is, and reading it, from a task or from the scheduler.

The path is the Airflow Variable :data:`~procedures.windows.spec.VARIABLE` when set, else the
environment variable :data:`~procedures.windows.spec.ENV_VAR`. A task reads the Variable through
the Task SDK (``in_task=True``: the worker's supervisor answers it); the scheduler and the
timetable read it from the metadata DB. Outside both (a bare interpreter, a unit test) only the
environment decides, and nothing here opens a database.

Failure: :func:`configured_windows` raises :class:`~procedures.windows.spec.WindowsFileError`
for a configured file that is missing or malformed (a run never goes on with a half-read policy);
no configured file gives ``None``.
"""

from __future__ import annotations

import os

from procedures.windows.spec import VARIABLE, WindowsFile, load_windows_file, windows_file_path


def configured_windows_path(in_task: bool = False) -> str | None:
    """The windows file's path: the Airflow Variable when readable, else the environment."""
    value = None
    try:
        if in_task:
            from airflow.sdk import Variable

            value = Variable.get(VARIABLE, default=None)
        else:
            from airflow.configuration import conf

            if conf.get("database", "sql_alchemy_conn", fallback=None):
                from airflow.models.variable import Variable as DbVariable

                value = DbVariable.get(VARIABLE, default_var=None)
    except Exception:  # no Variable store reachable (a bare interpreter, a DB not migrated): the env decides
        value = None
    return windows_file_path(value, dict(os.environ))


def configured_windows(in_task: bool = False) -> WindowsFile | None:
    """The parsed windows file, or ``None`` when none is configured."""
    path = configured_windows_path(in_task)
    return None if path is None else load_windows_file(path)
