"""The outcome contract: how one runbook run ended, filled by every runbook as it ends, whatever machine ran it.

:class:`Outcome` holds the outcome (:data:`KINDS`: success, rejected, expired, refused, failed,
stopped), the cause in one sentence (the broker, partition, gate or missing approval), what was
written (0 or the audit count), what to do next, the run's reports, and what the run went through
(pauses, outages healed, retries). The note, every notification, the final report and the task
pages' links are rendered from it and only from it (:mod:`procedures.outcome.render`); a runbook
gets all of them by filling it. :func:`judge` is the one place that decides the outcome and the
cause from what a run left: the approval record, the failures its steps recorded
(:class:`StepFailure`, :func:`read_failures`) and what the machine says of its own stop.

Failure: an unknown kind, a non-success without a cause or a negative write count raise
:class:`ValueError` naming the field (a runbook that fills the contract wrongly fails its report
step, and the notify step still ends the run from the failures it finds).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

KINDS = ("success", "rejected", "expired", "refused", "failed", "stopped")
OUTCOME_FILE = "outcome.json"
FAILURES_FILE = "failures.jsonl"

#: error classes (by name, anywhere in the exception's class hierarchy) that refuse before anything is
#: done: a bad input, a conf key that is no Param, a missing or refused approval, a stale plan, the guards
REFUSALS = ("InputRefused", "InvalidInput", "ParamRefused", "ApprovalMissing", "ApprovalRefused",
            "PlanHashMismatch", "WriteNotApproved", "GuardsRefused", "OutsideWindow")
#: error classes of a run a safety gate stopped on purpose, resumable where it stopped (a roll's gate not
#: passed; a window closing on a run that already wrote is one too)
STOPS = ("RollStopped",)

NEXT = {
    "success": "Nothing to do: the change is done.",
    "rejected": "Nothing to do unless the change is still wanted: then trigger a new run for a new plan.",
    "expired": "Trigger a new run if the change is still wanted, and have it answered before it expires.",
    "refused": "Fix the cause above and trigger a new run (this one wrote nothing).",
    "failed": "Fix the cause above, then clear the failed step to resume, or trigger a new run.",
    "stopped": "Fix the cause above, then clear the stopped step to resume where it stopped.",
}


@dataclass(frozen=True)
class StepFailure:
    """A step that failed, as its failure callback recorded it (:func:`read_failures`)."""

    task: str
    error: str                          # the exception's class name
    message: str
    classes: tuple[str, ...] = ()       # its class hierarchy's names (refusal or stop?)
    at: str = ""

    def sentence(self) -> str:
        """The failure in one sentence: the step and the error's first line (a step Airflow failed
        without an error of the step's own says so, instead of "unknown")."""
        if not self.message and self.error in ("", "unknown"):
            return (f"{self.task}: failed by Airflow, not by an error of its own (killed, timed out, or a "
                    "human-in-the-loop answer lost to the scheduler's race); its task log says which")
        first = " ".join((self.message or self.error).split("\n", 1)[0].split())
        return f"{self.task}: {first[:400]}"


@dataclass(frozen=True)
class Outcome:
    """How one run ended (see the module docstring); ``reports`` maps a label to a run-folder file
    name ("final report" → "final_report.html", "live progress" → "progress")."""

    dag_id: str
    run_id: str
    what: str
    kind: str
    cause: str
    written: int
    next_step: str
    reports: Mapping[str, str] = field(default_factory=dict)
    summary: str = ""
    history: tuple[str, ...] = ()
    failed_steps: tuple[str, ...] = ()
    dry_run: bool = False
    planned: int = 0
    details_md: str = ""
    details_html: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"outcome kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if self.kind != "success" and not self.cause.strip():
            raise ValueError(f"a {self.kind} outcome needs its cause (one sentence naming the broker, partition, "
                             "gate or missing approval)")
        if self.written < 0:
            raise ValueError(f"written={self.written}: the number of ZooKeeper writes is 0 or more")

    @property
    def ok(self) -> bool:
        return self.kind == "success"

    @property
    def headline(self) -> str:
        """``SUCCEEDED`` / ``REJECTED`` / …, the dry run said."""
        word = {"success": "SUCCEEDED"}.get(self.kind, self.kind.upper())
        return f"{word} (dry run)" if self.dry_run else word

    @property
    def written_text(self) -> str:
        if self.dry_run:
            return f"nothing written (dry run: {self.planned} write(s) planned)"
        return "nothing written" if not self.written else f"{self.written} ZooKeeper write(s)"

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["reports"] = dict(self.reports)
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "Outcome":
        values = dict(doc)
        for key in ("history", "failed_steps"):
            values[key] = tuple(values.get(key) or ())
        return cls(**{k: v for k, v in values.items() if k in cls.__dataclass_fields__})

    def save(self, folder: Path) -> Path:
        path = Path(folder) / OUTCOME_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, folder: Path) -> "Outcome | None":
        path = Path(folder) / OUTCOME_FILE
        if not path.is_file():
            return None
        return cls.from_json(json.loads(path.read_text(encoding="utf-8")))


def read_failures(folder: Path) -> list[StepFailure]:
    """The failures the run's steps recorded, oldest first (the last try of each step kept)."""
    path = Path(folder) / FAILURES_FILE
    if not path.is_file():
        return []
    last: dict[str, StepFailure] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        f = StepFailure(str(doc.get("task")), str(doc.get("error")), str(doc.get("message") or ""),
                        tuple(doc.get("classes") or ()), str(doc.get("at") or ""))
        last.pop(f.task, None)
        last[f.task] = f
    return list(last.values())


def append_failure(folder: Path, failure: StepFailure) -> None:
    """Record one step's failure (the failure callback of every runbook task)."""
    with open(Path(folder) / FAILURES_FILE, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(asdict(failure), sort_keys=True) + "\n")


def approval_outcome(record: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """How an approval ended when it did not let the run go: (kind, the sentence), else ``None``."""
    if not record or record.get("decision") in ("approved", "pre_approved", "dry_run"):
        return None
    by, at, note = record.get("by"), record.get("at"), str(record.get("note") or "")
    if record.get("expired") or "expired" in note:
        when = record.get("expires_at") or at
        return "expired", f"approval expired at {when}" + (f" (answered late by {by})" if by else "")
    if note.startswith("approval refused"):
        return "refused", f"approval by {by} refused at {at}: {note.removeprefix('approval refused: ')}"
    if note.startswith("approved hash"):
        return "refused", f"approval by {by} refused at {at}: the plan changed while the request waited"
    return "rejected", f"rejected by {by or 'the approver'} at {at}"


def _kind_of(failure: StepFailure, written: int) -> str:
    names = set(failure.classes) | {failure.error}
    if names & set(STOPS) or (written and "OutsideWindow" in names):
        return "stopped"
    if written == 0 and names & set(REFUSALS):
        return "refused"
    return "failed"


def judge(*, approvals: Sequence[Mapping[str, Any] | None] = (), failures: Sequence[StepFailure] = (),
          failed_steps: Sequence[str] = (), written: int = 0, cause: str = "", stopped: bool = False,
          unfinished: str = "") -> tuple[str, str]:
    """The outcome's kind and cause: an approval that did not let the run go first, then the first
    recorded failure (``cause``, the machine's own sentence for it, wins when given: e.g. the roll's
    broker and gate), then a failed step without a record; ``unfinished`` is the machine's sentence
    for work left undone with no step failed (e.g. a partition still stuck)."""
    for record in approvals:
        said = approval_outcome(record)
        if said is not None:
            return said
    recorded = [f for f in failures if f.task in failed_steps]     # not a try since cleared and passed
    if recorded:
        first = recorded[0]
        kind = "stopped" if stopped else _kind_of(first, written)
        return kind, cause or first.sentence()
    if failed_steps:
        return ("stopped" if stopped else "failed"), cause or (
            f"{', '.join(failed_steps)} failed without recording why (killed or timed out?): its task log holds the error")
    if unfinished:
        return ("stopped" if stopped else "failed"), unfinished
    return "success", cause


def next_step(kind: str, said: str = "") -> str:
    """What to do next: the machine's own words when it has them, else the kind's."""
    return said or NEXT[kind]
