"""The DAG-run note that says how a run ended ("rejected by bob at …: nothing written").

A failed run is red in Airflow's UI whether it crashed or a person rejected its plan; the note on
the run tells them apart. The step that knows the outcome (the notify step, or the batch runbooks'
final report) pushes one line as the XCom ``run_note`` (:func:`push_run_note`); when the scheduler
marks the run finished, this module's listener (registered by :mod:`operators.plugin`) copies it
onto the run's note in the same database session. Tasks cannot write the note themselves: Airflow 3
gives them no database access and its Execution API has no call for it. A note a person already
wrote is kept; ours is added above it once.

:func:`approval_outcome` is the one wording of an approval's outcome, shared by the reports, the
notifications and the note: "rejected by <approver> at <time>", "approval expired at <time>",
"approval by <who> refused at <time>: <why>"; :func:`approval_words` is the approval line of a report
(an expiry nobody answered is never "rejected by policy").

Failure: the listener never raises (Airflow logs a listener's exception and goes on; a missing
note must not fail a run's state change); it logs what it could not do.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

from airflow.listeners import hookimpl

NOTE_KEY = "run_note"
log = logging.getLogger(__name__)


def approval_outcome(record: Mapping[str, Any] | None) -> str | None:
    """How the approval ended, in words (``None``: no decision recorded or the plan was approved)."""
    if not record or record.get("decision") in ("approved", "pre_approved", "dry_run"):
        return None
    by, at, note = record.get("by"), record.get("at"), str(record.get("note") or "")
    if record.get("expired") or "expired" in note:
        when = record.get("expires_at") or at
        return f"approval expired at {when}" + (f" (answered late by {by})" if by else "")
    if note.startswith("approval refused"):
        return f"approval by {by} refused at {at}: {note.removeprefix('approval refused: ')}"
    if note.startswith("approved hash"):
        return f"approval by {by} refused at {at}: the plan changed while the request waited"
    return f"rejected by {by or 'the approver'} at {at}"


def approval_words(record: Mapping[str, Any] | None) -> str:
    """The approval line of a report and of the summary a notification carries: the outcome when the
    plan was not approved (:func:`approval_outcome`), else who let it run and when."""
    if not record:
        return "not reached"
    outcome = approval_outcome(record)
    if outcome is not None:
        return outcome
    if record.get("decision") == "dry_run":
        return f"none asked (dry run) at {record.get('at')}"
    return f"{record.get('decision')} by {record.get('by') or 'policy'} at {record.get('at')}"


def outcome_note(values: Mapping[str, Any]) -> str:
    """The DAG-run note: the outcome, what was written, and what the run went through."""
    written = "nothing written" if not values["writes"] else f"{values['writes']} znode write(s)"
    summary = "" if values["refused"] or values["dry_run"] else values.get("summary_line") or ""
    lines = [f"{values['outcome']}: {summary} ({written})" if summary else f"{values['outcome']}: {written}"]
    if values.get("reasons"):
        lines.append("why: " + "; ".join(values["reasons"]))
    lines += values.get("history") or []
    return "\n".join(lines)[:1000]


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
