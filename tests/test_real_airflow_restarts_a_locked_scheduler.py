"""The tests' real Airflow restarts a scheduler that died of SQLite's lock, and nothing else.

With SQLite as the metadata DB, a scheduler whose read must become a write while another process
writes gets "database is locked" at once (SQLite's deadlock rule, whatever the busy timeout) and
exits: seen in CI with the runbook walk's 4 task slots. A deployment's supervisor would start it
again; :class:`tests.real_airflow.RealAirflow` does the same (at most 3 times). A component that
exits for any other reason still fails the test that meets it.
"""

from __future__ import annotations

import os
import signal

import pytest

from tests.real_airflow import RealAirflow


def _kill(proc) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def test_a_scheduler_dead_of_the_sqlite_lock_is_started_again_and_any_other_death_fails(tmp_path) -> None:
    with RealAirflow(tmp_path / "airflow", ("cluster_health",), {}) as airflow:
        airflow.wait_dag("cluster_health")
        _kill(airflow.procs["scheduler"])
        with open(tmp_path / "airflow" / "scheduler.log", "a") as log:   # how the lock error ends its log
            log.write("sqlite3.OperationalError: database is locked\n")
        airflow._check_alive()
        assert airflow.restarts == ["scheduler"] and airflow.procs["scheduler"].poll() is None
        _kill(airflow.procs["scheduler"])             # this process's log says nothing of the lock
        with pytest.raises(AssertionError, match=r"component\(s\) \['scheduler'\] exited"):
            airflow._check_alive()
        assert airflow.restarts == ["scheduler"]
