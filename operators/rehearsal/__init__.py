"""Rehearsals: the exact plan run by the executor's own code on an emulated copy of the cluster.

``seeded.py`` starts a private ZooKeeper and the emulator seeded from the run's snapshot and
sizes; ``executor.py`` drives :class:`operators.reassignment.execute.ExecuteWavesOperator` in-process
against it on the simulated clock; :mod:`procedures.rehearsal.report` is what the approver reads; ``run.py`` joins them
(the ``kafka-runbook rehearse`` command and the runbooks' ``rehearse`` step call it).
"""
