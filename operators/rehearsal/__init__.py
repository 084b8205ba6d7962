"""The runbooks' ``rehearse`` step (``step.py``): it runs ``kafka-runbook rehearse`` as a child process.

The rehearsal itself needs no Airflow: :mod:`procedures.rehearsal.executor` drives the executor core
on an emulated copy, :mod:`procedures.rehearsal.report` is what the approver reads, and
:mod:`cli.rehearsal_run` composes them with the emulator.
"""
