"""Where people open a run's pages: the addresses messages and the task pages' buttons point at.

The pages are served by Airflow's API server (:mod:`operators.reports.app`; the path itself:
:func:`procedures.reports.locations.report_url`). :func:`report_link` is the absolute address
(``[api] base_url``, the UI's address as people reach it, followed by the reports app's path), or
``None`` when no ``base_url`` is configured; :func:`run_page` is absolute with ``base_url`` and
root-relative (``/kafka-runbooks/…``) without it — never a path on a worker's disk.

Failure: none; a page not written yet answers 404 naming what is missing.
"""

from __future__ import annotations

from procedures.reports.locations import report_url


def _base() -> str:
    from airflow.configuration import conf

    return (conf.get("api", "base_url", fallback="") or "").strip()


def report_link(dag_id: str, run_id: str, name: str = "") -> str | None:
    """The link to report ``name`` of a run, or ``None`` when ``[api] base_url`` is not set."""
    base = _base()
    return report_url(base, dag_id, run_id, name) if base else None


def run_page(dag_id: str, run_id: str, name: str = "") -> str:
    """The link to page ``name`` of a run: absolute with ``[api] base_url``, else root-relative."""
    return report_url(_base(), dag_id, run_id, name)
