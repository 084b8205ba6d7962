"""Reassignment waves: the wave book (book.py), the executor that submits them (executor.py), the
wait on one wave — its pure rules (observe.py) and its poll loop (watch.py) — why a wave stalls
(stall_causes.py) and the controller's evidence for it (controller_evidence.py), and what the wait
records at every poll for the live progress page (poll_record.py)."""
