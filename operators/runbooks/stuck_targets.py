"""Where the stuck_reassignment runbook's rewrite targets come from: the plan job, launched like every plan.

A partition stuck on a target broker that is gone for good gets a registered broker in its place,
chosen by the planners' one placer (issue 25: one placer, in ``planning/kernels``). ``operators``
never imports the planners: :func:`plan_replacement_targets` saves the snapshot the diagnosis read
as the run's ``snapshot.jsonl``, runs ``spark_jobs/plan_job.py --op replace-dead-targets`` as a child
process of the task (:func:`operators.plan.step.local_plan_job`; in the driver, no JVM, for all but
very large clusters) on that snapshot without the cluster's retiring brokers (noted by the diagnose
step, :mod:`procedures.plan.retiring`: a decommission's brokers are never put in place of a dead one), and
reads the hash-checked plan folder (``replacements/``) back through
:func:`planning.plan_folder.read.load_plan_artifacts` (:func:`planned_replacements`), as the lookup
:func:`kafka_zk.admin.stuck_fixes.choose_fixes` takes.

Failure: :class:`InvalidInput` when the job fails (its refusal, or its exit code), when the folder
holds another operation's plan, or — raised by the lookup — for a partition no registered broker
can take (the placer's own text, from the plan's notes);
:class:`procedures.child_process.ChildTimedOut` past :data:`PLAN_JOB_TIMEOUT_S`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

from kafka_zk.admin.stuck_fixes import Rewrite
from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidInput
from planning.plan_folder.read import load_plan_artifacts
from kafka_zk.retiring import exclude_from_snapshot
from formats.snapshot_file import write_snapshot
from procedures.child_process import ChildJob
from procedures.plan.retiring import PLAN_INPUT, run_retiring
from operators.plan.step import SparkTarget, local_plan_job

REPLACEMENTS = "replacements"       # the plan job's replace-dead-targets plan folder, in the run folder
REPLACEMENT_OPERATION = "replace-dead-targets"
#: the plan job reads a snapshot of the whole cluster; on a large one Spark starts (a few seconds)
PLAN_JOB_TIMEOUT_S = 900.0


def planned_replacements(plan_dir: Path) -> Rewrite:
    """The rewrite targets the plan job wrote in ``plan_dir`` (hash-checked), as the lookup
    :func:`kafka_zk.admin.stuck_fixes.choose_fixes` takes: a partition the job could not place
    raises its refusal (:class:`InvalidInput`, the placer's text from the plan's notes)."""

    plan = load_plan_artifacts(str(plan_dir))
    if plan.operation != REPLACEMENT_OPERATION:
        raise InvalidInput(f"{plan_dir} holds a {plan.operation} plan, not the {REPLACEMENT_OPERATION} plan of "
                           "this diagnosis; clear the diagnose task to plan it again")
    notes = json.loads(Path(plan.summary_path).read_text(encoding="utf-8")).get("notes") or []

    def lookup(_snapshot, stuck: list) -> dict[TopicPartition, tuple[int, ...]]:
        out = {}
        for s in stuck:
            if s.tp not in plan.target:
                refusal = next((n for n in notes if n.startswith(f"{s.tp}: ")), None)
                raise InvalidInput(refusal or f"{s.tp}: the {REPLACEMENT_OPERATION} plan in {plan_dir} has no target "
                                              "for it; clear the diagnose task to plan it again")
            out[s.tp] = tuple(plan.target[s.tp])
        return out

    return lookup


def plan_replacement_targets(folder, snap, log: Any, hold: Callable[[ChildJob], None] = lambda job: None) -> Rewrite:
    """Run the plan job's ``replace-dead-targets`` operation on ``snap`` (saved as the run's
    ``snapshot.jsonl``) as a child process, like every runbook's plan step, and return its targets
    (:func:`planned_replacements`). The placement is the planners' (one placer, issue 25);
    ``operators`` only launches the job and reads its plan folder. ``hold`` gets the job before it
    starts (an operator's ``on_kill`` stops it)."""

    write_snapshot(snap, str(folder.snapshot))
    snapshot = folder.snapshot
    retiring = run_retiring(folder)         # noted by the diagnose step: never a broker in place of a dead one
    if retiring:
        snapshot = exclude_from_snapshot(folder.snapshot, folder.root / PLAN_INPUT, retiring,
                                         refuse_held=False).snapshot
        log.info("retiring brokers, not chosen in place of a dead one: %s", sorted(retiring))
    out = folder.root / REPLACEMENTS
    shutil.rmtree(out, ignore_errors=True)          # a cleared diagnose: plan for the cluster as it is now
    refusal = folder.root / "plan_refused.txt"
    refusal.unlink(missing_ok=True)
    job = local_plan_job(["--snapshot", str(snapshot), "--op", REPLACEMENT_OPERATION, "--out", str(out),
                          "--refusal-file", str(refusal)], SparkTarget(master="local[*]"), log)
    hold(job)
    code = job.run(PLAN_JOB_TIMEOUT_S)
    if code != 0:
        why = refusal.read_text(encoding="utf-8").strip() if refusal.is_file() else "see its output above"
        raise InvalidInput(f"the plan job ({REPLACEMENT_OPERATION}) failed with exit code {code}: {why}")
    return planned_replacements(out)
