"""The plan step of the data-moving runbooks: the plan job, in a child process or ``spark-submit``.

:class:`SparkPlanOperator` is the step every reassignment runbook shares (throttle and limits
checked, ``plan_from`` copied or the plan job run, the plan hash returned); a runbook's subclass
names its plan operation and checks its own Params (:class:`DecommissionPlanOperator` here; the
others beside their DAGs' needs in :mod:`operators.plan.balance_ops`).

Where the job runs follows the Airflow Spark connection (:func:`spark_target`):

* ``local``/``local[N]`` (the default) or a Spark Connect server (``conn_type`` ``spark_connect``
  with host and port, or a ``spark`` host ``sc://host:port``): the job
  (``spark_jobs/plan_job.py``) runs as a child Python process of the task. It reads the snapshot
  in the driver with no JVM for clusters up to a measured size (:mod:`spark_jobs.engine`), else
  starts a local Spark session, or opens a session on the standing Connect server (no JVM per
  plan);
* a cluster master (``spark://``, ``yarn``, ``k8s://``): ``spark-submit`` (this class is a
  ``SparkSubmitOperator``), so the driver and executors run where the connection says.

Either way the job is a separate process: a crashed or killed plan never takes the worker (or
``dag.test()``'s process) with it, and the same file runs by hand. ``@task.pyspark`` would start
the Spark session inside the worker.

The connection must be given in JSON form, e.g.
``AIRFLOW_CONN_SPARK_LOCAL='{"conn_type": "spark", "host": "local[*]"}'`` (the URI form
``spark://local[2]`` made provider 6.3.4 submit with ``--master yarn``). ``spark-submit`` is
taken from the running interpreter's bin directory (the pyspark package installs it there),
else from ``PATH``; the driver and executors use the same interpreter.

Idempotent: a run folder that already holds a plan keeps it (its hash may already be approved).
``plan_from`` copies a plan made earlier (a rehearsal or dry run) instead of running Spark; the
guards still refuse it if the live cluster no longer matches it.

Before Spark starts (or a plan is copied), the Params are checked, each error naming the Param:
``brokers_to_remove`` against the snapshot's registered brokers (ids registered — or down but still
holding replicas: a dead broker, whose replicas are re-created from the surviving in-sync replicas —,
one broker left, no rack emptied unless ``allow_rack_removal``), the throttle as a LONG rate, and a ``plan_from``
plan (or one already in the run folder) must be a decommission of exactly ``brokers_to_remove``
(else a plan for broker 6 would run under an approval titled broker 5).

Failure: bad inputs raise :class:`InvalidInput` before Spark starts; a refused plan raises
:class:`InvalidInput` with the job's reason; a failing job fails the task with its exit code and
its output in the log.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import json

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from kafka_zk.errors import BrokerNotAvailable, InvalidInput
from procedures.run_folder import RunFolder
from kafka_zk.validation import check_brokers_to_remove, check_removal_against_cluster, parse_throttle
from operators.base import as_bool
from procedures.child_process import ChildJob
from operators.reports.links import PlanReportLink, RunReportsLink
from procedures.plan.removal import replace_pairs, snapshot_hosting
from procedures.plan.retiring import check_plan_avoids_retiring, excluded_lines, plan_input
from operators.runtime import run_folder
from planning.plan_folder.read import load_plan_artifacts

PLAN_JOB = Path(__file__).resolve().parents[2] / "spark_jobs" / "plan_job.py"


def local_plan_job(args: list[str], target: SparkTarget, log: Any) -> ChildJob:
    """The plan job with ``args`` as a child Python process of the task, on a local master or a
    Spark Connect server (:class:`procedures.child_process.ChildJob`: its output in the task log)."""
    argv = [str(PLAN_JOB), *args]
    argv += ["--remote", target.remote] if target.remote else ["--master", target.master or "local[*]"]
    return ChildJob(argv, log, "plan job")


def spark_submit_binary() -> str:
    """``spark-submit`` beside the running interpreter, else the one on ``PATH``."""
    beside = Path(sys.executable).parent / "spark-submit"
    if beside.is_file():
        return str(beside)
    found = shutil.which("spark-submit")
    if found:
        return found
    try:
        # imported here, not at module top: importing pyspark took 1.2-1.5 s (measured 2026-11-23 on the
        # 2-core CI machine), every DAG parse would pay it, and only this fallback needs it
        import pyspark
        in_pkg = Path(pyspark.__file__).parent / "bin" / "spark-submit"
        if in_pkg.is_file():
            return str(in_pkg)
    except ImportError:
        pass
    raise InvalidInput("spark-submit not found: install pyspark in the Airflow environment or put "
                       "spark-submit on PATH")


@dataclass(frozen=True)
class SparkTarget:
    """Where the Spark connection says plans run: a local master, a Spark Connect server, or a
    cluster master (the only case that goes through ``spark-submit``)."""

    master: str | None = None       # "local[N]" (in-process JVM when Spark is needed) or a cluster URL
    remote: str | None = None       # sc://host:port

    @property
    def submit(self) -> bool:
        return self.remote is None and not (self.master or "").startswith("local")


def spark_target(conn_id: str) -> SparkTarget:
    """Read the Airflow connection: ``spark_connect`` (host, port; the provider's type), or ``spark``
    whose host is ``local``/``local[N]``, ``sc://host:port``, or a cluster master."""
    from airflow.sdk import BaseHook

    conn = BaseHook.get_connection(conn_id)
    host = (conn.host or "").strip()
    if conn.conn_type == "spark_connect" or host.startswith("sc://"):
        bare = host.removeprefix("sc://").rstrip("/")
        if not bare:
            raise InvalidInput(f"Spark connection {conn_id}: a Spark Connect connection needs a host (the "
                               "server's name), e.g. host=spark-connect port=15002")
        port = conn.port or (None if ":" in bare else 15002)
        return SparkTarget(remote=f"sc://{bare}" + (f":{port}" if port else ""))
    if host == "local" or host.startswith("local["):
        return SparkTarget(master=host)
    return SparkTarget(master=host or None)


def snapshot_racks(path: Path) -> dict[int, str | None]:
    """Registered brokers (id → rack) from a snapshot file's broker lines, which come before any
    topic line: read without loading the partitions."""
    racks: dict[int, str | None] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            if doc.get("kind") == "broker":
                racks[int(doc["id"])] = doc.get("rack")
            elif doc.get("kind") in ("topic", "partition"):
                break
    return racks


def read_plan_summary(plan_dir: Path, origin: str, operation: str) -> dict:
    """``plan_dir``'s summary.json, refused (naming ``origin``) when it is not a plan of ``operation``."""
    try:
        summary = json.loads((plan_dir / "summary.json").read_text(encoding="utf-8"))
        planned_op = summary["operation"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InvalidInput(f"{origin}: {plan_dir} has no readable summary.json ({type(exc).__name__}); give the "
                           f"plan/ folder of an earlier {operation} run") from None
    if planned_op != operation:
        raise InvalidInput(f"{origin}: that plan is a {planned_op}, this runbook runs a {operation}; give the plan/ "
                           f"folder of an earlier {operation} run, or leave plan_from empty to plan now")
    return summary


def check_plan_matches(plan_dir: Path, brokers: list[int], origin: str) -> None:
    """The plan in ``plan_dir`` is a decommission of exactly ``brokers`` (its summary.json says)."""
    try:
        summary = json.loads((plan_dir / "summary.json").read_text(encoding="utf-8"))
        operation, planned = summary["operation"], sorted(int(b) for b in summary["removed_brokers"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InvalidInput(f"{origin}: {plan_dir} has no readable summary.json ({type(exc).__name__}); give the "
                           "plan/ folder of an earlier decommission run") from None
    if operation != "decommission" or planned != sorted(brokers):
        raise InvalidInput(f"{origin}: that plan is a {operation} of broker(s) {planned}, but this run's "
                           f"brokers_to_remove={sorted(brokers)}; set brokers_to_remove={planned} to run that "
                           "plan, or leave plan_from empty to plan for the brokers given")


class SparkPlanOperator(SparkSubmitOperator):
    """The plan step of a data-moving runbook: checks, then ``plan_job.py --op <operation>``.

    A subclass says what differs: :attr:`operation` (a key of ``spark_jobs.operations``),
    :meth:`check_inputs` (its Params against the snapshot, before Spark; returns what the step
    returns besides the plan hash), :meth:`job_args` (its own plan-job flags) and
    :meth:`check_plan_matches` (a plan copied with ``plan_from``, or one already in the run folder,
    must be a plan of this run's Params). The shared Params (throttle, moves per broker, sizes,
    capacity, ``plan_from``) are handled here.
    """

    operator_extra_links = (PlanReportLink(), RunReportsLink())

    operation: str = ""
    template_fields: Sequence[str] = (*SparkSubmitOperator.template_fields, "spark_conn_id", "run_root",
                                      "throttle_bytes_per_sec", "max_moves_per_broker", "plan_from", "seed",
                                      "allow_extra_moves")

    def __init__(self, *, spark_conn_id: str, run_root: str, throttle_bytes_per_sec: Any = None,
                 max_moves_per_broker: Any = None, plan_from: str | None = None, seed: Any = 0,
                 allow_extra_moves: Any = False, **kwargs: Any) -> None:
        kwargs.setdefault("application", str(PLAN_JOB))
        kwargs.setdefault("name", "kafka-runbooks-plan")
        kwargs.setdefault("conf", {"spark.ui.enabled": "false"})
        kwargs.setdefault("env_vars", {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable})
        super().__init__(**kwargs)
        self.spark_conn_id = spark_conn_id
        self.run_root = run_root
        self.throttle_bytes_per_sec = throttle_bytes_per_sec
        self.max_moves_per_broker = max_moves_per_broker
        self.plan_from = plan_from
        self.seed = seed
        self.allow_extra_moves = allow_extra_moves

    # -- what a runbook says ------------------------------------------------------------------

    def check_inputs(self, folder: RunFolder) -> dict:
        """Check this runbook's Params (naming each) before Spark; return extra result values."""
        return {}

    def job_args(self) -> list[str]:
        """This runbook's plan-job flags besides ``--snapshot/--op/--out/--seed`` and the shared ones."""
        return []

    def removing(self) -> list[int]:
        """Brokers this plan drains (they may be retiring and still hold replicas); none by default."""
        return []

    def check_plan_matches(self, plan_dir: Path, origin: str) -> None:
        """Refuse (:class:`InvalidInput` naming ``origin``) a plan that is not this run's."""
        read_plan_summary(plan_dir, origin, self.operation)

    # -- the step ------------------------------------------------------------------------------

    def execute(self, context: Any) -> dict:
        folder = run_folder(context, self.run_root)
        extra = self.check_inputs(folder)
        throttle = None
        if self.throttle_bytes_per_sec not in (None, ""):
            throttle = parse_throttle(self.throttle_bytes_per_sec, "throttle_bytes_per_sec")
        if (folder.plan_dir / "plan.json").is_file():
            self.check_plan_matches(folder.plan_dir, f"the plan already in {folder.plan_dir}")
            self.log.info("plan already in %s (run cleared or retried): keeping it", folder.plan_dir)
        elif self.plan_from:
            src = Path(self.plan_from)
            if not (src / "plan.json").is_file():
                raise InvalidInput(f"plan_from={src}: no plan.json there; give the plan/ folder of an earlier "
                                   "run, or leave plan_from empty to plan now")
            self.check_plan_matches(src, f"plan_from={src}")
            shutil.copytree(src, folder.plan_dir)
            self.log.info("plan copied from %s (no Spark run)", src)
        else:
            self._run_job(context, folder, throttle)
        plan = load_plan_artifacts(str(folder.plan_dir))
        check_plan_avoids_retiring(folder, dict(plan.target))    # also a plan handed over with plan_from
        digest = plan.plan_hash
        self.log.info("plan hash %s", digest)
        return {"plan_dir": str(folder.plan_dir), "plan_hash": digest, **extra}

    def _run_job(self, context: Any, folder: RunFolder, throttle: int | None) -> None:
        if not folder.snapshot.is_file():
            raise InvalidInput(f"{folder.snapshot} is missing: the snapshot task must run first")
        snapshot = plan_input(folder, self.removing())     # without the retiring brokers (procedures/plan/retiring.py)
        if snapshot != folder.snapshot:
            self.log.info("excluded as destinations: %s", "; ".join(excluded_lines(folder, self.removing())))
        args = ["--snapshot", str(snapshot), "--op", self.operation, *self.job_args(),
                "--out", str(folder.plan_dir), "--seed", str(int(self.seed or 0))]
        if folder.partition_sizes.is_file():    # what the snapshot step writes
            args += ["--sizes", str(folder.partition_sizes)]
        elif folder.sizes.is_file():            # a run folder from before sizes.jsonl existed
            args += ["--sizes", str(folder.sizes)]
        if folder.capacity.is_file():           # written by the snapshot step
            args += ["--capacity", str(folder.capacity)]
            if as_bool(self.allow_extra_moves):
                args.append("--allow-extra-moves")
        if throttle is not None:
            args += ["--throttle", str(throttle)]
        if self.max_moves_per_broker not in (None, "", "None"):     # unset (the default): no cap
            moves = int(self.max_moves_per_broker)
            if moves <= 0:
                raise InvalidInput(f"max_moves_per_broker={moves}: give a positive number of moves")
            args += ["--max-moves-per-broker", str(moves)]
        refusal = folder.root / "plan_refused.txt"
        refusal.unlink(missing_ok=True)
        args += ["--refusal-file", str(refusal)]
        target = spark_target(self.spark_conn_id)
        try:
            if target.submit:
                self._submit(context, args)
            else:
                self._run_here(args, target)
        except Exception:
            if refusal.is_file():       # the job refused the plan: say why, not "exit code 1"
                raise InvalidInput(f"plan refused: {refusal.read_text(encoding='utf-8').strip()}") from None
            raise
        if not (folder.plan_dir / "plan.json").is_file():
            raise InvalidInput(f"the plan job finished without writing {folder.plan_dir}/plan.json; "
                               "see the plan job's output above")

    def _submit(self, context: Any, args: list[str]) -> None:
        """A cluster master: ``spark-submit`` the job there (the driver where the connection says)."""
        self.application_args = args
        self._conn_id = self.spark_conn_id
        self.conf = dict(self.conf or {})
        if not self._spark_binary:
            self._spark_binary = spark_submit_binary()
        self._hook = None
        super().execute(context)

    def _run_here(self, args: list[str], target: SparkTarget) -> None:
        """A local master or a Spark Connect server: the job runs as a child Python process (a crash
        never takes the worker), reads small inputs in the driver with no JVM at all, and starts a
        local session or opens one on the server only when Spark is worth it (spark_jobs.engine)."""
        self._job = local_plan_job(args, target, self.log)
        code = self._job.run()
        if code != 0:
            raise RuntimeError(f"the plan job exited with code {code}; see its output above")

    def on_kill(self) -> None:
        job = getattr(self, "_job", None)
        if job is not None and job.terminate():
            return
        if getattr(self, "_hook", None) is not None:
            super().on_kill()


class DecommissionPlanOperator(SparkPlanOperator):
    """Plan the decommission of ``brokers_to_remove`` from the run's snapshot into ``plan/``; with
    ``replace_with``, the replacement of each by its new broker (``--op replace``: the new broker
    takes exactly the old one's replicas, in its position of each list)."""

    operation = "decommission"
    template_fields: Sequence[str] = (*SparkPlanOperator.template_fields, "brokers_to_remove", "allow_rack_removal",
                                      "replace_with")

    def __init__(self, *, brokers_to_remove: Any, allow_rack_removal: Any = False, replace_with: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.brokers_to_remove = brokers_to_remove
        self.allow_rack_removal = allow_rack_removal
        self.replace_with = replace_with

    def check_inputs(self, folder: RunFolder) -> dict:
        brokers = check_brokers_to_remove(self.brokers_to_remove)
        pairs = replace_pairs(self.brokers_to_remove, self.replace_with)
        self.operation = "replace" if pairs else "decommission"
        dead: dict[int, int] = {}
        if folder.snapshot.is_file():
            racks = snapshot_racks(folder.snapshot)
            dead = snapshot_hosting(folder.snapshot, [b for b in brokers if b not in racks])
            check_removal_against_cluster(brokers, racks, as_bool(self.allow_rack_removal) or bool(pairs),
                                          hosting=dead)
            missing = sorted(n for n in pairs.values() if n not in racks)
            if missing:
                raise BrokerNotAvailable(
                    f"replace_with={list(pairs.values())}: new broker(s) {missing} are not registered under "
                    f"/brokers/ids (registered: {sorted(racks)}); start the new broker first: it must be up to "
                    "receive the replicas")
            for b, n in sorted(dead.items()):
                self.log.info("broker %d is down (not registered) and holds %d replica(s): they are re-created "
                              "from the surviving in-sync replicas", b, n)
        out = {"brokers_to_remove": brokers, "dead_brokers": sorted(dead)}
        if pairs:
            out["replace"] = {str(o): n for o, n in pairs.items()}
        return out

    def job_args(self) -> list[str]:
        pairs = replace_pairs(self.brokers_to_remove, self.replace_with)
        if pairs:
            return ["--brokers", ",".join(map(str, pairs)), "--replace-with", ",".join(map(str, pairs.values()))]
        return ["--brokers", ",".join(str(b) for b in check_brokers_to_remove(self.brokers_to_remove))]

    def removing(self) -> list[int]:
        return check_brokers_to_remove(self.brokers_to_remove)

    def check_plan_matches(self, plan_dir: Path, origin: str) -> None:
        pairs = replace_pairs(self.brokers_to_remove, self.replace_with)
        if not pairs:
            check_plan_matches(plan_dir, check_brokers_to_remove(self.brokers_to_remove), origin)
            return
        summary = read_plan_summary(plan_dir, origin, "replace")
        want = ",".join(f"{o}:{n}" for o, n in sorted(pairs.items()))
        got = str((summary.get("params") or {}).get("replace") or "")
        if got != want:
            raise InvalidInput(f"{origin}: that plan replaces {got or 'nothing'}, but this run's brokers_to_remove/"
                               f"replace_with say {want}; give the same brokers, or leave plan_from empty to plan now")
