"""Who may let a plan run: the pre-approval policy, the four-eyes rule and the approval's expiry.

Pure decisions, no Airflow: :class:`PlanApprovalOperator <operators.approval.step.PlanApprovalOperator>`
gathers the facts (:class:`ApprovalFacts`) and acts on the answers.

- :func:`policy_decision` — a run skips the human only when *all* hold: it is a **scheduled**
  run (a person who can trigger a DAG cannot pre-approve it), the windows file declares a
  ``pre_approval`` policy for the run's cluster that names the runbook, a window admitting the
  runbook is open now, the plan is within the policy's caps (replicas moved, bytes moved;
  unknown sizes exceed any byte cap), and — when the policy requires a rehearsal — a rehearsal of
  the same runbook passed for the same plan hash (:mod:`operators.rehearsal`). The decision names the policy file and
  its hash, or every reason the human is still needed.
- :func:`check_responder` — four eyes: the person who answers is not the person who triggered
  the run.
- :func:`check_not_expired` — an answer after the approval's expiry is refused.

Failure: :class:`FourEyesViolation`, :class:`ApprovalExpired` (both
:class:`~kafka_zk.errors.InvalidInput`: nothing has been written when they are raised).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from kafka_zk.errors import InvalidInput
from procedures.windows.calendar import open_window
from procedures.windows.spec import WindowsFile

REMOVED_PARAM = "pre_approved"


class FourEyesViolation(InvalidInput):
    """The approver is the person who triggered the run."""


class ApprovalExpired(InvalidInput):
    """The answer came after the approval request expired."""


class BypassRefused(InvalidInput):
    """A trigger tried to skip the approval by a means that does not exist (e.g. the old Param)."""


@dataclass(frozen=True)
class ApprovalFacts:
    """What the policy looks at, gathered by the approval step."""

    runbook: str
    conn_id: str
    run_type: str                 # Airflow's DagRunType value: "scheduled", "manual", ...
    now: datetime
    plan_hash: str
    replicas_moved: int
    bytes_moved: int | None       # None: sizes unknown
    rehearsal_hashes: frozenset[str]


@dataclass(frozen=True)
class PolicyDecision:
    """Skip the human or not, and why (recorded in approval.json)."""

    skip_human: bool
    reasons: tuple[str, ...]
    policy: str | None = None     # "<file> sha256:<hash>" when a policy decided

    @property
    def text(self) -> str:
        return "; ".join(self.reasons)


def policy_decision(windows: WindowsFile | None, facts: ApprovalFacts) -> PolicyDecision:
    """Whether the windows file's policy pre-approves this run (see module docstring)."""
    if windows is None:
        return PolicyDecision(False, ("no windows file is configured",))
    cluster = windows.cluster(facts.conn_id)
    policy = cluster.pre_approval if cluster else None
    if cluster is None or policy is None:
        return PolicyDecision(False, (f"{windows.path} declares no pre_approval policy for {facts.conn_id}",))
    why: list[str] = []
    if facts.run_type != "scheduled":
        why.append(f"a {facts.run_type} run is never pre-approved (only scheduled runs inside a window are)")
    if facts.runbook not in policy.runbooks and "*" not in policy.runbooks:
        why.append(f"the policy does not name {facts.runbook}")
    window = open_window(cluster, facts.runbook, facts.now)
    if window is None:
        why.append(f"no window admitting {facts.runbook} is open at {facts.now.isoformat(timespec='seconds')}")
    if facts.replicas_moved > policy.max_replicas_moved:
        why.append(f"{facts.replicas_moved} replica moves exceed the cap of {policy.max_replicas_moved}")
    if facts.bytes_moved is None:
        why.append("partition sizes are unknown, so the byte cap cannot be checked")
    elif facts.bytes_moved > policy.max_bytes_moved:
        why.append(f"{facts.bytes_moved} bytes moved exceed the cap of {policy.max_bytes_moved}")
    if policy.require_rehearsal and facts.plan_hash not in facts.rehearsal_hashes:
        why.append(f"no rehearsal of {facts.runbook} passed for plan {facts.plan_hash[:12]}… (the policy requires a "
                   "rehearsal of this exact plan that passed: the runbook's rehearse step)")
    stamp = f"{windows.path} sha256:{windows.sha256}"
    if why:
        return PolicyDecision(False, tuple(why), stamp)
    return PolicyDecision(True, (f"pre-approved by the policy for {facts.conn_id} in window "
                                 f"{window.window.name} (closes {window.closes.isoformat(timespec='minutes')})",), stamp)


def check_responder(triggered_by: str | None, responder: str | None) -> None:
    """Four eyes: refuse an answer from the person who triggered the run."""
    if responder and triggered_by and responder.strip().lower() == triggered_by.strip().lower():
        raise FourEyesViolation(f"{triggered_by} triggered this run and cannot approve it (four-eyes rule); nothing "
                                "was written: trigger it again and have another person approve")


def duration_text(span: timedelta) -> str:
    """``7 days``, ``12 h``, ``1.5 h``, ``30 min``, ``10 s``: a duration as a person reads it (never
    ``12:00:00`` nor ``168 h``)."""
    s = span.total_seconds()
    if s >= 2 * 86400 and s % 86400 == 0:
        return f"{s / 86400:.0f} days"
    if s >= 3600:
        return f"{s / 3600:.0f} h" if s % 3600 == 0 else f"{s / 3600:.1f} h"
    return f"{s / 60:.0f} min" if s >= 60 and s % 60 == 0 else f"{s / 60:.1f} min" if s >= 60 else f"{s:.0f} s"


def check_not_expired(requested_at: datetime, responded_at: datetime, expiry: timedelta) -> None:
    """Refuse an answer that came after the request expired."""
    if responded_at - requested_at > expiry:
        raise ApprovalExpired(f"the approval was requested at {requested_at.isoformat(timespec='seconds')} and "
                              f"expired after {duration_text(expiry)}; the answer at {responded_at.isoformat(timespec='seconds')} "
                              "came too late and nothing was written: trigger the run again for a fresh plan")


def check_no_bypass_param(conf: dict | None) -> None:
    """Refuse a trigger that still sets the removed ``pre_approved`` Param."""
    if conf and REMOVED_PARAM in conf:
        raise BypassRefused(f"{REMOVED_PARAM} was removed: a run skips the human approval only when the "
                            "maintenance-windows policy allows it for a scheduled run (docs/maintenance-windows.md); "
                            f"trigger without {REMOVED_PARAM!r}")
