"""Reports: the final report (final.py), its links and the reports web app (links.py, app.py) and
run notes (run_notes.py); the report models (live progress, history, state-change summaries, ...)
are in :mod:`procedures.reports`."""
