"""A migrated Airflow metadata DB made once per test run and copied into every real-Airflow stack.

``airflow db migrate`` on an empty SQLite file cost each stack of :mod:`tests.real_airflow` 5 CPU s
and 15-30 s of wall on a loaded machine (nine stacks in the suite). The first stack of a run migrates
a template home under a lock every pytest-xdist worker shares; each stack then copies its DB and its
``airflow.cfg`` (the template home's path replaced by its own). The copy is the same file
``airflow db migrate`` would have made: same Airflow, same settings (the template is keyed by every
``AIRFLOW__*`` setting a stack passes, bar the ones that name the stack or reach no table).

:func:`configure_templates` (``tests/conftest.py`` calls it at import) names the run's folder in
``KR_TEST_DB_TEMPLATES``; xdist workers inherit it from the controller, which removes it at exit.

Failure: a failed ``airflow db migrate`` raises ``CalledProcessError`` and leaves no template, so the
next stack tries again.
"""

from __future__ import annotations

import atexit
import fcntl
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Mapping

VAR = "KR_TEST_DB_TEMPLATES"
#: Settings that name the stack itself (its home, port, secrets) or shape how it runs, which the
#: migration writes nowhere: the DB holds no users (the simple auth manager keeps them in its file),
#: no DAG, and its default pool's size is not the parallelism; the generated ``airflow.cfg`` holds
#: Airflow's defaults, not these variables (checked on 2026-12-02's stacks).
PER_STACK = ("AIRFLOW_HOME", "AIRFLOW__CORE__DAGS_FOLDER", "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN",
             "AIRFLOW__API__BASE_URL", "AIRFLOW__CORE__EXECUTION_API_SERVER_URL", "AIRFLOW__API__PORT",
             "AIRFLOW__API__SECRET_KEY", "AIRFLOW__API_AUTH__JWT_SECRET",
             "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE", "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS",
             "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS", "AIRFLOW__CORE__PARALLELISM",
             "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION")


def configure_templates() -> Path:
    """The run's template folder: made here (and removed at exit) unless a parent process made it."""
    if not os.environ.get(VAR):
        root = Path(tempfile.mkdtemp(prefix="kr-airflow-db-templates-"))
        os.environ[VAR] = str(root)
        atexit.register(shutil.rmtree, root, ignore_errors=True)
    root = Path(os.environ[VAR])
    root.mkdir(parents=True, exist_ok=True)
    return root


def _key(env: Mapping[str, str]) -> str:
    # AIRFLOW_CONN_* are read from the environment when used, never written to the DB
    settings = {k: v for k, v in env.items() if k.startswith("AIRFLOW__") and k not in PER_STACK}
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def _make(template: Path, env: Mapping[str, str], home: Path) -> None:
    """Migrate a template home (with ``home``'s ``config`` folder: the settings modules ``env`` may
    name) in a folder beside ``template``, then rename it into place."""
    building = Path(tempfile.mkdtemp(prefix=template.name + ".", dir=template.parent))
    try:
        if (home / "config").is_dir():
            shutil.copytree(home / "config", building / "config")
        env = {**env, "AIRFLOW_HOME": str(building),
               "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{building / 'airflow.db'}"}
        subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], env=env, cwd=home, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
        db = sqlite3.connect(building / "airflow.db")
        try:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")         # everything in the main file
        finally:
            db.close()
        (building / "home.txt").write_text(str(building))
        os.rename(building, template)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise


def migrated_home(home: Path, env: Mapping[str, str]) -> None:
    """Give ``home`` (empty of a DB and an ``airflow.cfg``) what ``airflow db migrate`` with ``env``
    would have left there: the DB at ``env``'s SQLite URL and the home's ``airflow.cfg``."""
    root = configure_templates()
    template = root / _key(env)
    with open(root / "lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not template.exists():
                _make(template, env, home)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    db = env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].removeprefix("sqlite:///")
    shutil.copyfile(template / "airflow.db", db)
    built_in = (template / "home.txt").read_text()
    cfg = (template / "airflow.cfg").read_text().replace(built_in, str(home))
    (home / "airflow.cfg").write_text(cfg)
