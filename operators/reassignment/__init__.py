"""The reassignment runbook skeleton (runbook.py) and its steps: guards, throttles, leadership
demotion/election, wave execution (execute.py), verification, controller checks; the wave book and
stall causes are in :mod:`procedures.waves`."""
