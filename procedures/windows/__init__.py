"""Maintenance windows: the spec (spec.py), its calendar (calendar.py), the guard's decisions
(guard.py) and a run's record of them, with the throttles kept or removed while it waits (pause.py)."""
