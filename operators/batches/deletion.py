"""The delete_topics runbook's steps: select topics, delete them in waited-on batches, report.

* **SelectTopicsOperator** plans with :func:`planning.topic_deletion.select_topics`
  (names and/or a whole-name regex; every refusal reason at once: missing, internal unless
  ``allow_internal``, being reassigned; batches by count and, with sizes, by log bytes), writes the
  selection to ``plan/selection.json`` and the batches as plan artifacts (operation
  ``delete-topics``: the hash the approver approves), and fails the run on any refusal, before
  anything is written to ZooKeeper.
* **DeleteTopicBatchesOperator** marks one batch (``/admin/delete_topics/<t>``, through the
  audited writer and :func:`kafka_zk.admin.deletion.mark_for_deletion`), waits until every topic
  of the batch is gone from ``/brokers/topics``, ``/config/topics`` and ``/admin/delete_topics``
  (in the task for up to ``inline_wait_s``, then deferred to :class:`TopicsDeletedTrigger`; see
  :mod:`operators.deferral` for why), pauses, then does the next batch — the shared batch machine
  of :class:`operators.batches.step.BatchStepOperator` (maintenance window before each batch,
  approval at the write). Progress is the :class:`~procedures.batches.book.BatchBook` in
  ``deletion_progress.json``; a retried task recomputes from ZooKeeper: topics already gone are not
  marked again, markers already present are waited on, batches done stay done.
* **DeletionReportOperator** renders the preview (before approval) or final report.

Failure: refusals raise :class:`InvalidInput` listing every topic and reason; a batch whose topics
stay after the timeout (or whose markers vanish while the topic stays) raises
:class:`TopicsNotDeleted` with "marked for deletion but not deleted: the brokers probably run with
delete.topic.enable=false" (or the dead-broker cause when that is what blocks it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Sequence

from airflow.sdk.exceptions import AirflowFailException
from kazoo.client import KazooClient

from kafka_zk.admin.deletion import deletion_status, mark_for_deletion
from kafka_zk.audit import AuditLog
from kafka_zk.errors import InvalidInput, KafkaZkError
from planning.plan_folder.write import write_plan_artifacts
from planning.topic_deletion import DeletionSelection, deletion_plan, refusal_error, select_topics
from procedures.run_folder import RunFolder
from formats.sizes_file import load_sizes
from kafka_zk.snapshot import read_snapshot
from formats.snapshot_file import load_snapshot
from kafka_zk.writer import ZkWriter
from operators.base import RunbookOperator, as_bool
from procedures.batches.book import Batch, BatchBook
from operators.batches.step import BatchStepOperator, NextStep
from operators.deferral import not_before
from procedures.inline_wait import Seen
from procedures.reports.failures import upstream_failures
from operators.reports.final import PreviewFinalReportOperator
from procedures.outcome.contract import approval_outcome
from operators.triggers.deletion import TopicsDeletedTrigger
from procedures.waves.book import human_bytes
from planning.plan_folder.read import load_plan_artifacts

PROGRESS_FILE = "deletion_progress.json"
SELECTION_FILE = "selection.json"
NOT_DELETED_HINT = ("marked for deletion but not deleted: the brokers probably run with delete.topic.enable=false "
                    "(set it to true and restart them, then clear this task)")


class TopicsNotDeleted(KafkaZkError, AirflowFailException):
    """Topics marked for deletion that the cluster did not delete."""


class SelectTopicsOperator(RunbookOperator):
    """Resolve the selection into ``plan/selection.json`` + plan artifacts; fail (nothing written) on refusal."""

    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "topics", "topic_regex", "allow_internal",
                                      "batch_size", "max_batch_bytes")
    ui_color = "#fff2cc"

    def __init__(self, *, topics: Any = (), topic_regex: Any = None, allow_internal: Any = False,
                 batch_size: Any = 10, max_batch_bytes: Any = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.topics, self.topic_regex, self.allow_internal = topics, topic_regex, allow_internal
        self.batch_size, self.max_batch_bytes = batch_size, max_batch_bytes

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        snap = load_snapshot(str(folder.snapshot))
        # the snapshot step's per-partition sizes.jsonl (run folders made before it: the raw copy)
        given = next((f for f in (folder.partition_sizes, folder.sizes) if f.is_file()), None)
        sizes = load_sizes(str(given)) if given is not None else None
        selection = select_topics(snap, self.topics or (), self.topic_regex, as_bool(self.allow_internal),
                                  self.batch_size, self.max_batch_bytes, sizes)
        folder.write_json(folder.plan_dir / SELECTION_FILE, selection.to_json())
        if selection.matched:
            self.log.info("topic_regex %r matched %d topic(s): %s", selection.regex, len(selection.matched),
                          ", ".join(selection.matched))
        if selection.refused:
            raise refusal_error(selection)
        digest = write_selection_plan(str(folder.plan_dir), selection)
        self.log.info("%d topic(s) to delete in %d batch(es); plan %s", len(selection.selected),
                      len(selection.batches), digest)
        return {"plan_hash": digest, "topics": len(selection.selected), "batches": len(selection.batches),
                "matched": list(selection.matched)}


def write_selection_plan(plan_dir: str, selection: DeletionSelection) -> str:
    """The batches as plan artifacts (operation ``delete-topics``); returns the plan hash."""
    summary = {"operation": "delete-topics", "moves": 0, "topics": len(selection.selected),
               "batches": len(selection.batches), "regex": selection.regex, "matched": list(selection.matched)}
    return write_plan_artifacts(plan_dir, deletion_plan(selection), [], summary, None)


def load_selection(folder: RunFolder) -> DeletionSelection:
    """The approved selection: ``selection.json`` whose batches are the hash-checked plan's."""
    doc = folder.read_json(folder.plan_dir / SELECTION_FILE)
    if doc is None:
        raise InvalidInput(f"{folder.plan_dir}/{SELECTION_FILE} is missing: run the select step first")
    selection = DeletionSelection.from_json(doc)
    if not selection.refused and load_plan_artifacts(str(folder.plan_dir)).deletion != selection.batches:
        raise InvalidInput(f"{folder.plan_dir}/{SELECTION_FILE} does not match the plan's batches: it was edited; "
                           "re-run select and approve again")
    return selection


@dataclass(frozen=True)
class DeletionBatch(Batch):
    """One batch in ``deletion_progress.json``: its topics, and those this run marked."""

    ITEMS_KEY: ClassVar[str] = "topics"
    marked: tuple[str, ...] = ()


class DeleteTopicBatchesOperator(BatchStepOperator):
    """Mark one batch, wait (deferred) until it is deleted, pause, next batch (see module docstring)."""

    template_fields: Sequence[str] = (*BatchStepOperator.template_fields, "allow_internal")
    ui_color = "#f4cccc"
    progress_file = PROGRESS_FILE
    batch_kind = DeletionBatch

    def __init__(self, *, allow_internal: Any = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.allow_internal = allow_internal

    def approved_batches(self, folder: RunFolder) -> list[list[str]]:
        selection = load_selection(folder)
        if selection.refused:
            raise refusal_error(selection)
        return [list(b) for b in selection.batches]

    def next_step(self, context: Any, client: KazooClient, batch: Batch, total: int) -> NextStep:
        status = deletion_status(client, batch.items)
        gone = [t for t in batch.items if status[t].state == "deleted"]
        if len(gone) == len(batch.items) and not self.is_dry_run:
            self.log.info("batch %d already deleted in ZooKeeper: nothing to do", batch.index)
            return NextStep("done")
        to_mark = [t for t in batch.items if status[t].state != "deleted" and not status[t].marker]
        line = (f"batch {batch.index + 1}/{total}: {len(to_mark)} topic(s) marked now, "
                f"{len(batch.items) - len(to_mark) - len(gone)} already marked, {len(gone)} already gone"
                + (" (dry run: planned only)" if self.is_dry_run else ""))
        if not to_mark and not self.is_dry_run:
            self.log.info("%s", line)
            return NextStep("wait")
        marked = set(getattr(batch, "marked", ()))

        def write(writer: ZkWriter) -> dict[str, Any]:
            if to_mark:
                snap = read_snapshot(client, topics=to_mark, with_configs=False)
                result = mark_for_deletion(writer, snap, [t for t in to_mark if t in snap.topics],
                                           force=as_bool(self.allow_internal))
                marked.update(t for t, r in result.items() if r == "marked")
            self.log.info("%s", line)
            return {"marked": tuple(sorted(marked))}

        return NextStep("write", write=write)

    def seen(self, client: KazooClient, batch: Batch) -> Seen:
        return _deletion_seen(client, batch.items)

    def trigger(self, batch: Batch, deadline: float) -> TopicsDeletedTrigger:
        return TopicsDeletedTrigger(self.zk_conn_id, list(batch.items), deadline, float(self.poll_interval_s),
                                    batch.index, not_before=not_before(self.min_defer_s))

    def failure(self, context: Any, batch: Batch, event: Mapping[str, Any]) -> KafkaZkError:
        status = event.get("status")
        stuck = sorted(set(event.get("pending", [])) | set(event.get("not_deleted", [])))
        if status == "error":
            return KafkaZkError(f"batch {event.get('batch')}: {event.get('message')}; clear the task to resume")
        cause = NOT_DELETED_HINT
        try:
            with self.session(context) as (client, _):
                snap = read_snapshot(client, topics=stuck, with_configs=False)
            dead = sorted({r for t in snap.topics.values() for p in t.partitions.values() for r in p.replicas
                           if r not in snap.brokers})
            if dead:
                cause = (f"marked for deletion but not deleted: replicas on broker(s) {','.join(map(str, dead))} "
                         "that are not live; deletion resumes when they register again (docs/zookeeper.md §2.9)")
        except KafkaZkError as exc:
            self.log.warning("could not read the stuck topics to find the cause: %s", exc)
        return TopicsNotDeleted(f"topic(s) {', '.join(stuck)} {cause} ({event.get('message')})")

    def log_done(self, book: BatchBook, batch: Batch) -> None:
        self.log.info("batch %d done: %d topic(s) deleted in %.1fs", batch.index, len(batch.items),
                      batch.seconds or 0.0)

    def result(self, book: BatchBook) -> dict:
        return {"batches": len(book.batches), "topics": sum(len(b.items) for b in book.batches),
                "dry_run": self.is_dry_run, "selected": [t for b in book.batches for t in b.items]}


def _deletion_seen(client: Any, topics: Sequence[str]) -> Seen:
    """One inline poll of a batch; a marker gone with its topic kept is the trigger's to judge."""
    states = [s.state for s in deletion_status(client, topics).values()]
    if all(s == "deleted" for s in states):
        return "done"
    return "hand_over" if "not_deleted" in states else "waiting"


def deletion_values(folder: RunFolder, context: Mapping[str, Any], dry_run: bool) -> dict:
    """What the preview and final reports show (missing files read as "not reached")."""
    doc = folder.read_json(folder.plan_dir / SELECTION_FILE)
    selection = DeletionSelection.from_json(doc) if doc else None
    progress = (folder.read_json(folder.root / PROGRESS_FILE) or {}).get("batches", [])
    approval = folder.read_json(folder.approval)
    records = [r for r in (AuditLog.read(folder.audit) if folder.audit.is_file() else [])
               if r.path.startswith("/admin/delete_topics/")]
    failures = upstream_failures(context)
    if selection is None:
        outcome = "FAILED before selection"
    elif selection.refused:
        outcome = "REFUSED (nothing written)"
    elif approval_outcome(approval) is not None:
        outcome = approval_outcome(approval)[1]
    elif dry_run:
        outcome = "dry run (nothing written)"
    elif failures:
        outcome = "FAILED"
    elif progress and all(b["state"] == "done" for b in progress):
        outcome = "succeeded"
    else:
        outcome = "pending"
    return {
        "dag_id": context["dag"].dag_id, "run_id": context["run_id"], "dry_run": dry_run, "sel": selection,
        "selected": list(selection.selected) if selection else [],
        "bytes": {t: human_bytes(b) for t, b in (selection.data_bytes if selection else {}).items()},
        "batch_rows": [{"index": i + 1, "topics": list(b), "partitions": sum(selection.partitions.get(t, 0) for t in b),
                        "bytes": human_bytes(sum(selection.data_bytes.get(t, 0) for t in b))}
                       for i, b in enumerate(selection.batches)] if selection else [],
        "progress": progress, "approval": approval, "failures": failures, "outcome": outcome,
        "marker_writes": [{"topic": r.path.rsplit("/", 1)[1], "time": r.time, "dry_run": r.dry_run} for r in records],
        "audit_path": str(folder.audit), "run_folder": str(folder.root),
        "summary": (f"{sum(1 for b in progress if b['state'] == 'done')}/{len(progress)} batch(es) done, "
                    f"{len(selection.selected)} topic(s) selected") if selection else "",
        "cause": (f"{len(selection.refused)} topic(s) refused, nothing written: "
                  + "; ".join(f"{t}: {why}" for t, why in list(selection.refused.items())[:5]))
        if selection is not None and selection.refused else
        next((f"batch {b['index'] + 1}: {b['message']}" for b in progress if b.get("message")
              and b["state"] != "done"), "")}


class DeletionReportOperator(PreviewFinalReportOperator):
    """Render ``templates/delete_topics/<kind>.{md,html}.j2``; the final report fails a failed run."""

    template_dir = "delete_topics"

    def report_values(self, context: Any, folder: RunFolder) -> dict:
        return deletion_values(folder, context, self.is_dry_run)
