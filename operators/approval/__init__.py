"""Approvals: the approval step (step.py), who may approve what (policy.py), retrying a refused
approval (retry.py), the change-approval form (change.py) and the run-conf checks (conf_check.py)."""
