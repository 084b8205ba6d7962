"""What every runbook DAG shares: its DAG settings and the Params every runbook takes.

``runbook_dag`` builds the DAG the same way for each runbook (manual or scheduled, no catch-up,
one run at a time, Params rendered as native objects, doc_md shown in the UI, and every task
first checking that the run's conf holds only Params — :mod:`operators.approval.conf_check` — and noting a
retry in the run folder — :mod:`procedures.reports.history`; a task that fails records why in the run folder,
the cause of the run's outcome — :func:`operators.reports.outcome.record_failure`); the Param
factories give the cluster connection, the run root and the pre-approval switch one definition.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Iterable, Mapping

from airflow.sdk import DAG, Param

from procedures.run_folder import default_run_root
from operators.approval.conf_check import check_conf_keys
from operators.param_check import check_run_params
from procedures.reports.history import record_retry
from operators.reports.outcome import record_failure

DEFAULT_RUN_ROOT = default_run_root()


def zk_conn_param() -> Param:
    return Param("kafka_zookeeper_default", type="string", minLength=1,
                 description="Airflow connection (type kafka_zookeeper) of the cluster's ZooKeeper, with chroot")


def broker_ids_param(description: str, example: str = "4, 5") -> Param:
    """A required list of broker ids that the trigger form shows as a one-line text field.

    Airflow 3.3's form edits an integer array in a JSON editor that re-formats the text each time
    it parses and moves the cursor (typing ``[5]`` over the selected ``[]`` gives ``[\\n  []\\n]5]``);
    a Param that may be an array *or* a string is shown as a plain text field instead, where a
    person types ``4, 5`` (or ``[4, 5]``). The REST API and the CLI still pass ``[4, 5]``; the
    steps accept both forms. The schema checks only the form; the ids themselves (canonical, 0..2^31-1,
    none twice) are read by :func:`kafka_zk.validation.parse_broker_ids` before the run's first task
    (:mod:`operators.param_check`), with the text the CLI gives for the same value."""
    return Param([], type=["array", "string"], items={"type": "integer"}, minItems=1,
                 description=f"{description}: type the ids separated by commas, e.g. {example}")


def topics_param(description: str) -> Param:
    """A required list of topic names; the form shows one per line (the REST API takes a JSON list)."""
    return Param([], type="array", items={"type": "string"}, minItems=1,
                 description=f"{description}, one per line (a JSON list through the REST API)")


def ids_text(expr: str) -> str:
    """Jinja for a broker-id Param as ``4, 5`` whether it was given as a list or as text."""
    return f"{{{{ {expr} if {expr} is string else {expr} | join(', ') }}}}"


def run_root_param(what: str = "artifacts, audit, reports") -> Param:
    return Param(DEFAULT_RUN_ROOT, type="string", minLength=1,
                 description=f"Directory under which each run's folder ({what}) is made")


def allows_null(schema: Mapping[str, Any]) -> bool:
    """Whether a Param's schema lets it be empty (no ``type``, or one that includes ``null``)."""
    kind = schema.get("type")
    return kind is None or kind == "null" or (isinstance(kind, list) and "null" in kind)


def has_usable_default(param: Param) -> bool:
    """A default that is a value the Param accepts (``[]`` for a list that needs an item is not)."""
    if param.value is None or param.value is ...:
        return False
    try:
        param.resolve(param.value)
    except Exception:                      # ParamValidationError: the default is a placeholder
        return False
    return True


def optional_when_defaulted(params: Mapping[str, Any]) -> tuple[dict[str, Any], frozenset[str]]:
    """The Params with every one that has a usable default made optional in the trigger form, and
    their names.

    Airflow 3.3.2's form stars a Param as required whenever its schema has a ``type`` without
    ``null`` — a default does not count (the UI's ``isRequired``: ``!!schema.type && (!Array.isArray
    (schema.type) || !schema.type.includes("null"))``). So each Param with a usable default gets
    ``null`` added to its type; a person who clears the field submits ``null``, which the run's first
    task refuses naming the Param and its default (:func:`operators.approval.conf_check.check_conf_keys`;
    an ``enum`` keeps its values, so Airflow refuses ``null`` there at the trigger)."""
    out: dict[str, Any] = {}
    widened = set()
    for name, param in params.items():
        if isinstance(param, Param) and not allows_null(param.schema) and has_usable_default(param):
            schema = dict(param.schema)
            kind = schema["type"]
            schema["type"] = [*(kind if isinstance(kind, list) else [kind]), "null"]
            out[name] = Param(param.value, description=param.description, schema=schema)
            widened.add(name)
        else:
            out[name] = param
    return out, frozenset(widened)


def before_each_task(context: Any) -> None:
    """The ``pre_execute`` hook of every runbook task: refuse a conf key that is not a Param or a Param
    value its parser refuses (:mod:`operators.param_check`), note a retry."""
    check_conf_keys(context)
    check_run_params(context)
    record_retry(context)


# what every ZooKeeper-writing step of a runbook takes from the trigger form
ZK_STEP_ARGS = dict(zk_conn_id="{{ params.zk_conn_id }}", run_root="{{ params.run_root }}",
                    dry_run="{{ params.dry_run }}")


def runbook_dag(dag_id: str, description: str, params: dict[str, Any], doc_md: str,
                schedule: timedelta | str | None = None, tags: Iterable[str] = ()) -> DAG:
    """The DAG of one runbook, with the settings every runbook shares (a Param with a usable default
    is optional in the trigger form: :func:`optional_when_defaulted`)."""
    params, defaulted = optional_when_defaulted(params)
    dag = DAG(dag_id=dag_id, description=description, schedule=schedule,
              start_date=datetime(2024, 1, 1), catchup=False, max_active_runs=1, params=params,
              render_template_as_native_obj=True, doc_md=doc_md,
              default_args={"pre_execute": before_each_task, "on_failure_callback": record_failure},
              tags=["kafka", "runbook", "zookeeper", *tags])
    dag.never_empty_params = defaulted      # read by check_conf_keys: these Params refuse null
    return dag
