"""The maintenance-window gate of the runbooks that are not reassignments: before a write, wait or refuse.

:func:`hold_for_window` is called by a step right before it writes a batch (the batch executor,
:mod:`operators.batches.step`) or a single change (the ``window`` step the batch-runbook factory puts
before a single-change runbook's first write, :class:`operators.batches.runbook.WindowGateOperator`).
It asks the windows file (:mod:`procedures.windows.guard`, the same decision the wave executor makes):

* no file, no window for this cluster and runbook, or ``outside_window=true`` (recorded once in
  ``windows.json``): go on;
* a window is open and the batch's predicted duration fits in the time it has left: go on (the
  decision is recorded in ``windows.json``; ``wave`` there is the batch's index);
* the prediction is longer than the longest window admitting the runbook: refuse
  (:class:`~operators.errors.OutsideWindow`: it would wait forever);
* no window open and nothing written yet by a *scheduled* run: refuse (its window closed);
* the batch fits the open window's length but not what is left, and it already waited for an
  opening: it starts within the resume allowance, else refuse (the guard's rule:
  :func:`procedures.windows.guard.decide_wave`);
* otherwise: the batch is not started; the run notifies ``window_paused`` and waits, deferred
  (no worker held), until the next opening, then the step's ``resume_in_window`` decides again.

The prediction is the caller's: the batch executor takes the slowest finished batch's seconds per
item times the batch's items, and before any batch finished the batch timeout (the longest a batch
may take before the step fails it); a single change has none (``None``: any open window will do).

Failure: :class:`~operators.errors.OutsideWindow` (not retried) naming the window, the prediction
and the fix; nothing was written by this call.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from airflow.providers.standard.triggers.temporal import DateTimeTrigger

from procedures.run_folder import RunFolder
from operators.base import RunbookOperator, as_bool
from operators.errors import OutsideWindow
from operators.notifications.runbook import notify_event
from procedures.windows.pause import WindowBook
from operators.windows.config import configured_windows
from procedures.windows.guard import decide_wave, window_gate

RESUME_METHOD = "resume_in_window"


def hold_for_window(step: RunbookOperator, context: Any, folder: RunFolder, index: int, what: str,
                    predicted_s: float | None, written_yet: bool, outside_window: Any, now: float) -> None:
    """Return when ``what`` (e.g. "batch 2/5") may be written now; else defer the step to
    :data:`RESUME_METHOD` at the next opening, or raise :class:`OutsideWindow` (module docstring)."""
    dag_id = context["dag"].dag_id
    windows = WindowBook.load(folder)
    if as_bool(outside_window):
        if not windows.outside_window_noted:
            step.log.warning("outside_window=true: this run ignores the maintenance windows (recorded)")
            windows.note_outside_window()
            windows.save(folder)
        return
    gate = window_gate(configured_windows(in_task=True), str(step.zk_conn_id), dag_id, False)
    if gate is None:
        return
    longest = gate.longest.total_seconds()
    if predicted_s is not None and predicted_s > longest:
        raise OutsideWindow(f"{what} is predicted to take up to {predicted_s:.0f}s, longer than the longest window "
                            f"admitting {dag_id} ({gate.longest}): it could never start. Lower the batch size or "
                            "batch_timeout_s, or lengthen the window; nothing was written")
    at = datetime.fromtimestamp(now, tz=timezone.utc)
    decision = decide_wave(gate, at, predicted_s, waited=windows.waited_before(index))
    windows.decided(index, now, decision, predicted_s, 1.0)
    if decision.stop:
        windows.refuse(index, now, decision.reason)
        windows.save(folder)
        raise OutsideWindow(f"{what} not started: {decision.reason}")
    if decision.start:
        windows.save(folder)
        step.log.info("window guard: %s starts: %s", what, decision.reason)
        return
    run_type = str(getattr(context["dag_run"].run_type, "value", context["dag_run"].run_type))
    if decision.resume is None or (run_type == "scheduled" and decision.window is None and not written_yet):
        windows.save(folder)
        when = decision.resume.opens.isoformat(timespec="seconds") if decision.resume else "none within a year"
        raise OutsideWindow(f"{what} not started: {decision.reason}; a {run_type} run does not wait for the next "
                            f"window (next opening: {when}); nothing more was written"
                            if decision.resume is not None else
                            f"{what} not started: {decision.reason}, and no window admitting {dag_id} opens within "
                            "a year: fix the windows file; nothing more was written")
    windows.paused(index, now, decision, False, what=what)
    windows.save(folder)
    opens = decision.resume.opens.isoformat(timespec="seconds")
    step.log.warning("window guard: %s not started: %s; waiting (deferred, no worker held) until %s opens at %s",
                     what, decision.reason, decision.resume.window.name, opens)
    notify_event(context, folder, "window_paused", step.log,
                 body=f"{what} was not started: {decision.reason}. The run resumes when window "
                      f"{decision.resume.window.name} opens at {opens}.",
                 fields={"resumes_at": opens, "reason": decision.reason})
    step.defer(trigger=DateTimeTrigger(moment=decision.resume.opens), method_name=RESUME_METHOD)


def note_resumed(folder: RunFolder, now: float) -> None:
    """Record in ``windows.json`` that the awaited window opened."""
    windows = WindowBook.load(folder)
    windows.resumed(now)
    windows.save(folder)
