"""Which steps of a run failed, as a run's last steps see it (the outcome contract's failed steps).

:func:`upstream_failures` lists the task ids of this run that failed (through the Task SDK's task
states; not those that could not run because of them); why each failed is what the step recorded
(`failures.jsonl`, read by :mod:`procedures.outcome.contract`).

Failure: :func:`upstream_failures` returns ``[]`` when the task-state API is not there (the report
must still be written).
"""

from __future__ import annotations

from typing import Any, Mapping


def upstream_failures(context: Mapping[str, Any]) -> list[str]:
    """Task ids of this run that failed (not those that could not run because of them)."""
    ti = context["ti"]
    try:
        states = ti.get_task_states(dag_id=context["dag"].dag_id, run_ids=[context["run_id"]])
    except Exception:  # noqa: BLE001 - the report must not fail on a missing API
        return []
    per_task = states.get(context["run_id"], {})
    return sorted(t for t, s in per_task.items() if s == "failed" and t != ti.task_id)
