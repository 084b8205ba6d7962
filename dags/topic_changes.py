"""topic_changes (an Airflow DAG): approval-gated topic administration from a declarative spec.

Steps (task ids): diff → approve → window → apply → verify → final_report → notify (the window and
notify gates from :func:`operators.batches.runbook.gated`, wired by
:func:`operators.runbooks.declarative.spec_steps`). Operators:
``operators/runbooks/topic_changes.py``; the spec: ``procedures/plan/topic_spec.py``; the diff:
``procedures/plan/topic_diff.py``. The SRE guide (the DAG's ``doc_md``) is ``docs/runbooks/topic_changes.md``.

Failure: a malformed spec, a refused change (fewer partitions, an unsafe deletion, …) or a stale
diff stops the run before any write; ``verify`` fails when the brokers' view does not show the
changes within ``verify_timeout_s``.
"""

from __future__ import annotations

from operators.runbooks.declarative import spec_params, spec_runbook
from operators.runbooks.topic_changes import STEPS

DAG_ID = "topic_changes"

PARAMS = spec_params(
    spec="The topic spec, YAML (topics: {name: {partitions, replication_factor, configs, delete}}); or leave empty "
         "and give spec_file",
    spec_file="Path to the topic spec YAML, as seen from the worker (instead of spec)",
    verify_timeout_s=300, verify="Seconds to wait for the brokers' view to show the changes")

dag = spec_runbook(DAG_ID, "Create, grow, configure and delete topics from a declarative spec, approved",
                   PARAMS, STEPS, what="the topic changes")
