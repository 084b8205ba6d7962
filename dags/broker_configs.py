"""broker_configs: make the dynamic broker config overrides match a declarative spec, approved.

What ``kafka-configs.sh --zookeeper --entity-type brokers --alter`` does by hand, made safe: per
broker id and for the cluster-wide default (``/config/brokers/<default>``), keys set and deleted.
Steps (task ids): diff → approve → window → apply → verify → final_report → notify (the window and
notify gates from :func:`operators.batches.runbook.gated`). Operators:
``operators/runbooks/broker_configs.py``; the procedure: ``procedures/broker_configs/``. Artifacts
in the run folder: ``broker_config_spec.yaml``, ``broker_config_diff.json`` / ``.md`` (the plan
report), ``approval_broker_configs.json``, ``applied.json``, ``verify.json``, the final report.
The SRE guide (the DAG's ``doc_md``) is ``docs/runbooks/broker_configs.md``.

Failure: a malformed spec, a key Kafka 2.4 cannot change dynamically (or a throttle, a security
key, a per-broker key at the default), a bad value or an unregistered broker id stops the run
before any write; a diff gone stale before apply is refused; ``verify`` fails when the overrides
do not read back as the spec says within ``verify_timeout_s``.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.batches.runbook import gate_params, gated
from operators.guides import runbook_guide
from operators.runbook_dag import ZK_STEP_ARGS, run_root_param, runbook_dag, zk_conn_param
from operators.runbooks.broker_configs import (ApplyBrokerConfigsOperator, BrokerConfigDiffOperator,
                                               BrokerConfigsApprovalOperator, BrokerConfigsReportOperator,
                                               VerifyBrokerConfigsOperator)

DAG_ID = "broker_configs"

DOC_MD = runbook_guide(DAG_ID)

PARAMS = {
    "zk_conn_id": zk_conn_param(),
    "spec": Param(None, type=["null", "string"],
                  description="The broker config spec, YAML (brokers: {<id> or default: {set: {key: value}, "
                              "delete: [key]}}); or leave empty and give spec_file"),
    "spec_file": Param(None, type=["null", "string"],
                       description="Path to the broker config spec YAML, as seen from the worker (instead of spec)"),
    "dry_run": Param(False, type="boolean", description="Diff, approve and plan every write (audit log); write nothing"),
    "verify_timeout_s": Param(60, type="integer", minimum=1,
                              description="Seconds to wait for the overrides to read back as the spec says"),
    "run_root": run_root_param(),
}

with runbook_dag(DAG_ID, "Set and delete dynamic broker config overrides from a declarative spec, approved",
                 gate_params(PARAMS, DAG_ID), DOC_MD) as dag:
    diff = BrokerConfigDiffOperator(task_id="diff", spec="{{ params.spec }}", spec_file="{{ params.spec_file }}",
                                    **ZK_STEP_ARGS)
    approve = BrokerConfigsApprovalOperator(task_id="approve", run_root="{{ params.run_root }}",
                                            zk_conn_id="{{ params.zk_conn_id }}", dry_run="{{ params.dry_run }}")
    apply = ApplyBrokerConfigsOperator(task_id="apply", trigger_rule="none_failed", **ZK_STEP_ARGS)
    verify = VerifyBrokerConfigsOperator(task_id="verify", timeout_s="{{ params.verify_timeout_s }}", **ZK_STEP_ARGS)
    report = BrokerConfigsReportOperator(task_id="final_report", trigger_rule="all_done", **ZK_STEP_ARGS)
    gated([diff, approve, apply, verify, report], first_write=apply, what="the broker config changes",
          needed="{{ not ti.xcom_pull(task_ids='diff')['writes_nothing'] }}")
