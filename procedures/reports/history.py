"""What a run went through besides its steps: retries, window pauses, ZooKeeper outages ridden out, the
``outside_window`` override.

The final report and the "finished"/"failed" notification list them (README: "recorded there"):

* :func:`record_retry` runs before every task of a runbook (the ``pre_execute`` hook of
  :func:`operators.runbook_dag.runbook_dag`): a task on its second or later try appends
  ``{"task", "try", "at"}`` to the run folder's ``retries.json`` (once per try; a resume after a
  deferral is the same try).
* :func:`record_outage` is called by a wave's wait when a ZooKeeper outage it rode out ends
  (``outages.json``: during what, when, how long, the cause).
* :func:`history_lines` turns ``retries.json``, ``outages.json`` and ``windows.json``
  (:mod:`procedures.windows.pause`) into sentences: each pause (before which wave or batch, why, until
  when, a reassignment's throttles kept or removed), what ran past its window's end,
  ``outside_window=true``, the outages ridden out, and the retried tasks; these are the outcome
  contract's ``history``.

Failure: :func:`record_retry` never fails a task over its bookkeeping (an unwritable run folder is
logged); a run without these files has nothing to list.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

from kafka_zk.audit import utc_now_iso
from procedures.run_folder import RunFolder

RETRIES = "retries.json"
OUTAGES = "outages.json"
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


def record_outage(folder: RunFolder, during: str, seconds: float, cause: str) -> None:
    """Append a ZooKeeper outage the run rode out to ``outages.json`` (never raises: bookkeeping)."""
    try:
        doc = folder.read_json(folder.root / OUTAGES) or {"outages": []}
        doc["outages"].append({"during": during, "at": utc_now_iso(), "seconds": round(float(seconds), 1),
                               "cause": cause})
        folder.write_json(folder.root / OUTAGES, doc)
    except Exception as exc:  # noqa: BLE001 - a record must not end the wait it records
        log.warning("could not record the ZooKeeper outage in the run folder: %s", exc)


def history_lines(folder: RunFolder) -> list[str]:
    """The run's window pauses, overruns, ``outside_window`` and retries, one sentence each."""
    lines = []
    windows = folder.read_json(folder.root / "windows.json") or {}
    waves = folder.wave_progress.is_file()      # a reassignment's waves, else a batch runbook's batches (0-based)

    def unit(n: int) -> str:
        return f"wave {n}" if waves else f"batch {int(n) + 1}"
    if windows.get("outside_window"):
        lines.append("outside_window=true: this run ignored the maintenance windows (a manual emergency override)")
    for p in windows.get("pauses") or []:
        resumed = f"resumed at {p['resumed_at']}" if p.get("resumed_at") else (
            f"was to resume at {p['resumes_at']}" if p.get("resumes_at") else "did not resume")
        lines.append(f"window pause before {unit(p['before_wave'])} at {p['at']}: {p['reason']}; {resumed} "
                     f"(window {p.get('resume_window') or '-'}"
                     + (f"; throttles {p.get('throttles', 'kept')})" if waves else ")"))
    for o in windows.get("overran") or []:
        lines.append(f"{unit(o['wave'])} was in flight when window {o['window']} closed at {o['closed']} and ran to "
                     f"its end at {o['finished']}" + (" (a ZooKeeper-mode reassignment cannot be paused)" if waves else ""))
    for r in windows.get("refused") or []:
        lines.append(f"{unit(r['wave'])} was not started at {r['at']}: {r['reason']}")
    for o in (folder.read_json(folder.root / OUTAGES) or {}).get("outages") or []:
        lines.append(f"ZooKeeper outage ridden out during {o['during']} at {o['at']}: unreachable for "
                     f"{o['seconds']:.0f}s ({o['cause']}); the run went on")
    retries = (folder.read_json(folder.root / RETRIES) or {}).get("retries") or []
    by_task: dict[str, list[int]] = {}
    for r in retries:
        by_task.setdefault(r["task"], []).append(int(r["try"]))
    for task, tries in sorted(by_task.items()):
        lines.append(f"retried: {task} ran {max(tries)} times (tries {', '.join(map(str, sorted(tries)))} "
                     "were retries; the task log holds each try's error)")
    return lines
