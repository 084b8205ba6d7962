"""The rolling_restart runbook (issue 29): its Airflow steps over the procedure in :mod:`procedures.restart`.

* :mod:`procedures.restart.plan` — which brokers, in which order and batches (pure).
* :mod:`procedures.restart.roll` — one batch at a time: gate, demote, restart action, wait until
  registered, in sync and leading again (no Airflow import: the command line runs it too).
* :mod:`operators.restart.steps` — the DAG's steps; :mod:`procedures.restart.report` — the report.
"""
