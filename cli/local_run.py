"""Run a runbook DAG in-process with ``dag.test()``, answering its approval like a human would.

For the demo, tests and rehearsals on a laptop: :func:`configure_local_airflow` points Airflow at
a private ``AIRFLOW_HOME`` with a SQLite metadata DB and this repository's ``dags/`` folder (call
it before anything imports ``airflow``), :func:`set_connection` defines a connection through an
``AIRFLOW_CONN_<ID>`` variable in JSON form, and :func:`run_dag` runs one DAG run while a second
thread answers the human-in-the-loop task the way the UI's *Required actions* page does: it calls
the Core API's HITL response handler (``PATCH .../hitlDetails``) on the same metadata DB, which
records who answered and resumes the parked task. Everything that thread imports is imported
first on the calling thread (:func:`prepare_responder`): two threads importing Airflow at once
can deadlock on the import locks.

Example (what ``scripts/demo`` can call)::

    from cli.local_run import configure_local_airflow, set_connection, run_dag
    configure_local_airflow("/tmp/kr-airflow")
    set_connection("kafka_zk", {"conn_type": "kafka_zookeeper", "host": "127.0.0.1:2181",
                                "extra": {"chroot": "/kafka"}})
    set_connection("spark_local", {"conn_type": "spark", "host": "local[*]"})
    result = run_dag("decommission_brokers", {"zk_conn_id": "kafka_zk", "spark_conn_id": "spark_local",
                                              "brokers_to_remove": [4], "run_root": "/tmp/kr-runs"},
                     answer="Approve", approver="sre-on-call")
    print(result.state, result.run_folder)

Failure: when the approval task never parks within ``answer_timeout`` (an hour by default; the
answering thread also stops as soon as the run ends) it says so in :attr:`RunResult.answer_error`
(a run that never reaches the approval ends on its own; one that parks and is never answered
waits, as it would for a human). A DAG file that does
not import raises :class:`ImportError` naming it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from procedures.run_folder import RunFolder

REPO = Path(__file__).resolve().parent.parent


LOCAL_BUNDLE = "airflow.dag_processing.bundles.local.LocalDagBundle"


def runbook_bundles(home: Path, dags_folder: Path) -> str:
    """One DAG bundle per runbook file (``dag_bundle_config_list``), for ``dag.test()``.

    ``dag.test()`` re-parses and re-serializes every DAG of the bundle that owns the DAG on each call
    (Airflow 3.3; apache/airflow#64884), and serializing our 14 runbooks' Params validates each
    schema against JSON Schema's metaschema once per task: 16 s of a 49 s test run on a loaded
    machine, measured with cProfile (2026-11-26). With a bundle per runbook (a folder under ``home``
    holding a link to the one file) a run parses and serializes its own runbook only. The files are
    the repository's own; Airflow deployments keep the one ``dags/`` folder.
    """
    root = home / "runbook-bundles"
    bundles = []
    for path in sorted(dags_folder.glob("*.py")):
        if path.name == "__init__.py":
            continue
        folder = root / path.stem
        folder.mkdir(parents=True, exist_ok=True)
        link = folder / path.name
        try:
            link.symlink_to(path.resolve())
        except FileExistsError:          # made by an earlier call in this home (or a test's child)
            pass
        bundles.append({"name": f"runbook-{path.stem}", "classpath": LOCAL_BUNDLE,
                        "kwargs": {"path": str(folder), "refresh_interval": 0}})
    return json.dumps(bundles)


def local_airflow_env(home: str | os.PathLike, dags_folder: str | os.PathLike | None = None) -> dict[str, str]:
    """The environment variables of an in-process Airflow on SQLite in ``home`` (nothing imported
    but the runbook bundles' links created: :func:`runbook_bundles`)."""
    home = Path(home)
    folder = Path(dags_folder or REPO / "dags")
    return {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(folder),
        "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST": runbook_bundles(home, folder),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": os.environ.get("AIRFLOW__LOGGING__LOGGING_LEVEL", "INFO"),
    }


def configure_local_airflow(home: str | os.PathLike, dags_folder: str | os.PathLike | None = None) -> Path:
    """Set :func:`local_airflow_env` in ``os.environ`` and create the metadata DB. Returns the home."""
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    os.environ.update(local_airflow_env(home, dags_folder))
    from airflow.utils import db

    marker = home / ".initdb-done"      # not the DB file: an earlier DB access leaves an empty one
    if not marker.exists():
        db.initdb()
        marker.touch()
    return home


def set_connection(conn_id: str, conn: Mapping[str, Any]) -> None:
    """Define connection ``conn_id`` in JSON form (``AIRFLOW_CONN_<ID>``), e.g. conn_type/host/extra."""
    os.environ[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps(dict(conn))


class _Responder:
    """Minimal authenticated user, as the auth manager would hand to the API route."""

    def __init__(self, user: str) -> None:
        self.user = user

    def get_id(self) -> str:
        return self.user

    def get_name(self) -> str:
        return self.user


def answer_approval(dag_id: str, task_id: str, option: str, approver: str, timeout: float = 120.0,
                    after: float | None = None, stop: threading.Event | None = None,
                    delay: float = 0.0) -> str | None:
    """Wait until ``task_id`` of a run of ``dag_id`` awaits input, then answer ``option``.

    Records the response through the Core API's HITL handler (the Required-actions page's call).
    Returns the run id answered. ``after``: only runs started after this epoch time. ``delay``:
    answer this many seconds after the task started waiting (an approver who takes their time).
    """
    from sqlalchemy import select

    from airflow.api_fastapi.core_api.datamodels.hitl import UpdateHITLDetailPayload
    from airflow.api_fastapi.core_api.routes.public.hitl import update_hitl_detail
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from airflow.utils.state import TaskInstanceState

    deadline = time.monotonic() + timeout
    asked_at: float | None = None
    while time.monotonic() < deadline:
        if stop is not None and stop.is_set():
            return None             # the run ended without asking (e.g. a step before it failed)
        with create_session() as session:
            ti = session.scalar(select(TaskInstance).where(
                TaskInstance.dag_id == dag_id, TaskInstance.task_id == task_id,
                TaskInstance.state == TaskInstanceState.AWAITING_INPUT))
            if ti is not None and (after is None or ti.start_date is None or ti.start_date.timestamp() >= after):
                asked_at = asked_at if asked_at is not None else time.monotonic()
                if time.monotonic() - asked_at >= delay:
                    update_hitl_detail(dag_id=dag_id, dag_run_id=ti.run_id, task_id=task_id,
                                       update_hitl_detail_payload=UpdateHITLDetailPayload(chosen_options=[option]),
                                       user=_Responder(approver), session=session, map_index=ti.map_index)
                    answered = (ti.id, ti.run_id)
                    break
        time.sleep(0.3)
    else:
        raise TimeoutError(f"{dag_id}.{task_id} did not wait for input within {timeout:g}s")
    _see_the_answer_resume(*answered, deadline=deadline, stop=stop)
    return answered[1]


def _see_the_answer_resume(ti_id: Any, run_id: str, deadline: float, stop: threading.Event | None,
                           stranded_after: float = 3.0) -> None:
    """Wait until the answered task runs again (or the run ends); whenever it is parked in
    AWAITING_INPUT with its answer recorded for ``stranded_after`` seconds, resume it as the answer
    route does.

    SQLite has no row locks, so ``dag.test``'s own write of the parked state can land after the
    answer's resume and overwrite it (seen under load: the task went SCHEDULED, then back to
    AWAITING_INPUT with the answer recorded, and ``dag.test`` waited forever). On PostgreSQL or
    MySQL the route's row locks order the two writes; this only re-applies Airflow's own resume
    (``handle_event_submit``). A retry that asks again clears the recorded answer, so it is not
    resumed here.
    """
    from airflow.models.hitl import HITLDetail
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.trigger import handle_event_submit
    from airflow.triggers.base import TriggerEvent
    from airflow.utils.session import create_session
    from airflow.utils.state import TaskInstanceState

    parked_since: float | None = None
    while time.monotonic() < deadline and not (stop is not None and stop.is_set()):
        with create_session() as session:
            ti = session.get(TaskInstance, ti_id)
            if ti is None or ti.state not in (TaskInstanceState.AWAITING_INPUT, TaskInstanceState.SCHEDULED,
                                              TaskInstanceState.QUEUED):
                return                  # running the answer, or done
            if ti.state != TaskInstanceState.AWAITING_INPUT:
                parked_since = None
            else:
                parked_since = parked_since or time.monotonic()
                detail = session.get(HITLDetail, ti_id)
                if (detail is not None and detail.response_received
                        and time.monotonic() - parked_since >= stranded_after):
                    handle_event_submit(TriggerEvent(detail.as_resume_event_payload()), task_instance=ti,
                                        session=session)
                    parked_since = None
        time.sleep(0.3)


def prepare_responder() -> None:
    """Import, on the calling thread, everything :func:`answer_approval` and ``dag.test`` import.

    Under load the two threads once deadlocked: the main thread, in ``dag.test → clear →
    import_all_models``, waited on an import lock held by the responder thread, which was
    importing the Core API's routes (and, through them, models the main thread was importing).
    With every module imported and the ORM mappers configured before the responder starts, the
    two threads never import concurrently.
    """
    import airflow.api_fastapi.core_api.datamodels.hitl  # noqa: F401
    import airflow.api_fastapi.core_api.routes.public.hitl  # noqa: F401
    import airflow.models.hitl  # noqa: F401
    import airflow.models.taskinstance  # noqa: F401
    import airflow.models.trigger  # noqa: F401
    import airflow.triggers.base  # noqa: F401
    import airflow.utils.session  # noqa: F401
    import airflow.utils.state  # noqa: F401
    from airflow.models import import_all_models
    from sqlalchemy.orm import configure_mappers

    import_all_models()
    configure_mappers()


@dataclass
class RunResult:
    """One ``dag.test()`` run: its state, task states and run folder."""

    run_id: str
    state: str
    task_states: dict[str, str]
    run_folder: Path | None
    answered_by: str | None = None
    answer_error: str | None = None
    extra: dict = field(default_factory=dict)


def load_dag(dag_id: str):
    """A fresh DAG object from this repository's ``dags/<dag_id>.py``.

    Re-imported on every call: ``dag.test()`` runs tasks in this process, and resolving a run's
    params writes the run's conf into the DAG's ``Param`` objects, which would leak one run's conf
    (``dry_run``...) into the next run's defaults.
    """
    import importlib
    import sys

    name = f"dags.{dag_id}"
    module = importlib.reload(sys.modules[name]) if name in sys.modules else importlib.import_module(name)
    return module.dag


#: how long ``dag.test()`` waits between passes when no task is schedulable (Airflow: 1 s)
DAG_TEST_IDLE_POLL_S = 0.1
_real_sleep = time.sleep


def _sleep_shorter_in_dag_test(seconds: float) -> None:
    frame = sys._getframe(1)
    if frame.f_code.co_name == "test" and frame.f_code.co_filename.endswith("sdk/definitions/dag.py"):
        seconds = min(seconds, DAG_TEST_IDLE_POLL_S)
    _real_sleep(seconds)


def shorten_dag_test_idle_polls() -> None:
    """Cut ``dag.test()``'s own idle sleep from 1 s to :data:`DAG_TEST_IDLE_POLL_S` (its sleeps only).

    ``dag.test()`` (Airflow 3.3) sleeps 1 s in every pass that finds no task to run. After a task
    fails, each pass marks one more task of the chain below it ``upstream_failed``, so a run failing
    at its first of 15 tasks spent 11–14 s asleep (measured 2026-11-26: 11 sleeps); a parked
    approval is also re-read only once a second. The scheduler does not wait like this. Other
    callers of ``time.sleep`` (the emulator, kazoo, the tasks) are untouched: the caller's frame
    must be ``dag.test`` itself. Called by every :func:`run_dag` (installing it again changes nothing).
    """
    time.sleep = _sleep_shorter_in_dag_test


_checked_schemas: set[tuple[type, str]] = set()


def validate_checking_each_schema_once(instance: Any, schema: Any, cls: Any = None, *args: Any, **kwargs: Any) -> None:
    """``jsonschema.validate``, checking a given schema against its metaschema only the first time.

    ``jsonschema.validate`` re-checks the schema itself on every call, and Airflow's ``Param.resolve``
    calls it for every Param each time a DAG is serialized or its params are dumped: each
    ``dag.test()`` serializes the runbook at least twice (``reassign_partitions``: 20 Params on
    each of 13 tasks). Serializing it took 0.30 s CPU, 0.04 s with each schema checked once (the
    same serialized DAG), and the checks were 6.2 of 7.8 s profiled CPU of a whole run (2026-11-27). The
    outcome is the library's: the schema is checked (a bad one raises ``SchemaError`` every time,
    only schemas that passed are remembered, by class and canonical JSON), then the instance is
    validated and the best error raised, as ``jsonschema.validate`` does.
    """
    from jsonschema import exceptions, validators

    if cls is None:
        cls = validators.validator_for(schema)
    try:
        key = (cls, json.dumps(schema, sort_keys=True))
    except (TypeError, ValueError):         # not JSON: check it every time
        key = None
    if key is None or key not in _checked_schemas:
        cls.check_schema(schema)
        if key is not None:
            _checked_schemas.add(key)
    error = exceptions.best_match(cls(schema, *args, **kwargs).iter_errors(instance))
    if error is not None:
        raise error


def check_param_schemas_once() -> None:
    """Make ``jsonschema.validate`` (what ``Param.resolve`` looks up on each call) check each schema
    once in this process: :func:`validate_checking_each_schema_once`. Called by every
    :func:`run_dag` (installing it again changes nothing); modules that imported ``validate``
    themselves keep the library's own."""
    import jsonschema

    jsonschema.validate = validate_checking_each_schema_once


def sync_triggered_dags(dag) -> None:
    """Write the DAGs ``dag`` triggers (``TriggerDagRunOperator``) to the metadata DB, as the DAG
    processor has them in a deployment. ``dag.test()`` writes only the bundles it walks to find
    ``dag`` — with one bundle per runbook (:func:`runbook_bundles`), not a later one — so
    ``cluster_health``'s hand-off found ``preferred_leader_election`` only when an earlier run in the
    same process had written it (CI 2026-12-02: "Dag with dag_id … not found")."""
    targets = sorted({t.trigger_dag_id for t in dag.tasks
                      if isinstance(getattr(t, "trigger_dag_id", None), str) and "{{" not in t.trigger_dag_id})
    if not targets:
        return
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import BundleDagBag, sync_bag_to_db
    from airflow.models.dag_version import DagVersion

    manager = DagBundlesManager()
    manager.sync_bundles_to_db()
    bundles = {b.name: b for b in manager.get_all_dag_bundles()}
    for target in targets:
        bundle = bundles.get(f"runbook-{target}")
        if bundle is None or DagVersion.get_version(target) is not None:
            continue
        if not bundle.is_initialized:
            bundle.initialize()
        sync_bag_to_db(BundleDagBag(dag_folder=bundle.path, bundle_path=bundle.path, bundle_name=bundle.name),
                       bundle.name, bundle.version)


def run_dag(dag_id: str, conf: Mapping[str, Any], answer: str | None = None, approver: str = "sre-on-call",
            approval_task: str | Sequence[str] = "approve", answer_timeout: float = 3600.0, when=None,
            answer_delay: float = 0.0, mark_success: str | None = None) -> RunResult:
    """``dag.test(run_conf=conf)``; if ``answer`` ("Approve"/"Reject"), a thread gives it when asked
    (``answer_delay`` seconds after the approval started waiting; ``approval_task`` may name several
    approval tasks, answered in that order, each when it asks). ``dag.test`` records the run as
    triggered by ``dag_test``, so ``approver="dag_test"`` is the person who triggered it.

    ``when`` (a timezone-aware datetime) fixes the logical date and run-after time, hence the run id:
    running again with the same ``when`` replaces that run's task instances and re-runs it in the
    same run folder, as clearing the whole run in the UI does. ``mark_success`` (a regular expression of
    task ids) marks those tasks success without running them, as a person clicking "Mark as success".
    """

    dag = load_dag(dag_id)
    sync_triggered_dags(dag)
    shorten_dag_test_idle_polls()
    check_param_schemas_once()
    errors: list[str] = []
    started = time.time()
    # the responder waits as long as the run goes on (under load Spark may take many minutes
    # before the approval parks) and stops when the run ends
    finished = threading.Event()

    def respond() -> None:
        try:
            for task in [approval_task] if isinstance(approval_task, str) else list(approval_task):
                answer_approval(dag_id, task, answer, approver, answer_timeout, after=started - 1,
                                stop=finished, delay=answer_delay)
        except Exception as exc:  # noqa: BLE001 - reported in the result
            errors.append(f"{type(exc).__name__}: {exc}")

    thread = None
    if answer is not None:
        prepare_responder()
        thread = threading.Thread(target=respond, name=f"hitl-{answer}", daemon=True)
        thread.start()
    defaults = {k: dag.params.get_param(k).value for k in dag.params}  # fresh defaults (see load_dag)
    kwargs = {"run_conf": {**defaults, **dict(conf)}}
    if when is not None:
        kwargs.update(logical_date=when, run_after=when)
    if mark_success is not None:
        kwargs["mark_success_pattern"] = mark_success
    try:
        dr = dag.test(**kwargs)
    finally:
        finished.set()
    if thread is not None:
        thread.join(timeout=5)
    states = {ti.task_id: str(ti.state.value if hasattr(ti.state, "value") else ti.state)
              for ti in dr.get_task_instances()}
    run_root = kwargs["run_conf"].get("run_root")
    folder = RunFolder.for_run(run_root, dag_id, dr.run_id).root if run_root else None
    state = str(dr.state.value if hasattr(dr.state, "value") else dr.state)
    return RunResult(dr.run_id, state, states, folder, approver if answer else None,
                     errors[0] if errors else None)
