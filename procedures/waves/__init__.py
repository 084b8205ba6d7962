"""Reassignment waves: the wave book (book.py), why a wave stalls (stall_causes.py) and the
controller's evidence for it (controller_evidence.py)."""
