"""Who may approve what: the approval policy (policy.py)."""
