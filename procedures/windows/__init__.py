"""Maintenance windows: the spec (spec.py), its calendar (calendar.py) and the guard's decisions
(guard.py)."""
