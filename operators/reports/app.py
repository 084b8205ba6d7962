"""The run reports, served by Airflow's own API server behind Airflow's login.

An approver must see the plan, not a path on a worker's disk. This FastAPI app is mounted in
the API server by the project's plugin (:mod:`operators.plugin`) at ``/kafka-runbooks``:

- ``GET /kafka-runbooks/runs/{dag_id}/{run_id}/`` lists the run's reports and records;
- ``GET /kafka-runbooks/runs/{dag_id}/{run_id}/progress`` is the live progress page
  (:mod:`procedures.live_progress`), refreshing itself while the run is queued or running;
- ``GET /kafka-runbooks/runs/{dag_id}/{run_id}/{name}`` serves one of them (``plan_report.html``
  with its chart, ``final_report.html``, ``rehearsal_report.html``, the Markdown forms,
  ``approval.json``, ``audit.jsonl``…); ``X.html`` of a report written only as ``X.md`` is that
  Markdown as a page (:func:`procedures.outcome.render.markdown_page`), and a final report lists the answers
  refused after the run ended (:mod:`operators.approval.answer_gate`).

Every request needs an Airflow login (the JWT cookie of the UI, or a bearer token) and the auth
manager's permission to read that DAG's runs, checked by Airflow's own dependency. The run
folder is ``<run_root>/<dag_id>/<run_id>``: ``run_root`` is the run's own ``run_root`` param when
it was triggered with one, else the deployment default (``$KAFKA_RUNBOOKS_RUN_ROOT``). Only
files directly in the run folder or its ``plan/`` folder with a report suffix are served; HTML is
served with a Content-Security-Policy that forbids scripts and remote loads.

Failure: 401/403 from Airflow's auth; 404 naming what is missing (run folder or file).
"""

from __future__ import annotations

import html
from pathlib import Path

from fastapi import Depends, FastAPI, HTTPException
from fastapi.responses import FileResponse, HTMLResponse, Response

from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
from airflow.api_fastapi.core_api.security import requires_access_dag

from procedures.run_folder import RunFolder, default_run_root
from procedures.approval.answers import refused_answers
from procedures.live_progress import render_progress_page
from procedures.outcome.render import markdown_page
from procedures.reports.locations import URL_PREFIX

SUFFIXES = {".html": "text/html; charset=utf-8", ".md": "text/plain; charset=utf-8",
            ".txt": "text/plain; charset=utf-8", ".json": "application/json", ".jsonl": "text/plain; charset=utf-8",
            ".svg": "image/svg+xml"}
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'self'"

app = FastAPI(title="Kafka Runbooks reports", docs_url=None, redoc_url=None, openapi_url=None)
can_read_runs = Depends(requires_access_dag("GET", DagAccessEntity.RUN))


def _run(dag_id: str, run_id: str) -> tuple[str, str]:
    """(run root, state) of the run."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    with create_session() as session:
        run = session.query(DagRun).filter(DagRun.dag_id == dag_id, DagRun.run_id == run_id).one_or_none()
        if run is None:
            raise HTTPException(404, f"no run {run_id!r} of DAG {dag_id!r}")
        conf, state = run.conf or {}, str(getattr(run.state, "value", run.state))
    return str(conf.get("run_root") or default_run_root()), state


def _folder(dag_id: str, run_id: str) -> RunFolder:
    folder = RunFolder.for_run(_run(dag_id, run_id)[0], dag_id, run_id)
    if not folder.root.is_dir():
        raise HTTPException(404, f"run {run_id!r} of {dag_id!r} has no run folder at {folder.root} (yet)")
    return folder


@app.get("/runs/{dag_id}/{run_id}/progress", response_class=HTMLResponse, dependencies=[can_read_runs])
def run_progress_page(dag_id: str, run_id: str) -> HTMLResponse:
    """The live progress page (:mod:`procedures.live_progress`), refreshing itself while the run is active."""
    run_root, state = _run(dag_id, run_id)
    folder = RunFolder.for_run(run_root, dag_id, run_id)
    links = {"all reports of this run": "./"}
    for name in ("plan_report.html", "final_report.html"):
        if (folder.root / name).is_file():
            links[name.replace("_", " ").replace(".html", "")] = name
    page = render_progress_page(folder, dag_id, run_id, active=state in ("queued", "running"), links=links,
                                state=state)
    return HTMLResponse(page, headers={"Content-Security-Policy": CSP, "Cache-Control": "no-store"})


def _listing(folder: RunFolder) -> list[Path]:
    files = [p for d in (folder.root, folder.plan_dir) if d.is_dir() for p in sorted(d.iterdir())
             if p.is_file() and p.suffix in SUFFIXES and not p.name.startswith(".")]
    return files


@app.get("/runs/{dag_id}/{run_id}/", response_class=HTMLResponse, dependencies=[can_read_runs])
def run_index(dag_id: str, run_id: str) -> HTMLResponse:
    folder = _folder(dag_id, run_id)
    items = "".join(f'<li><a href="{html.escape(p.relative_to(folder.root).as_posix())}">'
                    f"{html.escape(p.relative_to(folder.root).as_posix())}</a></li>" for p in _listing(folder))
    page = (f"<!doctype html><title>{html.escape(dag_id)} {html.escape(run_id)}</title>"
            f"<h1>{html.escape(dag_id)} — {html.escape(run_id)}</h1>"
            f'<p><a href="progress">live progress</a></p><ul>{items}</ul>')
    return HTMLResponse(page, headers={"Content-Security-Policy": CSP})


@app.get("/runs/{dag_id}/{run_id}/{name:path}", dependencies=[can_read_runs])
def run_file(dag_id: str, run_id: str, name: str) -> Response:
    folder = _folder(dag_id, run_id)
    allowed = {p.relative_to(folder.root).as_posix(): p for p in _listing(folder)}
    path = allowed.get(name)
    headers = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff"}
    markdown = allowed.get(name.removesuffix(".html") + ".md") if name.endswith(".html") else None
    if path is None and markdown is not None:       # a Markdown report (a run from before its page) as a page
        page = markdown_page(f"{markdown.stem.replace('_', ' ')} — {dag_id} {run_id}",
                             markdown.read_text(encoding="utf-8"))
        return HTMLResponse(with_refused_answers(page, folder, name), headers=headers)
    if path is None:
        raise HTTPException(404, f"{name!r} is not a report of run {run_id!r}; the run's index lists them")
    if path.name.startswith("final_report") and refused_answers(folder):
        return Response(with_refused_answers(path.read_text(encoding="utf-8"), folder, path.name),
                        media_type=SUFFIXES[path.suffix], headers=headers)
    return FileResponse(path, media_type=SUFFIXES[path.suffix], headers=headers)


def with_refused_answers(text: str, folder: RunFolder, name: str) -> str:
    """A final report with the answers refused after the fact (:mod:`operators.approval.answer_gate`):
    a late answer to an expired request, a triggerer's own Approve — each shown as refused, ignored."""
    lines = [r["why"] for r in refused_answers(folder)]
    if not lines or not name.startswith("final_report"):
        return text
    if name.endswith(".html"):
        items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
        block = f"<h2>Answers refused</h2><ul class=\"refused\">{items}</ul>"
        return text.replace("</body>", block + "</body>", 1) if "</body>" in text else text + block
    return text.rstrip("\n") + "\n\n## Answers refused\n\n" + "".join(f"- {line}\n" for line in lines)
