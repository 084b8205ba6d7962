"""Links to a run's reports as Airflow's API server serves them (:mod:`operators.reports_app`).

The address is ``[api] base_url`` (the UI's address, as people reach it) followed by the reports
app's path; without a configured ``base_url`` there is no link, and messages give the report's
path on the worker instead.

Failure: none.
"""

from __future__ import annotations


def report_link(dag_id: str, run_id: str, name: str = "") -> str | None:
    """The link to report ``name`` of a run, or ``None`` when ``[api] base_url`` is not set."""
    from airflow.configuration import conf

    from operators.reports_app import report_url

    base = (conf.get("api", "base_url", fallback="") or "").strip()
    return report_url(base, dag_id, run_id, name) if base else None
