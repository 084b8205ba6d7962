"""cluster_health's ``propose`` step: the Airflow side of :mod:`procedures.proposals`.

The check step found the anomalies (``health.json``: ``anomalies``); this step reads the
cluster's proposal ledger (``<run_root>/cluster_health/proposals-<zk_conn_id>.json``), asks
Airflow how each proposed run stands, lets :func:`procedures.proposals.decide` answer, and
does what it says through Airflow's public REST API (:class:`AirflowApi`): trigger a run of the
runbook with its conf and a note (the run then plans, rehearses and waits in Required actions),
or end a run whose anomaly healed while it waited (its active step marked failed, so it ends
failed through its own report and notification, with the note saying why). The
API's user is the *proposer*: it is the run's triggering user, so the approval step's four-eyes
rule refuses it as an approver — the system proposes, a person approves. Nothing here answers an
approval.

The API is reached with the Airflow Connection ``airflow_api_conn_id`` (type ``http``: host,
port, schema ``http``/``https``, login and password of the proposer's account; the token comes
from ``/auth/token``). Without that connection nothing is proposed and the report says so.

Failure: a run the API refuses to trigger or cancel is recorded in the run's ``proposals`` (the
report lists it, the alert step fails the run); the ledger is written before each trigger, so a
retried step sends the same run id again (a 409 means the run is there).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from airflow.sdk import BaseHook, BaseOperator
from airflow.sdk.exceptions import AirflowNotFoundException

from kafka_zk.errors import InvalidInput, KafkaZkError
from procedures.proposals import (APPROVED, ENDED, KINDS, MISSING, WAITING, Anomaly, Ledger, Proposal,
                                       ProposalSettings, decide, mark_triggered)
from procedures.run_folder import RunFolder
from operators.base import as_bool
from operators.runtime import run_folder

HEALTH_FILE = "health.json"
TIMEOUT_S = 30
ATTEMPTS = 4
ACTIVE_TASK_STATES = ("scheduled", "queued", "running", "deferred", "awaiting_input", "up_for_retry",
                      "up_for_reschedule", "restarting")


class ProposalApiError(KafkaZkError):
    """Airflow's REST API refused or did not answer a proposal's call."""


def ledger_path(run_root: str | Path, zk_conn_id: str) -> Path:
    return Path(run_root) / "cluster_health" / f"proposals-{zk_conn_id}.json"


def load_ledger(path: Path) -> Ledger:
    return Ledger.from_json(path.read_text(encoding="utf-8"), str(path)) if path.is_file() else Ledger()


def save_ledger(path: Path, ledger: Ledger) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(ledger.to_json(), encoding="utf-8")
    tmp.replace(path)


def ui_base() -> str:
    from airflow.configuration import conf

    return (conf.get("api", "base_url", fallback="") or "").strip().rstrip("/")


def run_link(dag_id: str, run_id: str) -> str:
    """The run's page in Airflow's UI (absolute with ``[api] base_url``)."""
    return f"{ui_base()}/dags/{dag_id}/runs/{urllib.parse.quote(run_id, safe='')}"


@dataclass
class AirflowApi:
    """Airflow 3's public REST API (``/api/v2``) as the proposer's account: the calls proposals make."""

    base: str
    login: str
    password: str
    _token: str | None = None

    @classmethod
    def from_connection(cls, conn_id: str) -> "AirflowApi":
        conn = BaseHook.get_connection(conn_id)
        if not conn.host or not conn.login:
            raise InvalidInput(f"connection {conn_id!r} needs host and login (the proposer's Airflow account) "
                               "and its password: see docs/runbooks/cluster_health.md#proposals")
        host = conn.host if "://" in conn.host else f"{conn.schema or 'http'}://{conn.host}"
        return cls(host.rstrip("/") + (f":{conn.port}" if conn.port else ""), conn.login, conn.password or "")

    def _call(self, method: str, path: str, body: Any = None, auth: bool = True) -> tuple[int, Any]:
        """One call, tried up to :data:`ATTEMPTS` times while the server errs (5xx: e.g. its database
        locked for a moment) or does not answer; every call is idempotent (a trigger's run id is
        fixed: a repeat is a 409)."""
        headers = {"Content-Type": "application/json"}
        if auth:
            headers["Authorization"] = f"Bearer {self.token()}"
        data = None if body is None else json.dumps(body).encode()
        for attempt in range(1, ATTEMPTS + 1):
            req = urllib.request.Request(self.base + path, method=method, headers=headers, data=data)
            try:
                with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
                    return resp.status, json.loads(resp.read() or b"null")
            except urllib.error.HTTPError as exc:
                answer = exc.code, exc.read()[:500].decode(errors="replace")
                if exc.code < 500 or attempt == ATTEMPTS:
                    return answer
            except (urllib.error.URLError, OSError) as exc:
                if attempt == ATTEMPTS:
                    raise ProposalApiError(f"Airflow's API at {self.base} did not answer {method} {path} "
                                           f"({ATTEMPTS} tries): {exc}") from None
            time.sleep(2.0 ** attempt)
        raise AssertionError("unreachable")

    def token(self) -> str:
        if self._token is None:
            status, doc = self._call("POST", "/auth/token", {"username": self.login, "password": self.password},
                                     auth=False)
            if status not in (200, 201) or not isinstance(doc, dict) or "access_token" not in doc:
                raise ProposalApiError(f"Airflow's API at {self.base} refused a token to {self.login!r} "
                                       f"({status}: {str(doc)[:200]}): check the connection's login and password")
            self._token = doc["access_token"]
        return self._token

    def run_state(self, dag_id: str, run_id: str) -> str:
        """:data:`WAITING`, :data:`APPROVED`, :data:`ENDED` or :data:`MISSING` (see the pure module)."""
        q = urllib.parse.quote(run_id, safe="")
        status, run = self._call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{q}")
        if status == 404:
            return MISSING
        if status != 200:
            raise ProposalApiError(f"GET run {dag_id}/{run_id}: {status} {str(run)[:200]}")
        if run["state"] in ("success", "failed"):
            return ENDED
        status, tis = self._call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{q}/taskInstances?limit=100")
        if status != 200:
            raise ProposalApiError(f"GET task instances of {dag_id}/{run_id}: {status} {str(tis)[:200]}")
        approved = any(t["task_id"].startswith("approve") and t["state"] == "success"
                       for t in tis["task_instances"])
        return APPROVED if approved else WAITING

    def trigger(self, dag_id: str, run_id: str, conf: Mapping[str, Any], note: str) -> bool:
        """Trigger ``run_id``; False when it already exists (a retried trigger)."""
        status, doc = self._call("POST", f"/api/v2/dags/{dag_id}/dagRuns",
                                 {"dag_run_id": run_id, "logical_date": None, "conf": dict(conf), "note": note[:1000]})
        if status == 409:
            return False
        if status not in (200, 201):
            raise ProposalApiError(f"trigger {dag_id} {run_id}: {status} {str(doc)[:300]}")
        return True

    def cancel(self, dag_id: str, run_id: str, note: str) -> None:
        """End a run still waiting for its approval: ``note`` on it, then each of its active tasks (the
        approval asking, or a plan or rehearsal step still running) marked failed, so the run goes on
        as after any failed step — teardown, report, notify — and ends failed with nothing written. (A
        run marked failed as a whole would still run its throttle teardown and end *success*.) A run
        that has not started any task is marked failed as a whole."""
        q = urllib.parse.quote(run_id, safe="")
        status, doc = self._call("PATCH", f"/api/v2/dags/{dag_id}/dagRuns/{q}?update_mask=note", {"note": note[:1000]})
        if status != 200:
            raise ProposalApiError(f"note on {dag_id} {run_id}: {status} {str(doc)[:300]}")
        status, tis = self._call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{q}/taskInstances?limit=100")
        if status != 200:
            raise ProposalApiError(f"GET task instances of {dag_id}/{run_id}: {status} {str(tis)[:200]}")
        active = [t["task_id"] for t in tis["task_instances"] if t["state"] in ACTIVE_TASK_STATES]
        if not active and not any(t["state"] for t in tis["task_instances"]):
            status, doc = self._call("PATCH", f"/api/v2/dags/{dag_id}/dagRuns/{q}?update_mask=state",
                                     {"state": "failed"})
            if status != 200:
                raise ProposalApiError(f"cancel {dag_id} {run_id}: {status} {str(doc)[:300]}")
        for task_id in active:
            status, doc = self._call("PATCH", f"/api/v2/dags/{dag_id}/dagRuns/{q}/taskInstances/{task_id}",
                                     {"new_state": "failed"})
            if status != 200:
                raise ProposalApiError(f"cancel {dag_id} {run_id} at {task_id}: {status} {str(doc)[:300]}")


def settings_from(values: Mapping[str, Any]) -> ProposalSettings:
    """The step's Params as :class:`ProposalSettings` (validated there)."""
    return ProposalSettings(enabled={k: as_bool(values.get(f"propose_{k}", True)) for k in KINDS},
                            broker_down_grace_s=float(values.get("broker_down_grace_s", 1800)),
                            skew_persist_s=float(values.get("skew_persist_s", 3600)),
                            cooldown_s=float(values.get("proposal_cooldown_s", 86400)),
                            runbook_conf=dict(values.get("proposal_conf") or {}))


def _anomaly(doc: Mapping[str, Any]) -> Anomaly:
    return Anomaly(doc["kind"], doc["subject"], doc["evidence"], dict(doc.get("conf") or {}))


def _row(p: Proposal, **extra: Any) -> dict:
    return {"key": p.key, "kind": p.kind, "runbook": p.runbook, "run_id": p.run_id, "evidence": p.evidence,
            "first_seen": p.first_seen, "proposed_at": p.proposed_at,
            "link": run_link(p.runbook, p.run_id) if p.run_id else None, **extra}


class ProposeOperator(BaseOperator):
    """Turn the check step's anomalies into proposed runbook runs (see module docstring)."""

    template_fields: Sequence[str] = ("run_root", "zk_conn_id", "airflow_api_conn_id", "settings", "notify_conn_ids")
    ui_color = "#fff2cc"

    def __init__(self, *, run_root: str, zk_conn_id: str, airflow_api_conn_id: Any, settings: Any = None,
                 notify_conn_ids: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.run_root, self.zk_conn_id, self.airflow_api_conn_id = run_root, zk_conn_id, airflow_api_conn_id
        self.settings, self.notify_conn_ids = settings, notify_conn_ids

    def execute(self, context: Any) -> dict:
        folder = run_folder(context, self.run_root)
        doc = folder.read_json(folder.root / HEALTH_FILE)
        if doc is None:
            raise InvalidInput(f"{folder.root}/{HEALTH_FILE} is missing: the check step did not run")
        settings = settings_from(self.settings or {})
        anomalies = [_anomaly(a) for a in doc.get("anomalies") or []]
        result = self._propose(context, folder, anomalies, settings)
        doc["proposals"] = result
        folder.write_json(folder.root / HEALTH_FILE, doc)
        for p in result["proposed"]:
            self.log.info("proposed %s run %s for %s: %s", p["runbook"], p["run_id"], p["key"], p["link"])
        for p in result["cancelled"]:
            self.log.info("cancelled %s run %s: %s", p["runbook"], p["run_id"], p["note"])
        for e in result["errors"]:
            self.log.error("proposal not made: %s", e)
        return {k: len(v) if isinstance(v, list) else v for k, v in result.items()}

    def _propose(self, context: Any, folder: RunFolder, anomalies: list[Anomaly],
                 settings: ProposalSettings) -> dict:
        out: dict[str, Any] = {"proposed": [], "cancelled": [], "open": [], "waiting": [], "errors": [], "note": ""}
        conn_id = str(self.airflow_api_conn_id or "").strip()
        if conn_id in ("", "None"):
            out["note"] = "proposals are off: airflow_api_conn_id is empty"
            return out
        try:
            api = AirflowApi.from_connection(conn_id)
        except AirflowNotFoundException:    # not set up: reported, not a failed health run
            out["note"] = (f"no proposal made: the Airflow connection {conn_id!r} is not defined "
                           "(docs/runbooks/cluster_health.md#proposals)")
            self.log.warning("%s; anomalies found: %s", out["note"], [a.key for a in anomalies])
            return out
        path = ledger_path(self.run_root, str(self.zk_conn_id))
        ledger = load_ledger(path)
        states = {}
        try:
            for p in ledger.proposals.values():
                if p.run_id:
                    states[p.run_id] = api.run_state(p.runbook, p.run_id)
        except ProposalApiError as exc:     # without the runs' states nothing can be decided safely
            out["errors"].append(str(exc))
            return out
        proposer = f"cluster_health run {context['run_id']}"
        extra = {"run_root": str(self.run_root), "notify_conn_ids": list(self.notify_conn_ids or [])}
        decision = decide(ledger, anomalies, states, datetime.now(timezone.utc), settings, proposer, extra)
        ledger = decision.ledger
        save_ledger(path, ledger)           # the run ids first: a retried step sends the same ones
        for p in decision.propose:
            note = (f"proposed by {proposer} for {p.key}: {p.evidence[:600]}. "
                    "Waits for a person's approval (the proposer cannot approve)")
            try:
                created = api.trigger(p.runbook, p.run_id, p.conf, note)
            except (ProposalApiError, InvalidInput) as exc:
                out["errors"].append(f"{p.key}: {exc}")
                continue
            ledger = mark_triggered(ledger, p.key)
            save_ledger(path, ledger)
            out["proposed"].append(_row(p, new=created))
        for c in decision.cancel:
            try:
                api.cancel(c.proposal.runbook, c.proposal.run_id, c.note)
            except ProposalApiError as exc:
                out["errors"].append(f"cancel {c.proposal.key}: {exc}")
                continue
            out["cancelled"].append(_row(c.proposal, note=c.note))
        out["open"] = [_row(p, state=states.get(p.run_id, WAITING)) for p in decision.open]
        out["waiting"] = [_row(p, why=why) for p, why in decision.waiting]
        return out
