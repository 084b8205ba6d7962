"""Airflow for the test run: a private AIRFLOW_HOME with a SQLite metadata DB, set up once.

:func:`configure_env` only sets environment variables (it must run before anything imports
``airflow``; ``tests/conftest.py`` calls it at import). :func:`ensure_db` creates the metadata DB
once per process (about a second). The home is a temporary directory removed at exit.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from cli.local_run import local_airflow_env

_HOME: Path | None = None


def configure_env() -> Path:
    global _HOME
    if _HOME is None:
        # One home per pytest-xdist worker (SQLite takes one writer): a worker inherits the
        # controller's variables, so a home counts as ours only if it was made for this worker.
        # Child processes a test starts inherit both variables and share the worker's DB.
        worker = os.environ.get("PYTEST_XDIST_WORKER", "")
        if os.environ.get("KR_TEST_AIRFLOW_HOME") and os.environ.get("KR_TEST_AIRFLOW_WORKER", "") == worker:
            _HOME = Path(os.environ["KR_TEST_AIRFLOW_HOME"])
        else:
            _HOME = Path(tempfile.mkdtemp(prefix=f"kr-airflow-{worker}-" if worker else "kr-airflow-"))
            os.environ["KR_TEST_AIRFLOW_HOME"] = str(_HOME)
            os.environ["KR_TEST_AIRFLOW_WORKER"] = worker
            atexit.register(shutil.rmtree, _HOME, ignore_errors=True)
        os.environ.update(local_airflow_env(_HOME))
    return _HOME


def ensure_db() -> Path:
    """The configured home, with its metadata DB created.

    Judged by a marker written after ``initdb``, not by the DB file: anything that touched the
    metadata DB earlier in the process (e.g. reading a Variable) leaves an empty SQLite file."""
    home = configure_env()
    marker = home / ".initdb-done"
    if not marker.exists():
        from airflow.utils import db

        db.initdb()
        marker.touch()
    return home
