"""BatchStepOperator: the executor every batch runbook shares — one batch written, waited on, paused, next.

A runbook's batch step (:class:`operators.batches.deletion.DeleteTopicBatchesOperator`,
:class:`operators.batches.election.ElectBatchesOperator`; ``rolling_restart`` builds its own) subclasses it
and says only what differs:

* ``progress_file`` and ``batch_kind`` (a :class:`~procedures.batches.book.Batch` subclass): where and
  how its :class:`~procedures.batches.book.BatchBook` is kept;
* :meth:`approved_batches` — the items of every batch, from the hash-checked plan (raise to refuse);
* :meth:`next_step` — for the next open batch, read the cluster and say :class:`NextStep` ``done``
  (nothing to do), ``wait`` (written by an earlier attempt: wait for it) or ``write`` (with the
  function that writes it through the run's audited writer, returning the batch's new details);
* :meth:`seen` (one inline poll), :meth:`trigger` (the deferred wait), :meth:`done_changes` /
  :meth:`event_changes` (the details recorded when the batch is done, read inline or from the
  trigger's event), :meth:`failure` (the error for a failed event) and :meth:`result` (the XCom).

What the executor does for every runbook, in this order, for each batch not done:
``next_step`` → before a write, the maintenance-window gate (:func:`operators.batches.window.hold_for_window`:
a batch whose predicted time would overrun the open window is not started, the run waits deferred
for the next one and notifies ``window_paused``; skipped in a dry run) → the write through
:meth:`RunbookOperator.session`'s writer (approval enforced at the write; a dry run plans and audits
it, state ``planned``) → wait up to ``inline_wait_s`` in the task, then defer to the trigger
(:mod:`operators.deferral`) → done (details recorded) → pause ``pause_between_batches_s`` → next.
Every state change goes through :meth:`BatchBook.advance` with this step's clock (:attr:`clock`,
replaceable in a test). A retried or cleared task resumes from ZooKeeper and the progress file.

Failure: no approval on record raises :class:`~operators.errors.ApprovalMissing` before anything is
written; a failed batch is recorded ``failed`` with the runbook's error, then raised; the window gate
raises :class:`~operators.errors.OutsideWindow`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Callable, ClassVar, Literal, Mapping, Sequence

from kazoo.client import KazooClient

from procedures.run_folder import RunFolder
from kafka_zk.writer import ZkWriter
from operators.base import RunbookOperator
from procedures.batches.book import Batch, BatchBook, BatchState
from operators.batches.window import hold_for_window, note_resumed
from operators.deferral import INLINE_WAIT_S, MIN_DEFER_S, pause
from operators.reports.links import PlanReportLink, ProgressLink, RunReportsLink
from procedures.inline_wait import Seen, wait_inline
from operators.runtime import require_approval


@dataclass(frozen=True)
class NextStep:
    """What a runbook found for its next batch: ``done`` (with details), ``wait`` (already written),
    or ``write`` (``write(writer)`` writes it and returns the batch's details)."""

    kind: Literal["done", "wait", "write"]
    changes: Mapping[str, Any] = field(default_factory=dict)
    write: Callable[[ZkWriter], Mapping[str, Any]] | None = None


class BatchStepOperator(RunbookOperator):
    """Base of a batch runbook's writing step (see module docstring)."""

    operator_extra_links = (ProgressLink(), PlanReportLink(), RunReportsLink())

    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "batch_timeout_s", "pause_between_batches_s",
                                      "poll_interval_s", "outside_window")
    progress_file: ClassVar[str] = "batch_progress.json"
    batch_kind: ClassVar[type[Batch]] = Batch

    def __init__(self, *, batch_timeout_s: Any = 600, pause_between_batches_s: Any = 0, poll_interval_s: Any = 1.0,
                 outside_window: Any = False, inline_wait_s: float = INLINE_WAIT_S, min_defer_s: float = MIN_DEFER_S,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.batch_timeout_s = batch_timeout_s
        self.pause_between_batches_s = pause_between_batches_s
        self.poll_interval_s = poll_interval_s
        self.outside_window = outside_window
        self.inline_wait_s = inline_wait_s
        self.min_defer_s = min_defer_s

    #: the clock every batch state change is stamped with (epoch seconds); a test may replace it
    clock = staticmethod(time.time)

    #: what each runbook's step must define (checked when its class is defined, not at run time):
    #: ``approved_batches(folder) -> list[list[str]]``, ``next_step(context, client, batch, total) ->
    #: NextStep``, ``seen(client, batch) -> Seen``, ``trigger(batch, deadline)`` (the deferral's
    #: trigger) and ``failure(context, batch, event) -> Exception``
    RUNBOOK_HOOKS: ClassVar[tuple[str, ...]] = ("approved_batches", "next_step", "seen", "trigger", "failure")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        missing = [h for h in BatchStepOperator.RUNBOOK_HOOKS if not callable(getattr(cls, h, None))]
        if missing:
            raise TypeError(f"{cls.__name__} is a BatchStepOperator without {', '.join(missing)}: "
                            "define them (see BatchStepOperator.RUNBOOK_HOOKS)")

    # -- what a runbook says ------------------------------------------------------------------

    def done_changes(self, client: KazooClient, batch: Batch) -> Mapping[str, Any]:
        """The details recorded when an inline poll saw ``batch`` done (none by default)."""
        return {}

    def event_changes(self, event: Mapping[str, Any]) -> Mapping[str, Any]:
        """The details recorded from the trigger's ``done`` event (none by default)."""
        return {}

    def result(self, book: BatchBook) -> dict:
        return {"batches": len(book.batches), "dry_run": self.is_dry_run}

    def log_done(self, book: BatchBook, batch: Batch) -> None:
        self.log.info("batch %d/%d done: %d item(s) in %.1fs", batch.index + 1, len(book.batches), len(batch.items),
                      batch.seconds or 0.0)

    # -- the shared machine ---------------------------------------------------------------------

    def load_book(self, folder: RunFolder) -> BatchBook:
        return BatchBook.load(folder.root / self.progress_file, self.batch_kind, self.approved_batches(folder))

    def predicted_seconds(self, book: BatchBook, batch: Batch) -> float:
        """The slowest finished batch's seconds per item times this batch's items; before any, the timeout."""
        rate = book.seconds_per_item()
        return float(self.batch_timeout_s) if rate is None else rate * max(1, len(batch.items))

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        self.approved_batches(folder)       # refuses a bad plan before the approval is even read
        if not self.is_dry_run:
            require_approval(folder)
        return self._advance(context, folder)

    def execute_complete(self, context: Any, event: dict[str, Any]) -> dict:
        folder = self.folder(context)
        book = self.load_book(folder)
        b = book.batch(int(event["batch"]))
        if event.get("status") != "done":
            error = self.failure(context, b, event)
            book.advance(b.index, BatchState.FAILED, self.clock(), message=str(error)).save(
                folder.root / self.progress_file)
            raise error
        self._batch_done(folder, book, b.index, self.event_changes(event), float(event.get("at") or self.clock()))
        return self._advance(context, folder)

    def resume(self, context: Any, event: Any = None) -> dict:
        """After the pause between batches."""
        return self._advance(context, self.folder(context))

    def resume_in_window(self, context: Any, event: Any = None) -> dict:
        """The awaited maintenance window has opened: decide again, then go on."""
        folder = self.folder(context)
        note_resumed(folder, self.clock())
        return self._advance(context, folder)

    def _batch_done(self, folder: RunFolder, book: BatchBook, index: int, changes: Mapping[str, Any],
                    at: float) -> BatchBook:
        """Record batch ``index`` done, then pause before the next one (:func:`operators.deferral.pause`)."""
        book = book.advance(index, BatchState.DONE, at, **changes)
        book.save(folder.root / self.progress_file)
        self.log_done(book, book.batch(index))
        if book.next_open() is not None:
            pause(self, float(self.pause_between_batches_s or 0), "resume", self.min_defer_s)
        return book

    def _advance(self, context: Any, folder: RunFolder) -> dict:
        book = self.load_book(folder)
        path = folder.root / self.progress_file
        total = len(book.batches)
        with self.session(context) as (client, writer):
            for index in range(total):
                b = book.batch(index)
                if b.state is BatchState.DONE:
                    continue
                step = self.next_step(context, client, b, total)
                if step.kind == "done":
                    book = book.advance(index, BatchState.DONE, self.clock(), **step.changes)
                    book.save(path)
                    continue
                if step.kind == "write":
                    if not self.is_dry_run:
                        written = any(x.submitted_at is not None for x in book.batches)
                        hold_for_window(self, context, folder, index, f"batch {index + 1}/{total}",
                                        self.predicted_seconds(book, b), written, self.outside_window, self.clock())
                    assert step.write is not None, "a 'write' step carries its write"
                    changes = {**step.changes, **step.write(writer)}
                    if self.is_dry_run:
                        book = book.advance(index, BatchState.PLANNED, self.clock(), **changes)
                        continue
                else:
                    changes = dict(step.changes)
                book = book.advance(index, BatchState.SUBMITTED, self.clock(), **changes)
                book.save(path)
                book = self._wait(client, folder, book, index)
        book.save(path)
        return self.result(book)

    def _wait(self, client: KazooClient, folder: RunFolder, book: BatchBook, index: int) -> BatchBook:
        """Wait for batch ``index`` in the task (up to ``inline_wait_s``), else defer to the trigger."""
        b = book.batch(index)
        deadline = (b.submitted_at if b.submitted_at is not None else self.clock()) + float(self.batch_timeout_s)
        if wait_inline(lambda: self.seen(client, b), self.inline_wait_s, float(self.poll_interval_s), deadline):
            return self._batch_done(folder, book, index, self.done_changes(client, b), self.clock())
        self.defer(trigger=self.trigger(b, deadline), method_name="execute_complete",
                   timeout=timedelta(seconds=max(1.0, deadline - self.clock()) + 60))
        raise AssertionError("defer() returns only by raising")   # pragma: no cover
