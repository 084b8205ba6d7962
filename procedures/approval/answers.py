"""Answers to an approval that the runbook cannot act on, judged without Airflow: a late answer, the
triggerer's own Approve on an assigned request (issue 36).

:func:`judge_answer` decides from :class:`AnswerFacts` (the answer, the approve task's state, the
request's assignees and expiry, who triggered the run) whether to refuse it and with what words:
409 for a late answer (the approve step has ended: "… came late: the request expired at …, so this
run ignores it and nothing was written"), 403 for the four-eyes refusal naming the approvers.
:func:`record_refusal` / :func:`refused_answers` keep each refusal in the run folder
(``answers_refused.jsonl``) for the final report; :func:`noted` puts its line on the run's note
under the outcome line. The Airflow side — the API server middleware that gathers the facts and
answers the call — is :mod:`operators.approval.answer_gate`.

Failure: none of its own; an unreadable time in a request counts as "not expired".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Mapping

from procedures.run_folder import RunFolder

REFUSED_FILE = "answers_refused.jsonl"
FINISHED = ("success", "failed", "skipped", "upstream_failed", "removed")


@dataclass(frozen=True)
class RefusedAnswer:
    """An answer the gate refuses: the HTTP status and text, and the line recorded on the run."""

    status: int
    detail: str
    note: str
    kind: str                  # "late" or "four_eyes"


@dataclass(frozen=True)
class AnswerFacts:
    """What the gate knows about one answer (gathered by :func:`operators.approval.answer_gate.gather_facts`)."""

    user: str
    options: tuple[str, ...]
    task_state: str
    responded: bool                        # the request already holds an answer
    assignees: tuple[str, ...]             # who Airflow lets answer (empty: anyone with access)
    triggered_by: str | None
    request: Mapping[str, Any]             # the step's request file (plan or change), {} when none


def judge_answer(facts: AnswerFacts, now: datetime) -> RefusedAnswer | None:
    """Refuse a late answer or the triggerer's Approve on an assigned request; else ``None``."""
    options = ", ".join(facts.options) or "an answer"
    at = now.astimezone(timezone.utc).isoformat(timespec="seconds")
    if facts.task_state in FINISHED and not facts.responded:
        expires = str(facts.request.get("expires_at") or "")
        ended = (f"the request expired at {expires}" if expires and _time(expires) and _time(expires) <= now
                 else f"the approve step had already ended ({facts.task_state})")
        return RefusedAnswer(409, f"{facts.user}'s answer ({options}) at {at} came late: {ended}, so this run "
                                  "ignores it and nothing was written. Trigger the runbook again for a fresh request.",
                             f"late answer by {facts.user} ({options}) at {at}, after {ended}: ignored, nothing "
                             "written", "late")
    triggerer = (facts.triggered_by or "").strip().lower()
    assigned = {a.strip().lower() for a in facts.assignees}
    if ("Approve" in facts.options and triggerer and facts.user.strip().lower() == triggerer
            and assigned and triggerer not in assigned):
        others = ", ".join(facts.assignees)
        return RefusedAnswer(403, f"{facts.user} triggered this run and cannot approve it (four eyes): the approval "
                                  f"is assigned to {others}; ask one of them. The request is still open and nothing "
                                  "was written.",
                             f"{facts.user} tried to approve their own run at {at}: refused (four eyes); the request "
                             f"waits for {others}", "four_eyes")
    return None


def record_refusal(folder: RunFolder | None, refused: RefusedAnswer, facts: AnswerFacts, now: datetime) -> None:
    """Append the refusal to the run folder's ``answers_refused.jsonl`` (when the folder exists)."""
    if folder is None or not folder.root.is_dir():
        return
    line = {"at": now.astimezone(timezone.utc).isoformat(timespec="seconds"), "by": facts.user,
            "options": list(facts.options), "kind": refused.kind, "why": refused.note}
    with (folder.root / REFUSED_FILE).open("a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def refused_answers(folder: RunFolder) -> list[dict[str, Any]]:
    """What ``answers_refused.jsonl`` records, oldest first (for the served reports)."""
    path = folder.root / REFUSED_FILE
    if not path.is_file():
        return []
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def noted(current: str | None, line: str) -> str:
    """The run's note with ``line`` added under its first line (the outcome), once; at most 1000 characters."""
    text = current or ""
    if line in text:
        return text
    head, _, rest = text.partition("\n")
    return (f"{head}\n{line}" + (f"\n{rest}" if rest else "") if text else line)[:1000]


def request_of(folder: RunFolder | None) -> dict[str, Any]:
    """The newest approval request file of the run (the plan's or a change document's), or ``{}``."""
    if folder is None or not folder.root.is_dir():
        return {}
    files = [folder.root / "approval_request.json", *sorted(folder.root.glob("approval_*_request.json"))]
    docs = [d for d in (folder.read_json(p) for p in files if p.is_file()) if isinstance(d, dict)]
    if not docs:
        return {}
    doc = max(docs, key=lambda d: str(d.get("requested_at") or ""))
    if not doc.get("expires_at") and doc.get("requested_at") and doc.get("expiry_s") is not None:
        start = _time(str(doc["requested_at"]))
        if start is not None:
            doc = {**doc, "expires_at": (start + timedelta(seconds=float(doc["expiry_s"]))).isoformat()}
    return doc


def _time(text: str) -> datetime | None:
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)
