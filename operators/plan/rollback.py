"""The plan step of the rollback runbook (a SparkPlanOperator, ``--op rollback``).

``from_run`` names the run folder of an earlier data-moving run (finished, failed or stopped), as
a path or as ``<dag_id>/<run id>`` under ``run_root``;
its ``plan/`` must hold ``rollback.json`` and a ``plan.json`` that still matches its hash. Or
``rollback_json`` gives an assignment to restore in Kafka's reassignment format (e.g. a
``rollback.json`` kept elsewhere, or what ``kafka-reassign-partitions --generate`` printed as the
current assignment). Exactly one of the two. The kernel (``planning/kernels/rollback.py``)
restores only what the run changed and nobody changed since; the rest is listed in the report.
The brokers the undone run recorded as retiring (a decommission's) are not excluded from this
plan, and are released from the retiring-brokers file when the rollback is approved
(:func:`procedures.plan.retiring.forget_restored`).

Failure: :class:`InvalidInput` naming the Param and the fix, before Spark and before any write.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from kafka_zk.codecs import decode_reassignment_file
from kafka_zk.errors import InvalidInput, InvalidPayload
from procedures.run_folder import RunFolder
from procedures.plan.retiring import forget_restored
from operators.plan.step import SparkPlanOperator, read_plan_summary

USER_JSON = "rollback_input.json"


def _given(value: Any) -> bool:
    return value not in (None, "", "None") and not (isinstance(value, str) and not value.strip())


class RollbackPlanOperator(SparkPlanOperator):
    """Plan restoring what an earlier run recorded (see module docstring)."""

    operation = "rollback"
    template_fields: Sequence[str] = (*SparkPlanOperator.template_fields, "from_run", "rollback_json")

    def __init__(self, *, from_run: Any = None, rollback_json: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.from_run = from_run
        self.rollback_json = rollback_json
        self._source_args: list[str] = []

    def _run_path(self) -> Path:
        """``from_run`` as given, or ``<dag_id>/<run id>`` under this run's ``run_root`` when relative
        and not a folder as given (the run id as Airflow shows it or as its folder name)."""
        given = str(self.from_run).strip()
        run = Path(given)
        if run.is_absolute() or run.exists() or "/" not in given.strip("/"):
            return run
        dag_id, run_id = given.strip("/").split("/", 1)
        return RunFolder.for_run(str(self.run_root), dag_id, run_id).root

    def _plan_dir(self) -> Path:
        run = self._run_path()
        plan_dir = run if (run / "plan.json").is_file() else run / "plan"
        for name in ("plan.json", "rollback.json"):
            if not (plan_dir / name).is_file():
                raise InvalidInput(f"from_run={run}: no {name} in {plan_dir}; give the run folder of a data-moving "
                                   "run (<run_root>/<dag_id>/<run id>), which holds plan/rollback.json")
        return plan_dir

    def check_inputs(self, folder: RunFolder) -> dict:
        has_run, has_json = _given(self.from_run), _given(self.rollback_json)
        if has_run == has_json:
            raise InvalidInput("give exactly one of from_run (the run folder to undo) and rollback_json (an "
                               "assignment in Kafka's reassignment format)")
        if has_run:
            plan_dir = self._plan_dir()
            if plan_dir.resolve() == folder.plan_dir.resolve():
                raise InvalidInput(f"from_run={self.from_run} is this rollback run itself; name the run to undo")
            self._source_args = ["--rollback-from", str(plan_dir)]
            restored = forget_restored(folder, plan_dir.parent)   # released from the file when approved
            if restored:
                self.log.info("brokers %s, recorded as retiring by %s, are not excluded from this rollback's plan",
                              restored, plan_dir.parent)
            return {"from_run": str(plan_dir.parent.resolve())}
        text = self.rollback_json if isinstance(self.rollback_json, str) else json.dumps(self.rollback_json)
        try:
            entries = decode_reassignment_file(text)
        except InvalidPayload as e:
            raise InvalidInput(f"rollback_json: {e}") from None
        folder.root.mkdir(parents=True, exist_ok=True)
        (folder.root / USER_JSON).write_text(text, encoding="utf-8")
        self._source_args = ["--reassignment-json-file", str(folder.root / USER_JSON)]
        return {"entries": len(entries)}

    def job_args(self) -> list[str]:
        if not self._source_args:
            raise InvalidInput("rollback: the source was not checked before the plan job (internal order)")
        return list(self._source_args)

    def check_plan_matches(self, plan_dir: Path, origin: str) -> None:
        read_plan_summary(plan_dir, origin, self.operation)
