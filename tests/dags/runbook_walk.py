"""Every runbook walked as a person meets it (issue 36): one real Airflow, tiny emulated clusters, an
SMTP sink, and Chromium reading what each run left behind.

:class:`Walk` starts the stack for the runbooks a test file walks: one emulated cluster per
:class:`Scenario` (3-4 brokers, a few 1 MiB partitions, copying at once), one
:class:`~tests.real_airflow.RealAirflow` (two users: alice triggers, bob answers) serving the DAGs,
and an :class:`~tests.notify_servers.SmtpSink` every run notifies. :meth:`Walk.drive` triggers every
scenario at once (a runbook runs one run at a time, ``max_active_runs=1``: its runs queue, while
different runbooks run side by side), answers each approval as bob does (a few seconds after it is
asked, as a person reads first; two REST calls a round watch every run), and as soon as a run has
ended, walks it in Chromium (:meth:`Walk.walk`; two page loads a run, one screenshot each):

* the run's note (what its page shows, read through the REST API) states the outcome and the cause;
* the run's last mail names the cause and links exactly one report, by URL, that answers 200 in the
  logged-in browser and 401 without a login;
* the final report is one click from its task's page (the "Final report" link of its Details tab);
* the live progress page is one click from the approval (the approve task's "Live progress" link).

What each walk finds wrong is collected, not raised at once, so one test run lists every runbook's
gaps (:meth:`Walk.problems`); the test asserts the list is empty. Screenshots:
``test-artifacts/<prefix>-<dag>-<case>-*.png``.

Failure: AssertionError naming each run and what a person would have seen instead; a run that does
not end in time is listed with its task states.
"""

from __future__ import annotations

import email
import json
import re
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from typing import Any, Callable, Mapping

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from procedures.reports.locations import report_url
from tests.conftest import new_chroot
from tests.notify_servers import SmtpSink
from tests.real_airflow import RealAirflow, status_without_login

MIB = 1024 * 1024
ENDED = ("success", "failed")
#: Seconds between bob's rounds: two list calls each, served by the API server on the CPU the runs need
#: (a list of task instances ~0.03-0.04 CPU s, BENCHMARKS 2026-11-27); rounds of 1 s made ~1,200 calls in
#: a 10-minute walk. An answer still comes ``reaction_s`` after the request is first seen.
ROUND_S = 2.0
#: The task whose "Final report" link a person clicks, where it is not ``final_report``.
REPORT_TASK = {"cluster_health": "report"}
#: The approval tasks of a runbook, where they are not ``approve``.
APPROVAL_TASKS = {"stuck_reassignment": ("approve_rewrite", "approve_election", "approve_throttles"),
                  "cluster_health": ()}


@dataclass
class Scenario:
    """One run to walk: the runbook, the cluster it runs on, its conf, the answer bob gives, and what
    the note and the notification must say."""

    dag_id: str
    case: str                                      # success, reject, expiry, refusal, failure
    conf: dict[str, Any]
    cluster: str                                   # a key of Walk.clusters
    answer: str | None = "Approve"                 # None: nobody answers
    outcome: str = r"^succeeded"                   # the note's first line must match (re.search)
    cause: str = ""                                # the note and the mail must match (re.search, re.I)
    state: str = "success"                         # the run's end state
    has_approval: bool = True                      # False: refused before its approval is asked
    mails: bool = True                             # False: the runbook sends nothing (asserted: no mail)
    run_id: str = ""
    note: str = ""
    answered: set = field(default_factory=set)

    @property
    def name(self) -> str:
        return f"{self.dag_id}/{self.case}"


@dataclass
class ClusterSetup:
    """An emulated cluster: brokers (id -> rack), topics as EmulatedCluster.create_topics takes them."""

    brokers: dict[int, str]
    topics: dict[str, dict[int, list[int]]]
    commands: bool = False                         # serve `kafka-runbook sim fault` (the roll's action)
    windows_extra: str = ""                        # more keys of its windows-file entry (e.g. expiry)
    same_as: str = ""                              # another key's cluster, under a connection of its own


def assignment_json(moves: Mapping[tuple[str, int], list[int]]) -> str:
    return json.dumps({"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r}
                                                    for (t, p), r in moves.items()]})


class Walk:
    """The stack and the walk (see module docstring); a context manager."""

    def __init__(self, zk_server: Any, home: Path, dag_ids: tuple[str, ...], clusters: Mapping[str, ClusterSetup],
                 prefix: str) -> None:
        self.zk_server = zk_server
        self.home = Path(home)
        self.dag_ids = dag_ids
        self.setups = dict(clusters)
        self.prefix = prefix
        self.clusters: dict[str, EmulatedCluster] = {}
        self.connect: dict[str, str] = {}
        self.found: list[str] = []
        self.ui: Any = None                           # the browser, opened when the first run has ended
        self.timings: dict[str, float] = {}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- the stack ---------------------------------------------------------------------------

    def __enter__(self) -> "Walk":
        from kafka_sim.control import CommandQueue

        connections: dict[str, dict] = {"spark_default": {"conn_type": "spark", "host": "local[1]"}}
        windows = ["clusters:"]
        try:
            chroots: dict[str, str] = {}
            for key, setup in self.setups.items():
                if setup.same_as:                      # e.g. the same cluster with a short approval expiry
                    chroot = chroots[setup.same_as]
                else:
                    chroot = new_chroot(self.zk_server, prefix=f"/walk-{key}-")
                chroots[key] = chroot
                connect = self.zk_server.connect_string + chroot
                self.connect[key] = connect
                if not setup.same_as:          # a seed of its own: its own /cluster/id, as real clusters have
                    # (the runbooks key what they remember of a cluster by it, e.g. retiring brokers)
                    cluster = EmulatedCluster(connect, ClusterSpec(brokers=setup.brokers, speed=100000.0,
                                                                   seed=len(self.clusters))).start()
                    self.clusters[key] = cluster
                    cluster.create_topics({t: (a, {p: MIB for p in a}, None) for t, a in setup.topics.items()})
                connections[f"zk_{key}"] = {"conn_type": "kafka_zookeeper", "host": self.zk_server.connect_string,
                                            "extra": {"chroot": chroot, "connect_timeout": 10, "session_timeout": 10}}
                if setup.windows_extra:
                    windows.append(f"  zk_{key}:\n    windows:\n      - name: always\n        start: \"* * * * *\"\n"
                                   f"        duration: 7d\n        timezone: UTC\n        runbooks: ['*']\n"
                                   f"{setup.windows_extra}")
                if setup.commands and not setup.same_as:
                    queue = CommandQueue(cluster.tool_client)
                    thread = threading.Thread(target=self._serve, args=(queue, cluster), daemon=True,
                                              name=f"sim-commands-{key}")
                    thread.start()
                    self._threads.append(thread)
            # the scheduled cluster_health (and anything left on the default) reads a cluster of its own
            if "health" in self.connect:
                connections["kafka_zookeeper_default"] = connections["zk_health"]
            self.smtp = SmtpSink().__enter__()
            connections[self.smtp.conn_id] = {
                "conn_type": "smtp", "host": "127.0.0.1", "port": self.smtp.port,
                "extra": {"disable_ssl": True, "disable_tls": True, "from_email": "runbooks@example.com",
                          "to": ["oncall@example.com"], "timeout": 10}}
            windows_file = self.home / "windows.yaml"
            self.home.mkdir(parents=True, exist_ok=True)
            windows_file.write_text("\n".join(windows) + "\n")
            self.run_root = self.home / "runs"
            extra_env = {"KAFKA_RUNBOOKS_RUN_ROOT": str(self.run_root),
                         # the walk starts every run at once; deferred and waiting tasks hold no slot.
                         # Its ~230 tasks last 1-6 s each and 4 slots are ~85% busy, but with 6-8 slots
                         # SQLite's lock killed the scheduler twice at load 20 (tests/real_airflow.py)
                         "AIRFLOW__CORE__PARALLELISM": "4"}
            if len(windows) > 1:                       # an empty windows file is refused whole
                extra_env["KAFKA_RUNBOOKS_WINDOWS_FILE"] = str(windows_file)
            self.airflow = RealAirflow(self.home / "airflow", self.dag_ids, connections, extra_env=extra_env,
                                       users=("alice", "bob")).__enter__()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        for name in ("ui", "airflow", "smtp"):
            part = getattr(self, name, None)
            if part is not None:
                try:
                    part.__exit__(None, None, None)
                except Exception:                      # noqa: BLE001 - tear down the rest regardless
                    pass
        self._stop.set()
        for thread in self._threads:
            thread.join(10)
        stopping = [threading.Thread(target=c.stop, daemon=True) for c in self.clusters.values()]
        for thread in stopping:                        # side by side: each closes a few ZooKeeper sessions
            thread.start()
        for thread in stopping:
            thread.join(60)

    def _serve(self, queue: Any, cluster: EmulatedCluster) -> None:
        while not self._stop.is_set():
            queue.run_pending(cluster, 0.2)

    def conn(self, key: str) -> str:
        return f"zk_{key}"

    def connect_of(self, key: str) -> str:
        return self.connect.get(key, f"<cluster {key} not started>")

    def restart_action(self, key: str, fail_on: int | None = None) -> str:
        """The roll's action on cluster ``key``: the emulator restarts ``{broker}`` (``kafka-runbook sim
        fault restart``); with ``fail_on`` the action exits 1 for that broker without restarting it."""
        action = f"{sys.executable} -m cli.main sim fault --zookeeper {self.connect_of(key)} --timeout 60 restart {{broker}}"
        return action if fail_on is None else f"test {{broker}} != {fail_on} && {action}"

    # -- driving the runs --------------------------------------------------------------------

    def trigger(self, s: Scenario, conf: Mapping[str, Any]) -> str:
        """Trigger as alice with a run id of our own, so a retried call cannot make a second run."""
        return self.airflow.trigger(s.dag_id, conf, "alice", run_id=f"walk__{s.dag_id}__{s.case}__{time.time_ns()}")

    def drive(self, scenarios: list[Scenario], timeout: float, reaction_s: float = 3.0) -> None:
        """Trigger every scenario as alice; answer their approvals as bob on a thread (REST only, as the
        UI's call); walk each run in the browser, on this thread, as soon as it has ended."""
        import queue

        started = time.monotonic()
        # each runbook's runs as soon as the DAG processor has served it (it parses one file at a time);
        # a runbook runs one run at a time, so the runbooks with the most runs (the longest queues) first
        count = {d: sum(1 for s in scenarios if s.dag_id == d) for d in {s.dag_id for s in scenarios}}
        for s in sorted(scenarios, key=lambda s: -count[s.dag_id]):
            self.airflow.wait_dag(s.dag_id)
            conf = {"run_root": str(self.run_root), "notify_conn_ids": [self.smtp.conn_id], **s.conf}
            s.run_id = self.trigger(s, conf)
        self.timings["all triggered"] = time.monotonic() - started
        ended: "queue.Queue[tuple[Scenario, Any] | None]" = queue.Queue()
        failed: list[BaseException] = []
        deadline = time.monotonic() + timeout

        def answer_loop() -> None:
            pending = {s.run_id: s for s in scenarios}
            asked: dict[tuple, float] = {}
            try:
                while pending and time.monotonic() < deadline:
                    self.airflow._check_alive()
                    try:                       # two calls a round for every run, whatever their number
                        runs = {r["dag_run_id"]: r["state"] for r in
                                self.airflow.api("GET", "/dags/~/dagRuns?limit=500", None, "bob")["dag_runs"]}
                        waiting = self.airflow.api("GET", "/dags/~/dagRuns/~/taskInstances?state=awaiting_input"
                                                   "&limit=500", None, "bob")["task_instances"]
                    except urllib.error.HTTPError as e:
                        if e.code < 500:
                            raise
                        time.sleep(1)
                        continue
                    except (urllib.error.URLError, ConnectionError, TimeoutError):
                        time.sleep(1)
                        continue
                    for run_id, s in list(pending.items()):
                        if runs.get(run_id) in ENDED:
                            st = self.airflow._state_or_none(s.dag_id, run_id)
                            if st is not None and st.state in ENDED:
                                del pending[run_id]
                                self.timings[f"{s.name} ended"] = time.monotonic() - started
                                ended.put((s, st))
                    for ti in waiting:
                        s = pending.get(ti["dag_run_id"])
                        key = (ti["task_id"], ti["try_number"])
                        if (s is None or s.answer is None or key in s.answered
                                or ti["task_id"] not in APPROVAL_TASKS.get(s.dag_id, ("approve",))):
                            continue
                        asked.setdefault((s.name, *key), time.monotonic())
                        if time.monotonic() - asked[(s.name, *key)] >= reaction_s:
                            self.airflow.api_retried(
                                "PATCH", f"/dags/{s.dag_id}/dagRuns/{s.run_id}/taskInstances/{ti['task_id']}/-1/"
                                "hitlDetails", {"chosen_options": [s.answer]}, "bob", done_if=409)
                            s.answered.add(key)
                    time.sleep(ROUND_S)
                for s in pending.values():
                    self.found.append(f"{s.name} ({s.run_id}): did not end within {timeout:g}s: "
                                      f"{self.airflow._state_or_none(s.dag_id, s.run_id)}")
            except BaseException as e:                  # noqa: BLE001 - raised again on the test's thread
                failed.append(e)
            finally:
                ended.put(None)

        thread = threading.Thread(target=answer_loop, daemon=True, name="walk-answers")
        thread.start()
        while (item := ended.get()) is not None:
            self.walk(*item)
            self.timings[f"{item[0].name} walked"] = time.monotonic() - started
        thread.join(60)
        self.timings["all walked"] = time.monotonic() - started
        if failed:
            raise failed[0]

    # -- what a person sees ------------------------------------------------------------------

    def problem(self, s: Scenario, what: str) -> None:
        self.found.append(f"{s.name} ({s.run_id}): {what}")

    def mails(self, s: Scenario) -> list[Message]:
        out = []
        for m in list(self.smtp.inbox.messages):
            msg = email.message_from_string(m["data"])
            if f"{s.dag_id} / {s.run_id}" in _text(msg):
                out.append(msg)
        return out

    def walk(self, s: Scenario, st: Any) -> None:
        """Every check of the module docstring on the ended run ``s``; what fails goes to :attr:`found`."""
        if st.state != s.state:
            logs = [f"--- {t} ---\n{self.airflow.task_log(s.dag_id, s.run_id, t)[-1500:]}"
                    for t, v in st.tasks.items() if v["state"] in ("failed", "up_for_retry") and t != "notify"]
            self.problem(s, f"ended {st.state}, expected {s.state}: {json.dumps(st.tasks)}\n" + "\n".join(logs[:2]))
        base = report_url(f"http://127.0.0.1:{self.airflow.port}", s.dag_id, s.run_id)
        if self.ui is None:
            from tests.airflow_ui import AirflowBrowser

            self.ui = AirflowBrowser(self.airflow, "bob", self.prefix).__enter__()
        self._check_note(s)
        self._check_mail(s, base)
        self._in_browser(s, "the final report's task page", lambda: self._close(self._click(
            s, REPORT_TASK.get(s.dag_id, "final_report"), "Final report", "final-report",
            lambda url: url.startswith(base) and url.endswith("report.html"))))
        approvals = [t for t in APPROVAL_TASKS.get(s.dag_id, ("approve",)) if st.tasks.get(t, {}).get("state")
                     not in (None, "skipped", "upstream_failed")]
        if s.has_approval and approvals:
            self._in_browser(s, "the approval's task page", lambda: self._progress(s, approvals[0], base))
        self._park()

    def _park(self) -> None:
        """Leave the walk's tab on a blank page until the next run has ended: an Airflow task page left
        open kept Chromium's renderer busy while a run was active (4.8 CPU s in 30 s, about:blank 0.2;
        BENCHMARKS "CI under 25 min"), on the CPU the runs need. The next walk opens its pages by URL."""
        from playwright.sync_api import Error as PlaywrightError

        try:
            self.ui.page.goto("about:blank")
        except PlaywrightError:
            pass                                       # nothing to park: the next walk opens its page by URL

    def _in_browser(self, s: Scenario, what: str, step: Callable[[], None]) -> None:
        """``step`` in the browser, once more after a page that did not load (a loaded machine); a
        second time out is listed as what the person saw."""
        from playwright.sync_api import Error as PlaywrightError

        for attempt in (1, 2):
            try:
                step()
                return
            except PlaywrightError as e:
                if attempt == 2:
                    self.problem(s, f"{what} did not load: {str(e).splitlines()[0]}")
                    self.ui.shot(f"{s.dag_id}-{s.case}-not-loaded")

    def _progress(self, s: Scenario, task: str, base: str) -> None:
        page = self._click(s, task, "Live progress", "progress", lambda url: url == base + "progress")
        if page is not None:
            text = _body(page)
            self._close(page)
            if not re.search(r"\bfinished\b", text, re.I):
                self.problem(s, f"the live progress page of the ended run does not say 'finished': {text[:300]!r}")

    def _check_note(self, s: Scenario) -> None:
        note = None
        deadline = time.monotonic() + 30             # the scheduler's listener writes it as the run ends
        while note is None and time.monotonic() < deadline:
            note = self.airflow.api_retried("GET", f"/dags/{s.dag_id}/dagRuns/{s.run_id}", None, "bob").get("note")
            if note is None:
                time.sleep(1)
        if not note:
            self.problem(s, "the run has no note")
            return
        first = note.splitlines()[0]
        if not re.search(s.outcome, first, re.I):
            self.problem(s, f"the note's first line does not state the outcome /{s.outcome}/: {first!r}")
        if s.cause and not re.search(s.cause, note, re.I | re.S):
            self.problem(s, f"the note does not name the cause /{s.cause}/: {note!r}")
        s.note = note

    def _check_mail(self, s: Scenario, base: str) -> None:
        mails = self.mails(s)
        if not s.mails:
            if mails:
                self.problem(s, f"{len(mails)} mail(s) from a runbook that sends none: {mails[-1]['Subject']!r}")
            return
        if not mails:
            self.problem(s, "no notification mail")
            return
        last = mails[-1]
        text, html = _text(last), _html(last)
        if s.cause and not re.search(s.cause, text, re.I | re.S):
            self.problem(s, f"the last mail ({last['Subject']!r}) does not name the cause /{s.cause}/: {text[:800]!r}")
        urls = set(re.findall(r"https?://[^\s\"'<>)]+", text + "\n" + html))
        if len(urls) != 1:
            self.problem(s, f"the last mail links {len(urls)} report(s), not one: {sorted(urls)}")
        if str(self.run_root) in text:
            self.problem(s, f"the last mail shows a worker path ({self.run_root}): {text[:800]!r}")
        for url in sorted(urls):
            if not url.startswith(base):
                self.problem(s, f"the mail links {url}, not a report of this run ({base})")
                continue
            status = status_without_login(url)
            if status != 401:
                self.problem(s, f"{url} answers {status} without a login, not 401")
            status = self.ui.context.request.get(url).status      # with the browser's login (its cookies)
            if status != 200:
                self.problem(s, f"{url} answers {status} after login, not 200")

    def _click(self, s: Scenario, task: str, link_name: str, shot: str, ok: Callable[[str], bool]) -> Any:
        """On the task's page (its Details tab, where Airflow 3.3 shows the extra links), click ``link_name``; the page
        it opened, or None (and a problem) when the link is not there or leads nowhere."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        ui = self.ui
        page = ui.page                                 # the task's page, its Details tab (where the links are)
        page.goto(f"{ui.base}/dags/{s.dag_id}/runs/{s.run_id}/tasks/{task}/details")
        link = page.get_by_role("link", name=link_name, exact=True).first
        try:
            link.wait_for(timeout=45_000)
        except PlaywrightTimeout:
            link = None
        if link is None and "No Task Instance found" in _body(page):    # the UI's fetch lost under load
            page.reload()
            link = page.get_by_role("link", name=link_name, exact=True).first
            try:
                link.wait_for(timeout=45_000)
            except PlaywrightTimeout:
                link = None
        if link is None:
            self.problem(s, f"no {link_name!r} link on the {task} task's page")
            ui.shot(f"{s.dag_id}-{s.case}-{task}-no-link")
            return None
        href = link.get_attribute("href") or ""
        opened = ui.follow(link)
        status = _logged_in_status(opened)
        ui.shot(f"{s.dag_id}-{s.case}-{shot}", opened)
        if not ok(opened.url) or status != 200:
            self.problem(s, f"{link_name!r} on {task} ({href}) opened {opened.url}, which answers {status}")
        return opened

    def _close(self, page: Any) -> None:
        """Close a tab a link opened (the walk's own tab stays)."""
        if page is not None and page is not self.ui.page:
            page.close()


def _logged_in_status(page: Any) -> int:
    """The status of the page's URL fetched again with the browser's login (a page has no status)."""
    resp = page.request.get(page.url)
    return resp.status


def _body(page: Any) -> str:
    try:
        return page.inner_text("body", timeout=10_000)
    except Exception:                                  # noqa: BLE001 - a page mid-reload
        page.wait_for_timeout(1000)
        return page.inner_text("body", timeout=10_000)


def _parts(msg: Message, kind: str) -> str:
    out = []
    for part in msg.walk():
        if part.get_content_type() == kind:
            payload = part.get_payload(decode=True)
            out.append(payload.decode(part.get_content_charset() or "utf-8", "replace") if payload else "")
    return "\n".join(out)


def _text(msg: Message) -> str:
    return _parts(msg, "text/plain") or _parts(msg, "text/html")


def _html(msg: Message) -> str:
    return _parts(msg, "text/html")
