"""broker_configs (an Airflow DAG): make the dynamic broker config overrides match a declarative spec, approved.

What ``kafka-configs.sh --zookeeper --entity-type brokers --alter`` does by hand, made safe: per
broker id and for the cluster-wide default (``/config/brokers/<default>``), keys set and deleted.
Steps (task ids): diff → approve → window → apply → verify → final_report → notify (the window and
notify gates from :func:`operators.batches.runbook.gated`, wired by
:func:`operators.runbooks.declarative.spec_steps`). Operators:
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

from operators.runbooks.declarative import spec_params, spec_runbook
from operators.runbooks.broker_configs import STEPS

DAG_ID = "broker_configs"

dag = spec_runbook(
    DAG_ID, "Set and delete dynamic broker config overrides from a declarative spec, approved",
    spec_params(spec="The broker config spec, YAML (brokers: {<id> or default: {set: {key: value}, delete: [key]}}); "
                     "or leave empty and give spec_file",
                spec_file="Path to the broker config spec YAML, as seen from the worker (instead of spec)",
                verify_timeout_s=60, verify="Seconds to wait for the overrides to read back as the spec says"),
    STEPS, what="the broker config changes")
