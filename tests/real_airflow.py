"""A real Airflow on 127.0.0.1 for the tests that depend on its processes: scheduler, DAG processor,
triggerer and API server as separate subprocesses (LocalExecutor, SQLite, a private AIRFLOW_HOME).

``dag.test()`` runs every task in one process and never shows the races between the scheduler,
the executor and the triggerer; this does. :class:`RealAirflow` starts the four components with
``python -m airflow <component>``, triggers runs through the public REST API and waits for them with a deadline. Without ``users``
the simple auth manager makes everyone an admin (as ``airflow standalone`` does); with ``users``
each is a named admin with a password (``passwords``), the REST calls carry that user's token
(:meth:`RealAirflow.token`), and :meth:`RealAirflow.answer` records a human-in-the-loop response
as that user — the four-eyes tests need a person who triggers and another who approves.
``[api] base_url`` is set, so approval bodies carry absolute report links. The DAGs folder holds one shim per DAG asked for, importing it from this repository's
``dags/`` (the processes get the repository on ``PYTHONPATH``).

Each component imports the modules the served DAG files import once, just before its first fork
(``$AIRFLOW_HOME/config/airflow_local_settings.py``, :func:`preload_settings`), so the processes it
forks — LocalExecutor workers and their task processes, the DAG processor's parsers — inherit them
instead of importing them again: that import was ~75% of every task process's CPU (py-spy,
tests/dags/test_real_airflow_race.py, 2026-11-27). The DAG file itself still runs in each task
process; Airflow and the start method (fork) are as configured.

The metadata DB is ``airflow db migrate``'s, made once per test run and copied into each home
(:mod:`tests.airflow_db_template`).

Failure: a component that exits, or a run that does not end before its deadline, raises
:class:`AssertionError` with the tail of each component's log.
"""

from __future__ import annotations

import ast
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from kafka_sim.zookeeper_server import free_port
from tests.airflow_db_template import migrated_home

REPO = Path(__file__).resolve().parents[1]
COMPONENTS = ("api-server", "dag-processor", "scheduler", "triggerer")


def dag_imports(dag_ids: tuple[str, ...]) -> list[str]:
    """The modules the repository's DAG files ``dag_ids`` import at their top level, in file order."""
    names: list[str] = []
    for dag_id in dag_ids:
        tree = ast.parse((REPO / "dags" / f"{dag_id}.py").read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module and not node.level and node.module != "__future__":
                names.append(node.module)
            elif isinstance(node, ast.Import):
                names.extend(a.name for a in node.names)
    return list(dict.fromkeys(names))


def preload_settings(modules: list[str]) -> str:
    """An ``airflow_local_settings`` module that imports ``modules`` right before the process's first
    fork (``os.register_at_fork``): by then Airflow has initialised, and every child inherits them.
    It defines no policy (``__all__`` is empty)."""
    return ("# written by tests/real_airflow.py: see its module docstring\n"
            "import importlib\nimport os\n\n__all__: list = []\n"
            f"_MODULES = {modules!r}\n_done = []\n\n\n"
            "def _preload() -> None:\n"
            "    if not _done:\n"
            "        _done.append(True)\n"
            "        for name in _MODULES:\n"
            "            importlib.import_module(name)\n\n\n"
            "os.register_at_fork(before=_preload)\n")


@dataclass
class RunState:
    run_id: str
    state: str
    tasks: dict[str, dict[str, Any]]   # task id -> {"state", "try_number"}


class RealAirflow:
    """The four Airflow components on a private home (see module docstring); a context manager."""

    def __init__(self, home: Path, dag_ids: tuple[str, ...], connections: Mapping[str, Mapping[str, Any]],
                 extra_env: Mapping[str, str] | None = None, users: tuple[str, ...] = ()) -> None:
        self.home = Path(home)
        self.port = free_port()
        self.users = tuple(users)
        self.passwords = {u: secrets.token_urlsafe(12) for u in self.users}
        self._tokens: dict[str, str] = {}
        self.dags = self.home / "dags"
        self.procs: dict[str, subprocess.Popen] = {}
        self.restarts: list[str] = []       # components started again (see _restartable)
        self._log_from: dict[str, int] = {}   # where each component's current process began its log
        self.dag_ids = dag_ids
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "KR_TEST_"))}
        env.update({
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{self.home / 'airflow.db'}",
            # SQLite's writers wait up to 60 s for a busy lock (sqlite3's default is 5 s). A reader that must
            # become a writer while another writes still fails at once (SQLite's deadlock rule): the walk's
            # scheduler died of "database is locked" twice with 6-8 slots at load 20, so it keeps 4
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS": "real_airflow_db.CONNECT_ARGS",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "2",
            "AIRFLOW__CORE__AUTH_MANAGER":
                "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False" if users else "True",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(f"{u}:admin" for u in users) or "admin:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(self.home / "passwords.json"),
            "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{self.port}",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{self.port}/execution/",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API__SECRET_KEY": secrets.token_hex(16),
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            # each DAG file is parsed once: the shims never change while a stack runs, and re-parsing
            # every file every 30 s (the default) cost 20 CPU s a minute with the 13 runbooks loaded
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "3600",
            "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
            # a loaded CI machine: importing the DAG (operators, kazoo, pydantic) can pass the 30 s defaults
            "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "600",
            "AIRFLOW__DAG_PROCESSOR__DAG_FILE_PROCESSOR_TIMEOUT": "600",
            "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "60",   # workers -> API server, one uvicorn worker
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
            "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        })
        for conn_id, conn in connections.items():
            env[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps(dict(conn))
        env.update(extra_env or {})
        self.env = env

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> "RealAirflow":
        self.home.mkdir(parents=True, exist_ok=True)
        self.dags.mkdir(exist_ok=True)
        (self.home / "passwords.json").write_text(json.dumps(self.passwords))
        (self.home / "config").mkdir(exist_ok=True)
        (self.home / "config" / "airflow_local_settings.py").write_text(preload_settings(dag_imports(self.dag_ids)))
        (self.home / "config" / "real_airflow_db.py").write_text(   # $AIRFLOW_HOME/config is on sys.path
            "# written by tests/real_airflow.py: the SQLite connection's arguments\nCONNECT_ARGS = {'timeout': 60}\n")
        for dag_id in self.dag_ids:   # "airflow" and "dag" in the text: the processor's safe mode parses it
            (self.dags / f"{dag_id}.py").write_text(f"# airflow dag shim\nfrom dags.{dag_id} import dag  # noqa: F401\n")
        migrated_home(self.home, self.env)     # `airflow db migrate`'s DB, made once per test run
        for name in COMPONENTS:
            self._start(name)
        return self

    def _start(self, name: str, mode: str = "wb") -> None:
        with open(self.home / f"{name}.log", mode) as log:
            self._log_from[name] = log.tell()
            self.procs[name] = subprocess.Popen([sys.executable, "-m", "airflow", name], env=self.env,
                                                cwd=self.home, stdout=log, stderr=subprocess.STDOUT,
                                                start_new_session=True)

    def __exit__(self, *exc: Any) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)

    def logs(self, lines: int = 30) -> str:
        out = []
        for name in COMPONENTS:
            path = self.home / f"{name}.log"
            text = path.read_text(errors="replace").splitlines()[-lines:] if path.exists() else []
            out.append(f"--- {name} ---\n" + "\n".join(text))
        return "\n".join(out)

    def _check_alive(self) -> None:
        """Every component still running; a scheduler that died of SQLite's lock is started again (below)."""
        for name, proc in list(self.procs.items()):
            if proc.poll() is not None and self._restartable(name):
                self.restarts.append(name)
                self._start(name, mode="ab")
        dead = [name for name, p in self.procs.items() if p.poll() is not None]
        assert not dead, f"Airflow component(s) {dead} exited\n{self.logs()}"

    def _restartable(self, name: str) -> bool:
        """A scheduler that exited on SQLite's "database is locked" (a reader that had to become a writer
        while another process wrote: SQLite refuses at once, whatever the busy timeout; seen in CI with
        the walk's 4 task slots, 2026-12-02) is restarted, as a supervisor restarts it in a deployment
        (the new one adopts the running tasks); at most 3 times. The metadata DB of a real deployment
        is not SQLite; what the tests check (the runbooks' runs) is not touched by the restart."""
        if name != "scheduler" or self.restarts.count(name) >= 3:
            return False
        with open(self.home / f"{name}.log", "rb") as log:      # what this process wrote, its last lines
            log.seek(self._log_from.get(name, 0))
            tail = log.read().decode(errors="replace").splitlines()[-60:]
        return any("database is locked" in line for line in tail)

    # -- REST --------------------------------------------------------------------------------

    def token(self, user: str) -> str:
        """A JWT for ``user`` from the simple auth manager's login endpoint (cached)."""
        if user not in self._tokens:
            req = urllib.request.Request(f"http://127.0.0.1:{self.port}/auth/token", method="POST",
                                         data=json.dumps({"username": user, "password": self.passwords[user]}).encode(),
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=60) as resp:
                self._tokens[user] = json.loads(resp.read())["access_token"]
        return self._tokens[user]

    def api(self, method: str, path: str, body: Any = None, as_user: str | None = None) -> Any:
        headers = {"Content-Type": "application/json"}
        user = as_user or (self.users[0] if self.users else None)
        if user is not None:
            headers["Authorization"] = f"Bearer {self.token(user)}"
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/api/v2{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(), headers=headers)
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.loads(resp.read() or b"null")

    def _state_or_none(self, dag_id: str, run_id: str) -> RunState | None:
        """The run's state, or None when the API did not answer this time (a loaded machine)."""
        try:
            return self.state(dag_id, run_id)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return None

    def wait_dag(self, dag_id: str, timeout: float = 240, unpause: bool = True) -> None:
        """Until the API serves ``dag_id`` (parsed by the DAG processor); then unpause it (unless not asked)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                dag = self.api("GET", f"/dags/{dag_id}")
                if unpause and dag.get("is_paused"):
                    self.api("PATCH", f"/dags/{dag_id}", {"is_paused": False})
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(1)
        raise AssertionError(f"{dag_id} not served by the API within {timeout:g}s\n{self.logs()}")

    def api_retried(self, method: str, path: str, body: Any, as_user: str | None = None,
                    done_if: int | None = None, tries: int = 8) -> Any:
        """:meth:`api`, tried again on a 5xx or no answer (the one uvicorn worker waiting on SQLite's lock
        on a loaded machine answers 500, or not within the timeout: seen on triggers in CI); ``done_if``:
        the status that means an earlier try already took effect (the answer is then None)."""
        for attempt in range(tries):
            try:
                return self.api(method, path, body, as_user)
            except urllib.error.HTTPError as e:
                if e.code == done_if:
                    return None
                if e.code < 500 or attempt == tries - 1:
                    raise
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                self._check_alive()
                if attempt == tries - 1:
                    raise
            time.sleep(1 + attempt)
        raise AssertionError("unreachable")

    def trigger(self, dag_id: str, conf: Mapping[str, Any], as_user: str | None = None,
                run_id: str | None = None) -> str:
        """A manual run of ``dag_id`` with ``conf``; its run id. The id is chosen here, so a retried POST
        whose first try went through after all (409) makes no second run."""
        run_id = run_id or f"manual__{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}_{secrets.token_hex(4)}"
        self.api_retried("POST", f"/dags/{dag_id}/dagRuns", {"dag_run_id": run_id, "logical_date": None,
                                                             "conf": dict(conf)}, as_user, done_if=409)
        return run_id

    def answer(self, dag_id: str, run_id: str, task_id: str, option: str, as_user: str) -> Any:
        """Record ``option`` on the task's required action as ``as_user`` (the UI's call)."""
        return self.api("PATCH", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/-1/hitlDetails",
                        {"chosen_options": [option]}, as_user)

    def mark_success(self, dag_id: str, run_id: str, task_id: str, as_user: str) -> Any:
        """Set the task's state to success as ``as_user``: the call the UI's "Mark as success" sends."""
        return self.api("PATCH", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}",
                        {"new_state": "success"}, as_user)

    def approve_when_asked(self, dag_id: str, run_id: str, as_user: str, timeout: float,
                           task_id: str = "approve", reaction_s: float = 3.0) -> int:
        """Approve as ``as_user`` each time the approval asks, until the task has finished (bounded);
        returns how many tries asked.

        Each answer comes ``reaction_s`` after the request is first seen, as a person reads it before
        answering. Airflow 3.3 loses an answer given within about a second of the request (its
        scheduler fails the resumed task before the executor has reported the parked attempt's
        exit); the approve task's retries then resume from the recorded approval or ask again
        (operators/approval/retry.py), and an answer that quick every time exhausts them. So more
        than one try can still ask, under load, and each is answered."""
        deadline = time.monotonic() + timeout
        answered: set[int] = set()
        asked_at: dict[int, float] = {}
        while time.monotonic() < deadline:
            self._check_alive()
            st = self._state_or_none(dag_id, run_id)
            task = (st.tasks.get(task_id) if st is not None else None) or {}
            try_number = task.get("try_number")
            if task.get("state") == "awaiting_input" and try_number not in answered:
                asked_at.setdefault(try_number, time.monotonic())
                if time.monotonic() - asked_at[try_number] >= reaction_s:
                    self.answer(dag_id, run_id, task_id, "Approve", as_user)
                    answered.add(try_number)
            elif answered and task.get("state") in ("success", "failed", "skipped", "upstream_failed"):
                return len(answered)
            time.sleep(0.5)
        raise AssertionError(f"{dag_id}.{task_id} of {run_id} did not finish its approval within {timeout:g}s "
                             f"(answered tries {sorted(answered)}): {self.state(dag_id, run_id)}\n{self.logs()}")

    def state(self, dag_id: str, run_id: str) -> RunState:
        run = self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}")
        tis = self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances?limit=100")["task_instances"]
        return RunState(run_id, run["state"], {t["task_id"]: {"state": t["state"], "try_number": t["try_number"]}
                                               for t in tis})

    def wait_run(self, dag_id: str, run_id: str, timeout: float) -> RunState:
        """The run once it is success or failed; AssertionError at ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            st = self._state_or_none(dag_id, run_id)
            if st is not None and st.state in ("success", "failed"):
                return st
            time.sleep(2)
        raise AssertionError(f"{dag_id} {run_id} not finished within {timeout:g}s: {self.state(dag_id, run_id)}\n"
                             f"{self.logs()}")

    def wait_task_state(self, dag_id: str, run_id: str, task_id: str, state: str | tuple[str, ...],
                        timeout: float) -> None:
        """Until the task is in ``state`` (or one of them); AssertionError at ``timeout`` seconds."""
        states = (state,) if isinstance(state, str) else tuple(state)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            st = self._state_or_none(dag_id, run_id)
            if st is not None and st.tasks.get(task_id, {}).get("state") in states:
                return
            time.sleep(1)
        raise AssertionError(f"{dag_id}.{task_id} of {run_id} never {state} within {timeout:g}s: "
                             f"{self.state(dag_id, run_id)}\n{self.logs()}")

    def task_log(self, dag_id: str, run_id: str, task_id: str) -> str:
        """Every attempt's log text of one task (from the log folder)."""
        root = self.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task_id}"
        return "\n".join(p.read_text(errors="replace") for p in sorted(root.rglob("*.log"))) if root.exists() else ""


def status_without_login(url: str) -> int:
    """The HTTP status ``url`` answers a request that carries no login (401 for a served report)."""
    try:
        with urllib.request.urlopen(url, timeout=60) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code
