"""Where reports come from and where people find them: the templates folder and the reports app's URLs.

A leaf (no project imports), so that the report writers (:mod:`operators.reports.final`,
:mod:`procedures.live_progress`), the links (:mod:`operators.reports.links`) and the app
that serves them (:mod:`operators.reports.app`) share these without importing each other.

Failure: none (a path and string formatting).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
URL_PREFIX = "/kafka-runbooks"


def report_url(base_url: str, dag_id: str, run_id: str, name: str = "") -> str:
    """The link to a run's report as the API server serves it (``base_url`` = the UI's address)."""
    return f"{base_url.rstrip('/')}{URL_PREFIX}/runs/{quote(dag_id, safe='')}/{quote(run_id, safe='')}/{name}"
