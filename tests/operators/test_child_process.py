"""Jobs run as child processes of a task (the plan job, the rehearsal): their output reaches the
task log line by line, a job past its deadline is killed and named, and a refusing rehearsal
fails the rehearse step with its own ``Error:`` line and no report read."""

from __future__ import annotations

import logging

import pytest

from kafka_zk.errors import InvalidInput
from procedures.child_process import ChildJob, ChildTimedOut
from operators.rehearsal.step import RehearseOperator


def test_the_childs_output_reaches_the_log_and_its_exit_code_is_returned(caplog) -> None:
    caplog.set_level(logging.INFO)
    job = ChildJob(["-c", "import sys; print('one'); print('Error: two', file=sys.stderr); sys.exit(4)"],
                   logging.getLogger("child-test"), "test job")
    assert job.run(60) == 4
    assert {"one", "Error: two"} <= {r.getMessage() for r in caplog.records}
    assert job.error_lines() == ["Error: two"] and not job.terminate()


def test_a_child_started_inside_an_airflow_task_can_import_airflow(monkeypatch) -> None:
    """Airflow 3's task supervisor sets the metadata-DB URL to a value SQLAlchemy cannot parse; the
    rehearsal child imports operator code, hence Airflow (a real-scheduler run failed at rehearse)."""
    for key in ("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "AIRFLOW__CORE__SQL_ALCHEMY_CONN"):
        monkeypatch.setenv(key, "airflow-db-not-allowed:///")
    job = ChildJob(["-c", "import cli.rehearsal_run, airflow.settings as s; print('db', s.SQL_ALCHEMY_CONN)"],
                   logging.getLogger("child-test"), "import check")
    assert job.run(300) == 0, list(job.tail)
    assert list(job.tail)[-1] == "db sqlite://"


def test_a_child_past_its_deadline_is_killed_and_named() -> None:
    job = ChildJob(["-c", "import time; print('started', flush=True); time.sleep(600)"],
                   logging.getLogger("child-test"), "sleeper")
    with pytest.raises(ChildTimedOut, match="sleeper was still running after 1s"):
        job.run(1)
    assert job.process.poll() is not None


def test_a_rehearsal_that_refuses_its_input_fails_the_step_with_its_error_line(tmp_path) -> None:
    step = RehearseOperator(task_id="rehearse", zk_conn_id="zk", run_root=str(tmp_path))
    out = tmp_path / "rehearsal"
    args = ["--snapshot", str(tmp_path / "snapshot.jsonl"), "--plan-dir", str(tmp_path / "plan"), "--out", str(out)]
    with pytest.raises(InvalidInput, match=r"the rehearsal could not run \(exit code 1\): Error: plan folder .*plan: "
                                           r"summary.json cannot be read"):
        step._run_rehearsal(args, out)
    assert not (out / "rehearsal.json").exists()
