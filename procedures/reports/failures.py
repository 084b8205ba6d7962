"""How a run's last step tells that the run failed: the tasks that failed, and a report that says so.

:func:`upstream_failures` lists the task ids of this run that failed (through the Task SDK's task
states; not those that could not run because of them). :func:`write_final_report` writes the
``final_report.md`` of a runbook that is not a reassignment with a line naming them, then fails the
report step (and so the run) pointing at it.

Failure: :func:`upstream_failures` returns ``[]`` when the task-state API is not there (the report
must still be written); :func:`write_final_report` raises the error class it is given.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from procedures.run_folder import RunFolder


def upstream_failures(context: Mapping[str, Any]) -> list[str]:
    """Task ids of this run that failed (not those that could not run because of them)."""
    ti = context["ti"]
    try:
        states = ti.get_task_states(dag_id=context["dag"].dag_id, run_ids=[context["run_id"]])
    except Exception:  # noqa: BLE001 - the report must not fail on a missing API
        return []
    per_task = states.get(context["run_id"], {})
    return sorted(t for t, s in per_task.items() if s == "failed" and t != ti.task_id)


def write_final_report(folder: RunFolder, lines: list[str], failures: list[str],
                       failed: Callable[[str], Exception]) -> None:
    """``final_report.md`` of a runbook that is not a reassignment: ``lines``, plus the line naming
    the tasks that failed (:func:`upstream_failures`) when there are any; then, when there are,
    raise ``failed`` naming them and the report, so that the run fails at its report step."""
    if failures:
        lines = [*lines, f"- FAILED at {', '.join(failures)} (the task log holds the error)"]
    folder.write_text(folder.final_report_md, "\n".join(lines) + "\n")
    if failures:
        raise failed(f"the run failed at {', '.join(failures)}: see {folder.final_report_md}")
