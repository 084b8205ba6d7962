"""Rehearsals without Airflow: the executor core driven on an emulated copy (executor.py) and what
the approver reads of it (report.py); cli/rehearsal_run.py composes them with the emulator."""
