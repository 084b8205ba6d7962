"""Airflow's own UI in Chromium, as a person uses it: log in, open a DAG's trigger form, type into its
fields, press Trigger; open pages and follow links; screenshots kept as artifacts.

Built on :mod:`tests.browser` (Debian's Chromium through Playwright) and a :class:`tests.real_airflow.RealAirflow`
whose users have passwords. One browser per :class:`AirflowBrowser` (a context manager), one login.

How a run is followed: the run's page (``/dags/<dag>/runs/<run>``) shows the grid; a click on a task's
square opens its task instance, whose *Details* tab holds the operator extra links (Airflow 3.3 shows
them there only, not on the Logs tab the task page opens with) as buttons; a link to the same origin
opens in the same tab.

How the trigger form is typed into (Airflow 3.3's flexible form): every field is ``#element_<param>``;
text, number and one-line fields are inputs or text areas that take ``fill``; a string array is a
text area with one item per line. Integer arrays are never shown in Airflow's JSON editor here (its
re-formatting breaks typing, see :func:`operators.runbook_dag.broker_ids_param`).

Failure: Playwright's TimeoutError when a page or element does not appear in time (bounded waits on
conditions, never sleeps); AssertionError from the helpers naming what the page showed instead.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from tests.browser import CHROMIUM_ARGS, artifacts_dir, chromium_path
from tests.real_airflow import RealAirflow

WAIT_MS = 60_000


class AirflowBrowser:
    """A logged-in Chromium on a :class:`RealAirflow` (see module docstring)."""

    def __init__(self, airflow: RealAirflow, user: str, prefix: str) -> None:
        self.airflow = airflow
        self.user = user
        self.prefix = prefix
        self.base = f"http://127.0.0.1:{airflow.port}"

    def __enter__(self) -> "AirflowBrowser":
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, timeout=WAIT_MS)
        self.context = self.browser.new_context(viewport={"width": 1300, "height": 1000})
        self.context.set_default_timeout(WAIT_MS)
        self.page = self.context.new_page()
        self.login()
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.browser.close()
        finally:
            self._pw.stop()

    def login(self) -> None:
        """The simple auth manager's sign-in form, as a person fills it."""
        page = self.page
        page.goto(self.base + "/", timeout=WAIT_MS)
        page.wait_for_selector("input[name=username]")
        page.fill("input[name=username]", self.user)
        page.fill("input[name=password]", self.airflow.passwords[self.user])
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/auth/login" not in url)

    def shot(self, name: str, page: Any = None) -> Path:
        out = artifacts_dir() / f"{self.prefix}-{name}.png"
        (page or self.page).screenshot(path=str(out), full_page=True)
        return out

    # -- links -------------------------------------------------------------------------------

    def follow(self, link: Any) -> Any:
        """Click ``link`` as a person does; the page it opened (a new tab for ``target=_blank``)."""
        if (link.get_attribute("target") or "") == "_blank":
            with self.context.expect_page() as opened:
                link.click()
            page = opened.value
        else:
            link.click()
            page = self.page
        page.wait_for_load_state()
        return page

    def wait_text(self, page: Any, ok: Callable[[str], bool], timeout: float, what: str) -> str:
        """Poll ``page``'s text until ``ok(text)``, through the page's own reloads (a refreshing page
        destroys the JavaScript context a ``wait_for_function`` would run in); its text then."""
        from playwright.sync_api import Error as PlaywrightError

        deadline, text = time.monotonic() + timeout, ""
        while time.monotonic() < deadline:
            try:
                text = page.inner_text("body", timeout=10_000)
            except PlaywrightError:
                text = ""                      # mid-reload: look again
            if ok(text):
                return text
            page.wait_for_timeout(500)
        raise AssertionError(f"{what} not seen within {timeout:g}s; the page said:\n{text[-2000:]}")

    # -- a run and its tasks -----------------------------------------------------------------

    def open_run(self, dag_id: str, run_id: str) -> Any:
        """The run's page, as the DAG's run list links it."""
        self.page.goto(f"{self.base}/dags/{dag_id}/runs/{run_id}", timeout=WAIT_MS)
        self.page.get_by_text(run_id).first.wait_for()
        return self.page

    def open_task_from_run(self, dag_id: str, run_id: str, task_id: str) -> Any:
        """On the run's page, click the task's square in the grid: its task instance page."""
        page = self.page
        square = page.locator(f'a[href="/dags/{dag_id}/runs/{run_id}/tasks/{task_id}"]').first
        square.click()
        page.wait_for_url(re.compile(rf"/runs/.+/tasks/{re.escape(task_id)}"))
        return page

    def extra_link(self, name: str) -> Any:
        """The open task instance's extra-link button ``name``, from its Details tab (bounded wait:
        the UI polls the task's links while it runs)."""
        page = self.page
        page.get_by_role("link", name="Details", exact=True).first.click()
        page.wait_for_url(re.compile(r"/details$"))
        link = page.get_by_role("link", name=name, exact=True).first
        link.wait_for()
        return link

    # -- the trigger form --------------------------------------------------------------------

    def open_trigger_form(self, dag_id: str) -> Any:
        """The DAG's page, then its Trigger button: the dialog with the Run Parameters."""
        page = self.page
        page.goto(f"{self.base}/dags/{dag_id}", timeout=WAIT_MS)
        page.get_by_test_id("trigger-dag-button").first.click()
        dialog = page.get_by_role("dialog")
        dialog.get_by_text("Run Parameters").first.wait_for()
        return dialog

    def submit_button(self, dialog: Any) -> Any:
        return dialog.get_by_role("button", name=re.compile(r"^\s*Trigger\s*$"))

    def trigger_from_form(self, dag_id: str, fields: Mapping[str, str], unpause: bool) -> tuple[bool, str]:
        """Open the form, note whether Trigger is enabled before typing, type ``fields``, set the
        "Unpause on trigger" box, press Trigger; returns (enabled before typing, the new run's id)."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        dialog = self.open_trigger_form(dag_id)
        button = self.submit_button(dialog)
        enabled_before = button.is_enabled()
        for name, text in fields.items():
            box = dialog.locator(f"#element_{name}")
            box.click()
            box.fill(text)
        unpause_box = dialog.get_by_role("checkbox", name=re.compile("Unpause"))
        if unpause_box.count() and unpause_box.first.is_checked() != unpause:
            dialog.get_by_text(re.compile(r"^Unpause .* on trigger$")).first.click()
        self.shot(f"form-{dag_id}")
        before = {r["dag_run_id"] for r in self.runs(dag_id)}
        assert button.is_enabled(), (f"{dag_id}: Trigger stays disabled with {dict(fields)} typed; the form says:\n"
                                     f"{dialog.inner_text()[-3000:]}")
        button.click()
        run_id = self.wait_new_run(dag_id, before)
        try:
            dialog.wait_for(state="hidden", timeout=30_000)   # the form closes once the UI has the run
        except PlaywrightTimeout:
            pass                                       # the run exists (checked above); the screenshot shows the rest
        return enabled_before, run_id

    def runs(self, dag_id: str) -> list[dict]:
        return self.airflow.api("GET", f"/dags/{dag_id}/dagRuns?limit=100", as_user=self.user)["dag_runs"]

    def wait_new_run(self, dag_id: str, before: set[str], timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            new = [r["dag_run_id"] for r in self.runs(dag_id) if r["dag_run_id"] not in before]
            if new:
                return new[0]
            self.page.wait_for_timeout(300)
        raise AssertionError(f"{dag_id}: no run created within {timeout:g}s of pressing Trigger")
