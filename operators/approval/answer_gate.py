"""The answers to an approval that Airflow would take silently or refuse without a word, said in words.

Two answers reach Airflow's human-in-the-loop call (``PATCH …/taskInstances/{task}/{map}/hitlDetails``,
the Required-actions page's and a bot's) that the runbook cannot act on:

* **a late answer**: the approve step has already ended (its request expired, so the run failed and
  wrote nothing); Airflow 3.3 still records the answer and says "Response received";
* **the four-eyes refusal**: the person who triggered the run answers Approve on a request assigned
  to the cluster's approvers; Airflow refuses with a bare 403 its UI shows as "Access Denied".

:class:`AnswerGate`, an ASGI middleware the project's plugin puts in front of Airflow's API server,
judges such a call before Airflow does (:func:`procedures.approval.answers.judge_answer`, pure) and refuses it with the reason:
409 for a late answer ("… came after the request expired at …: ignored, nothing was written"), 403
for the four-eyes refusal ("alice triggered this run and cannot approve it … ask bob or carol").
Each refusal is recorded on the run: a line of the DAG run's note and ``answers_refused.jsonl`` in
the run folder, which the served final report shows (:mod:`operators.reports.app`). Every other
call passes untouched, and so does any call without a valid login (Airflow answers it 401): the
gate only ever refuses, after Airflow's own token check, what Airflow would refuse or ignore.

Failure: the gate never fails a call it cannot judge (no run, no run folder, a database error):
the call goes to Airflow as it came, and the error is logged.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import datetime, timezone
from typing import Awaitable, Callable, Mapping, Sequence

from procedures.approval.answers import AnswerFacts, RefusedAnswer, judge_answer, noted, record_refusal, request_of
from procedures.run_folder import RunFolder, default_run_root

log = logging.getLogger(__name__)
PATH = re.compile(r"^/api/v2/dags/(?P<dag_id>[^/]+)/dagRuns/(?P<run_id>.+)/taskInstances/(?P<task_id>[^/]+)"
                  r"/(?P<map_index>-?\d+)/hitlDetails/?$")

# -- Airflow's side: the facts, the note, the middleware ------------------------------------------------


def gather_facts(dag_id: str, run_id: str, task_id: str, map_index: int, user: str,
                 options: Sequence[str]) -> tuple[AnswerFacts, RunFolder | None] | None:
    """The facts of one answer from Airflow's database and the run folder (``None``: no such task)."""
    from airflow.models.dagrun import DagRun
    from airflow.models.hitl import HITLDetail
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        run = session.scalar(select(DagRun).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id))
        ti = session.scalar(select(TaskInstance).where(TaskInstance.dag_id == dag_id, TaskInstance.run_id == run_id,
                                                       TaskInstance.task_id == task_id,
                                                       TaskInstance.map_index == map_index))
        if run is None or ti is None:
            return None
        detail = session.get(HITLDetail, ti.id)
        state = str(getattr(ti.state, "value", ti.state))
        responded = bool(detail is not None and detail.responded_at is not None)
        assignees = tuple(str(a.get("name") or a.get("id")) for a in (detail.assignees or [])) if detail else ()
        conf, triggered_by = dict(run.conf or {}), run.triggering_user_name
    folder = RunFolder.for_run(str(conf.get("run_root") or default_run_root()), dag_id, run_id)
    return AnswerFacts(user, tuple(options), state, responded, assignees, triggered_by, request_of(folder)), folder


def note_on_run(dag_id: str, run_id: str, line: str) -> None:
    """Add ``line`` to the DAG run's note (under its outcome line)."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        run = session.scalar(select(DagRun).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id))
        if run is not None:
            run.note = noted(run.note, line)


Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]


class AnswerGate:
    """ASGI middleware in front of Airflow's API server (see module docstring)."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Receive, send: Send) -> None:
        match = PATH.match(scope.get("path") or "") if scope.get("type") == "http" else None
        if match is None or scope.get("method") != "PATCH":
            await self.app(scope, receive, send)
            return
        body = await _read_body(receive)
        refused = None
        try:
            refused = await self._judge(scope, match.groupdict(), body)
        except Exception:                         # noqa: BLE001 - never fail a call it cannot judge
            log.exception("answer gate: could not judge %s; passing it to Airflow", scope.get("path"))
        if refused is None:
            await self.app(scope, _replay(body, receive), send)
            return
        payload = json.dumps({"detail": refused.detail}).encode()
        await send({"type": "http.response.start", "status": refused.status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
        await send({"type": "http.response.body", "body": payload})

    async def _judge(self, scope: dict, path: Mapping[str, str], body: bytes) -> RefusedAnswer | None:
        from starlette.concurrency import run_in_threadpool

        user = await _user(scope)
        if user is None:
            return None                           # no valid login: Airflow answers it
        try:
            options = tuple(str(o) for o in (json.loads(body or b"{}").get("chosen_options") or ()))
        except (ValueError, AttributeError):
            return None
        found = await run_in_threadpool(gather_facts, path["dag_id"], path["run_id"], path["task_id"],
                                        int(path["map_index"]), user, options)
        if found is None:
            return None
        facts, folder = found
        now = datetime.now(timezone.utc)
        refused = judge_answer(facts, now)
        if refused is not None:
            log.warning("answer gate: %s", refused.note)
            try:                                  # the refusal stands even when it cannot be recorded
                await run_in_threadpool(record_refusal, folder, refused, facts, now)
                await run_in_threadpool(note_on_run, path["dag_id"], path["run_id"], refused.note)
            except Exception:                     # noqa: BLE001
                log.exception("answer gate: could not record the refusal on run %s", path["run_id"])
        return refused


async def _user(scope: dict) -> str | None:
    """The logged-in user's name (bearer token or the UI's cookie), or ``None`` without a valid one."""
    from starlette.requests import Request

    from airflow.api_fastapi.auth.managers.base_auth_manager import COOKIE_NAME_JWT_TOKEN
    from airflow.api_fastapi.core_api.security import resolve_user_from_token

    request = Request(scope)
    header = request.headers.get("authorization") or ""
    token = header[7:] if header.lower().startswith("bearer ") else request.cookies.get(COOKIE_NAME_JWT_TOKEN)
    if not token:
        return None
    try:
        user = await resolve_user_from_token(token)
    except Exception:                             # noqa: BLE001 - an invalid token: Airflow answers 401
        return None
    return str(user.get_name() or user.get_id())


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body already read, then the client's own messages (its disconnect)."""
    sent = []

    async def replayed() -> dict:
        if not sent:
            sent.append(True)
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
