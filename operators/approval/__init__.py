"""Approvals: the approval step (step.py), retrying a refused approval (retry.py), the
change-approval form (change.py) and the run-conf checks (conf_check.py); who may approve what is
:mod:`procedures.approval.policy`."""
