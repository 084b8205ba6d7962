"""Buttons to a run's reports and live progress as Airflow's API server serves them (:mod:`operators.reports.app`;
the address itself: :func:`operators.notifications.pages.run_page`).

The operator extra links (:class:`PlanReportLink`, :class:`ProgressLink`, :class:`FinalReportLink`,
:class:`RunReportsLink`) put a button on a task's page in the Airflow UI. In Airflow 3 the worker
computes them when the task finishes an attempt (or defers) and stores each in the task's XCom
(``_link_<class>``); the serialized DAG keeps only name → XCom key, so the API server needs no
registration. They are absolute with ``base_url`` and root-relative (``/kafka-runbooks/…``, the API
server's own path) without it.

Failure: none; a link to a report not written yet answers 404 naming what is missing.
"""

from __future__ import annotations

from typing import Any, ClassVar

from airflow.sdk import BaseOperatorLink

from operators.notifications.pages import run_page


class RunPageLink(BaseOperatorLink):
    """A button to page ``page`` of the task's run (a subclass sets ``name`` and ``page``)."""

    page: ClassVar[str] = ""

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        return run_page(ti_key.dag_id, ti_key.run_id, self.page)


class PlanReportLink(RunPageLink):
    name = "Plan report"
    page = "plan_report.html"


class ProgressLink(RunPageLink):
    name = "Live progress"
    page = "progress"


class FinalReportLink(RunPageLink):
    name = "Final report"
    page = "final_report.html"


class RunReportsLink(RunPageLink):
    name = "All reports of this run"
    page = ""
