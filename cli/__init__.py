"""The ``kafka-runbook`` command line: the runbook actions without Airflow."""
