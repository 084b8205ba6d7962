"""The reassignment runbook skeleton (runbook.py) and its steps: guards, throttles, leadership
demotion/election, wave execution (execute.py, waves.py), verification, controller checks, stalls."""
