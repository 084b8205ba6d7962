"""The rolling_restart runbook (issue 29): plan (order, batches), the roll engine, its Airflow steps, its report.

* :mod:`operators.restart.plan` — which brokers, in which order and batches (pure).
* :mod:`operators.restart.roll` — one batch at a time: gate, demote, restart action, wait until
  registered, in sync and leading again (no Airflow import: the command line runs it too).
* :mod:`operators.restart.steps` — the DAG's steps; :mod:`operators.restart.report` — the report.
"""
