"""The DAG-run note that says how a run ended, put on the run.

A failed run is red in Airflow's UI whether it crashed or a person rejected its plan; the note on
the run tells them apart. The notify step of every runbook renders it from the run's outcome
contract (:mod:`procedures.outcome.render`) and pushes it as the XCom ``run_note`` (:func:`push_run_note`); when the scheduler
marks the run finished, this module's listener (registered by :mod:`operators.plugin`) copies it
onto the run's note in the same database session. Tasks cannot write the note themselves: Airflow 3
gives them no database access and its Execution API has no call for it. A note a person already
wrote is kept; ours is added above it once.

:func:`approval_words` is the approval line of a report (an expiry nobody answered is never
"rejected by policy"; the wording of an approval's outcome is the contract's).

Failure: the listener never raises (Airflow logs a listener's exception and goes on; a missing
note must not fail a run's state change); it logs what it could not do.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

from airflow.listeners import hookimpl

from procedures.outcome.contract import approval_outcome

NOTE_KEY = "run_note"
log = logging.getLogger(__name__)


def approval_words(record: Mapping[str, Any] | None) -> str:
    """The approval line of a report: how it ended when the plan was not approved
    (:func:`procedures.outcome.contract.approval_outcome`), else who let it run and when."""
    if not record:
        return "none recorded"
    said = approval_outcome(record)
    if said is not None:
        return said[1]
    if record.get("decision") == "dry_run":
        return f"none asked (dry run) at {record.get('at')}"
    return f"{record.get('decision')} by {record.get('by') or 'policy'} at {record.get('at')}"


def push_run_note(context: Mapping[str, Any], text: str) -> None:
    """Hand ``text`` to the listener as this run's note (an XCom of the calling task)."""
    context["ti"].xcom_push(key=NOTE_KEY, value=text)


def _pushed_note(dag_run: Any, session: Any) -> str | None:
    from airflow.models.xcom import XComModel
    from sqlalchemy import select

    rows = session.scalars(select(XComModel).where(XComModel.dag_id == dag_run.dag_id,
                                                   XComModel.run_id == dag_run.run_id,
                                                   XComModel.key == NOTE_KEY)).all()
    values = [XComModel.deserialize_value(r) for r in rows]
    return next((str(v) for v in values if v), None)


def note_run(dag_run: Any) -> None:
    """Copy the run's pushed note onto it (kept: a person's own note, below ours)."""
    from sqlalchemy.orm import object_session

    session = object_session(dag_run)
    if session is not None:     # the scheduler: its session commits the note with the run's new state
        _write(dag_run, _pushed_note(dag_run, session))
        return
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    with create_session() as own:     # dag.test() hands over a run detached from its session
        attached = own.get(DagRun, dag_run.id)
        if attached is not None:
            _write(attached, _pushed_note(attached, own))


def _write(dag_run: Any, text: str | None) -> None:
    if not text:
        return
    current = dag_run.note or ""
    if text not in current:
        dag_run.note = (f"{text}\n\n{current}" if current else text)[:1000]


@hookimpl
def on_dag_run_failed(dag_run: Any, msg: str) -> None:
    try:
        note_run(dag_run)
    except Exception:  # noqa: BLE001 - a note must never change how the run ends
        log.exception("could not write the note of run %s", getattr(dag_run, "run_id", "?"))


@hookimpl
def on_dag_run_success(dag_run: Any, msg: str) -> None:
    on_dag_run_failed(dag_run, msg)
