"""Reports: the final report (final.py), its links and the reports web app (links.py, app.py), the
live progress page, run history and notes, state-change summaries and the YAML helpers they share."""
