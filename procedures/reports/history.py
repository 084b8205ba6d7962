"""What a run went through besides its steps: retries, window pauses, the ``outside_window`` override.

The final report and the "finished"/"failed" notification list them (README: "recorded there"):

* :func:`record_retry` runs before every task of a runbook (the ``pre_execute`` hook of
  :func:`operators.runbook_dag.runbook_dag`): a task on its second or later try appends
  ``{"task", "try", "at"}`` to the run folder's ``retries.json`` (once per try; a resume after a
  deferral is the same try).
* :func:`history_lines` turns ``retries.json`` and ``windows.json`` (:mod:`operators.windows.pause`)
  into sentences: each pause (before which wave, why, until when, the throttles kept or removed),
  the waves that ran past their window's end, ``outside_window=true``, and the retried tasks.

Failure: :func:`record_retry` never fails a task over its bookkeeping (an unwritable run folder is
logged); a run without these files has nothing to list.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

from kafka_zk.audit import utc_now_iso
from procedures.run_folder import RunFolder

RETRIES = "retries.json"
log = logging.getLogger(__name__)


def record_retry(context: Mapping[str, Any]) -> None:
    """Append this task's try to ``retries.json`` when it is a retry (see module docstring)."""
    ti, params = context.get("ti"), context.get("params") or {}
    tries = int(getattr(ti, "try_number", 1) or 1)
    root = params.get("run_root") if hasattr(params, "get") else None
    if tries < 2 or not root or context.get("dag") is None:
        return
    try:
        folder = RunFolder.for_run(str(root), context["dag"].dag_id, context["run_id"]).ensure()
        doc = folder.read_json(folder.root / RETRIES) or {"retries": []}
        entry = {"task": ti.task_id, "try": tries}
        if not any(r["task"] == entry["task"] and r["try"] == tries for r in doc["retries"]):
            doc["retries"].append({**entry, "at": utc_now_iso()})
            folder.write_json(folder.root / RETRIES, doc)
    except OSError as exc:
        log.warning("could not record the retry of %s in the run folder: %s", getattr(ti, "task_id", "?"), exc)


def history_lines(folder: RunFolder) -> list[str]:
    """The run's window pauses, overruns, ``outside_window`` and retries, one sentence each."""
    lines = []
    windows = folder.read_json(folder.root / "windows.json") or {}
    if windows.get("outside_window"):
        lines.append("outside_window=true: this run ignored the maintenance windows (a manual emergency override)")
    for p in windows.get("pauses") or []:
        resumed = f"resumed at {p['resumed_at']}" if p.get("resumed_at") else (
            f"was to resume at {p['resumes_at']}" if p.get("resumes_at") else "did not resume")
        lines.append(f"window pause before wave {p['before_wave']} at {p['at']}: {p['reason']}; {resumed} "
                     f"(window {p.get('resume_window') or '-'}; throttles {p.get('throttles', 'kept')})")
    for o in windows.get("overran") or []:
        lines.append(f"wave {o['wave']} was in flight when window {o['window']} closed at {o['closed']} and ran to "
                     f"its end at {o['finished']} (a ZooKeeper-mode reassignment cannot be paused)")
    for r in windows.get("refused") or []:
        lines.append(f"wave {r['wave']} was not started at {r['at']}: {r['reason']}")
    retries = (folder.read_json(folder.root / RETRIES) or {}).get("retries") or []
    by_task: dict[str, list[int]] = {}
    for r in retries:
        by_task.setdefault(r["task"], []).append(int(r["try"]))
    for task, tries in sorted(by_task.items()):
        lines.append(f"retried: {task} ran {max(tries)} times (tries {', '.join(map(str, sorted(tries)))} "
                     "were retries; the task log holds each try's error)")
    return lines
