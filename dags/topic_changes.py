"""topic_changes: approval-gated topic administration from a declarative spec.

Steps (task ids): diff → approve → window → apply → verify → final_report → notify (the window and
notify gates from :func:`operators.batches.runbook.gated`). Operators:
``operators/runbooks/topic_changes.py``; the spec: ``operators/plan/topic_spec.py``; the diff:
``operators/plan/topic_diff.py``.

Failure: a malformed spec, a refused change (fewer partitions, an unsafe deletion, …) or a stale
diff stops the run before any write; ``verify`` fails when the brokers' view does not show the
changes within ``verify_timeout_s``.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.batches.runbook import gate_params, gated
from operators.runbook_dag import ZK_STEP_ARGS, run_root_param, runbook_dag, zk_conn_param
from operators.runbooks.topic_changes import (ApplyTopicChangesOperator, TopicChangesApprovalOperator,
                                     TopicChangesReportOperator, TopicDiffOperator, VerifyTopicChangesOperator)

DAG_ID = "topic_changes"

DOC_MD = """
# Topic changes from a spec (Kafka in ZooKeeper mode)

**When to use**: topics are declared in a file (YAML, under version control) — partitions,
replication factor, config overrides — and the cluster should match it, with an approval in
between, instead of a series of `kafka-topics --create/--alter` and `kafka-configs --alter` by hand.

```yaml
topics:
  orders:
    partitions: 12
    replication_factor: 3
    configs:
      retention.ms: "604800000"
  legacy-events:
    delete: true
```

**What happens**: `diff` compares the spec with the live cluster — topics to create (Kafka's
own rack-aware assignment), partitions to add (never fewer: Kafka cannot shrink), config overrides
that differ (only the keys the spec names), deletions (only with `delete: true`, refused for
internal topics and topics being reassigned, as `delete_topics` refuses them). A replication
factor change is not done here: the diff names the `change_replication_factor` conf to run.
`approve` shows the diff (another person than the one who triggered; expires); `apply` checks the
diff again on the live cluster (stale → refused) and writes it through the audited write gate;
`verify` waits until the brokers' view shows it (leaders elected, configs in place, deleted topics
gone). A second run with the same spec writes nothing.

Every key of the spec is validated (Kafka's topic-name rules, Kafka 2.4's topic configs and
values, counts); a malformed spec is refused with the line and the fix. `dry_run=true` plans every
write into the audit log and writes nothing.
"""

PARAMS = {
    "zk_conn_id": zk_conn_param(),
    "spec": Param(None, type=["null", "string"],
                  description="The topic spec, YAML (topics: {name: {partitions, replication_factor, configs, "
                              "delete}}); or leave empty and give spec_file"),
    "spec_file": Param(None, type=["null", "string"],
                       description="Path to the topic spec YAML, as seen from the worker (instead of spec)"),
    "dry_run": Param(False, type="boolean", description="Diff, approve and plan every write (audit log); write nothing"),
    "verify_timeout_s": Param(300, type="integer", minimum=1,
                              description="Seconds to wait for the brokers' view to show the changes"),
    "run_root": run_root_param(),
}

with runbook_dag(DAG_ID, "Create, grow, configure and delete topics from a declarative spec, approved",
                 gate_params(PARAMS, DAG_ID), DOC_MD) as dag:
    diff = TopicDiffOperator(task_id="diff", spec="{{ params.spec }}", spec_file="{{ params.spec_file }}",
                             **ZK_STEP_ARGS)
    approve = TopicChangesApprovalOperator(task_id="approve", run_root="{{ params.run_root }}",
                                           zk_conn_id="{{ params.zk_conn_id }}", dry_run="{{ params.dry_run }}")
    apply = ApplyTopicChangesOperator(task_id="apply", trigger_rule="none_failed", **ZK_STEP_ARGS)
    verify = VerifyTopicChangesOperator(task_id="verify", timeout_s="{{ params.verify_timeout_s }}", **ZK_STEP_ARGS)
    report = TopicChangesReportOperator(task_id="final_report", trigger_rule="all_done", **ZK_STEP_ARGS)
    gated([diff, approve, apply, verify, report], first_write=apply, what="the topic changes",
          needed="{{ not ti.xcom_pull(task_ids='diff')['writes_nothing'] }}")
