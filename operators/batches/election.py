"""The preferred_leader_election runbook's steps: plan the batches, elect them one by one, report.

* **ElectionPlanOperator** plans with :mod:`planning.election` (scope from nothing,
  topics and/or a regex, or the election tool's JSON file; candidates in batches under the byte
  and count caps; every other partition with its reason; leader balance before and predicted
  after) and writes that as plan artifacts (operation ``election``, the approved hash) plus
  ``plan/election_plan.json`` (reasons, balance).
* **ElectBatchesOperator** submits one batch (create-only ``/admin/preferred_replica_election``
  through the audited writer), waits until the controller has consumed it (in the task for up to
  ``inline_wait_s``, then deferred to :class:`ElectionDoneTrigger`; see :mod:`operators.deferral`)
  and the leaders are read back, pauses, then the next batch — the shared batch machine of
  :class:`operators.batches.step.BatchStepOperator` (maintenance window before each batch: one
  predicted to overrun the open window is not started; approval at the write). Progress is the
  :class:`~procedures.batches.book.BatchBook` in ``election_progress.json``; a retry re-reads ZooKeeper: a node holding exactly our batch is
  waited on, not rewritten; partitions already led by their preferred replica are not sent again.
* **ElectionReportOperator** renders the preview or the final report (balance before/after).

Failure: bad inputs raise :class:`InvalidInput` before any write; a foreign election node raises
:class:`ElectionInProgress`; a node not consumed by ``batch_timeout_s`` raises
:class:`ElectionNotProcessed`. Partitions the controller could not elect are reported, not fatal.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from airflow.sdk.exceptions import AirflowFailException
from kazoo.client import KazooClient

from kafka_zk import paths
from kafka_zk.admin.election import preferred_election_candidates, submit_preferred_election
from kafka_zk.codecs import tp_key, tp_of
from kafka_zk.errors import ElectionInProgress, InvalidInput, KafkaZkError
from kafka_zk.health import leader_balance
from kafka_zk.limits import ADMIN_BATCH_BYTES
from planning.plan_folder.write import write_plan_artifacts
from planning.election import ElectionPlan, election_plan, election_scope, plan_election
from procedures.run_folder import RunFolder
from kafka_zk.snapshot import read_snapshot
from formats.snapshot_file import load_snapshot
from kafka_zk.writer import ZkWriter
from operators.base import RunbookOperator
from procedures.batches.book import Batch, BatchBook
from operators.batches.step import BatchStepOperator, NextStep
from operators.deferral import not_before
from procedures.inline_wait import Seen
from procedures.reports.failures import upstream_failures
from operators.reports.final import PreviewFinalReportOperator
from procedures.outcome.contract import approval_outcome
from operators.triggers.election import ElectionDoneTrigger, election_outcome
from planning.plan_folder.read import load_plan_artifacts

PLAN_FILE, PROGRESS_FILE = "election_plan.json", "election_progress.json"


class ElectionNotProcessed(KafkaZkError, AirflowFailException):
    """The election node was not consumed in time: no controller is processing it."""


class ElectionPlanOperator(RunbookOperator):
    """Plan the election from the run's snapshot; write the plan artifacts (the approved hash)."""

    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "topics", "topic_regex", "path_to_json_file",
                                      "max_batch_bytes", "max_batch_partitions")
    ui_color = "#fff2cc"

    def __init__(self, *, topics: Any = (), topic_regex: Any = None, path_to_json_file: Any = None,
                 max_batch_bytes: Any = ADMIN_BATCH_BYTES, max_batch_partitions: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.topics, self.topic_regex, self.path_to_json_file = topics, topic_regex, path_to_json_file
        self.max_batch_bytes, self.max_batch_partitions = max_batch_bytes, max_batch_partitions

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        snap = load_snapshot(str(folder.snapshot))
        text = None
        if self.path_to_json_file:
            try:
                text = Path(self.path_to_json_file).read_text(encoding="utf-8")
            except OSError as exc:
                raise InvalidInput(f"path_to_json_file {self.path_to_json_file}: cannot read it ({exc.strerror}); "
                                   "give the file kafka-preferred-replica-election.sh --path-to-json-file takes"
                                   ) from None
        scope = election_scope(snap, self.topics or (), self.topic_regex, text)
        plan = plan_election(snap, scope, int(self.max_batch_bytes),
                             int(self.max_batch_partitions) if self.max_batch_partitions else None)
        folder.write_json(folder.plan_dir / PLAN_FILE, plan.to_json())
        digest = write_plan_artifacts(str(folder.plan_dir), election_plan(plan),
                                      [], {"operation": "election", "moves": 0, "candidates": plan.candidates,
                                           "batches": len(plan.batches)}, None)
        self.log.info("%d partition(s) to elect in %d batch(es) (largest %d bytes); %d cannot be elected; %d already "
                      "led by their preferred replica; plan %s", plan.candidates, len(plan.batches),
                      max(plan.batch_bytes, default=0), len(plan.not_eligible), plan.already_preferred, digest)
        for tp, why in list(plan.not_eligible.items())[:20]:
            self.log.warning("cannot elect %s: %s", tp, why)
        return {"plan_hash": digest, "candidates": plan.candidates, "batches": len(plan.batches),
                "not_eligible": len(plan.not_eligible)}


def load_plan(folder: RunFolder) -> ElectionPlan:
    """The approved batches (hash-checked plan artifacts) with the plan file's details."""
    doc = folder.read_json(folder.plan_dir / PLAN_FILE)
    if doc is None:
        raise InvalidInput(f"{folder.plan_dir}/{PLAN_FILE} is missing: run the plan step first")
    batches = load_plan_artifacts(str(folder.plan_dir)).election
    return ElectionPlan(batches, doc["not_eligible"], doc["already_preferred"], doc["scope"], doc["max_batch_bytes"],
                        tuple(doc["before"]), tuple(doc["predicted"]), tuple(doc["batch_bytes"]))


@dataclass(frozen=True)
class ElectionBatch(Batch):
    """One batch in ``election_progress.json``: its partitions, what was submitted and the outcome."""

    ITEMS_KEY: ClassVar[str] = "partitions"
    submitted: tuple[str, ...] = ()
    elected: tuple[str, ...] = ()
    not_elected: tuple[Mapping[str, Any], ...] = ()


class ElectBatchesOperator(BatchStepOperator):
    """Submit one batch, wait (deferred) for the controller, pause, next (see module docstring)."""

    ui_color = "#e2f0d9"
    progress_file = PROGRESS_FILE
    batch_kind = ElectionBatch

    def __init__(self, *, batch_timeout_s: Any = 120, poll_interval_s: Any = 0.5, **kwargs: Any) -> None:
        super().__init__(batch_timeout_s=batch_timeout_s, poll_interval_s=poll_interval_s, **kwargs)

    def approved_batches(self, folder: RunFolder) -> list[list[str]]:
        return [[tp_key(tp) for tp in b] for b in load_plan(folder).batches]

    def next_step(self, context: Any, client: KazooClient, batch: Batch, total: int) -> NextStep:
        tps = [tp_of(k) for k in batch.items]
        snap = read_snapshot(client, topics={tp.topic for tp in tps}, with_configs=False)
        if snap.preferred_election is not None and not self.is_dry_run:
            live = set(snap.preferred_election.partitions)
            if live and live <= set(tps):  # ours: recognised by content (an earlier attempt wrote it)
                self.log.info("batch %d is already in the election node: waiting for it", batch.index + 1)
                return NextStep("wait", {"submitted": tuple(sorted(tp_key(tp) for tp in live))})
            raise ElectionInProgress(
                f"/admin/preferred_replica_election holds {len(live)} partition(s) that are not batch "
                f"{batch.index + 1} of this run: another election is running; wait for it, then clear this task")
        eligible, skipped = preferred_election_candidates(snap, tps)
        for ne in skipped:
            self.log.info("batch %d: %s skipped now: %s", batch.index + 1, ne.tp, ne.reason)
        if not eligible:
            return NextStep("done", {
                "elected": tuple(tp_key(ne.tp) for ne in skipped if "already the leader" in ne.reason),
                "not_elected": tuple({"tp": tp_key(ne.tp), "reason": ne.reason} for ne in skipped
                                     if "already the leader" not in ne.reason)})

        def write(writer: ZkWriter) -> dict[str, Any]:
            submit_preferred_election(writer, snap, list(eligible))
            self.log.info("batch %d/%d: %d partition(s) submitted%s", batch.index + 1, total, len(eligible),
                          " (dry run: planned only)" if self.is_dry_run else "")
            return {"submitted": tuple(tp_key(tp) for tp in eligible)}

        return NextStep("write", write=write)

    def seen(self, client: KazooClient, batch: Batch) -> Seen:
        return "waiting" if client.retry(client.exists, paths.PREFERRED_REPLICA_ELECTION) else "done"

    def done_changes(self, client: KazooClient, batch: Batch) -> Mapping[str, Any]:
        elected, not_elected = election_outcome(client, list(getattr(batch, "submitted", ())))
        return {"elected": tuple(elected), "not_elected": tuple(not_elected)}

    def event_changes(self, event: Mapping[str, Any]) -> Mapping[str, Any]:
        return {"elected": tuple(event.get("elected", [])), "not_elected": tuple(event.get("not_elected", []))}

    def trigger(self, batch: Batch, deadline: float) -> ElectionDoneTrigger:
        return ElectionDoneTrigger(self.zk_conn_id, list(getattr(batch, "submitted", ())), deadline,
                                   float(self.poll_interval_s), batch.index, not_before=not_before(self.min_defer_s))

    def failure(self, context: Any, batch: Batch, event: Mapping[str, Any]) -> KafkaZkError:
        if event.get("status") == "timeout":
            return ElectionNotProcessed(f"election batch {batch.index + 1}: {event.get('message')}")
        return KafkaZkError(f"election batch {batch.index + 1}: {event.get('message')}; clear the task to resume")

    def log_done(self, book: BatchBook, batch: Batch) -> None:
        not_elected = list(getattr(batch, "not_elected", ()))
        self.log.info("batch %d/%d: %d elected, %d not (%.1fs)", batch.index + 1, len(book.batches),
                      len(getattr(batch, "elected", ())), len(not_elected), batch.seconds or 0.0)
        for ne in not_elected:
            self.log.warning("not led by its preferred replica after the election: %s", ne)

    def result(self, book: BatchBook) -> dict:
        return {"batches": len(book.batches), "elected": sum(len(getattr(b, "elected", ())) for b in book.batches),
                "not_elected": sum(len(getattr(b, "not_elected", ())) for b in book.batches),
                "dry_run": self.is_dry_run}


def _balance_rows(before: Sequence[Mapping], after: Sequence[Mapping]) -> list[dict]:
    by = {r["broker"]: {"broker": r["broker"], "live": r["live"], "preferred": r["preferred"],
                        "before_leaders": r["leaders"], "before_ratio": r["imbalance_ratio"], "after_leaders": 0,
                        "after_ratio": 0.0} for r in before}
    for r in after:
        row = by.setdefault(r["broker"], {"broker": r["broker"], "live": r["live"], "preferred": r["preferred"],
                                          "before_leaders": 0, "before_ratio": 0.0})
        row.update(after_leaders=r["leaders"], after_ratio=r["imbalance_ratio"])
    return [by[b] for b in sorted(by)]


class ElectionReportOperator(PreviewFinalReportOperator):
    """Render ``templates/preferred_leader_election/<kind>.{md,html}.j2``; the final one fails a failed run."""

    template_dir = "preferred_leader_election"

    def report_values(self, context: Any, folder: RunFolder) -> dict:
        doc = folder.read_json(folder.plan_dir / PLAN_FILE)
        progress = (folder.read_json(folder.root / PROGRESS_FILE) or {}).get("batches", [])
        approval = folder.read_json(folder.approval)
        failures = upstream_failures(context) if self.kind == "final" else []
        after = doc["predicted"] if doc else []
        if self.kind == "final" and doc is not None:
            with self.session(context) as (client, _):
                after = [b.to_json() for b in leader_balance(read_snapshot(client, with_configs=False))]
        not_elected = [ne for b in progress for ne in b["not_elected"]]
        refused = (approval_outcome(approval) or (None, None))[1]
        outcome = (refused if refused is not None else "FAILED" if failures or doc is None
                   else "dry run (nothing written)" if self.is_dry_run
                   else "succeeded" if progress and all(b["state"] == "done" for b in progress)
                   else "nothing to elect" if doc and not doc["batches"] else "pending")
        values = {"dag_id": context["dag"].dag_id, "run_id": context["run_id"], "dry_run": self.is_dry_run,
                  "plan": doc, "progress": progress, "approval": approval, "failures": failures, "outcome": outcome,
                  "rows": _balance_rows(doc["before"], after) if doc else [], "after_label":
                  "after" if self.kind == "final" else "predicted", "not_elected": not_elected,
                  "elected": sum(len(b["elected"]) for b in progress), "audit_path": str(folder.audit),
                  "summary": f"{sum(len(b['elected']) for b in progress)} partition(s) elected, "
                             f"{len(not_elected)} not elected",
                  "cause": next((f"batch {b['index'] + 1}: {b['message']}" for b in progress if b.get("message")
                                 and b["state"] != "done"), "")}
        return values
