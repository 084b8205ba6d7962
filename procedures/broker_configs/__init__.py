"""The broker_configs runbook's procedure, without Airflow: the spec (spec.py), its diff against
the live overrides (diff.py), and reading, applying and reading back through the write gate (run.py)."""
