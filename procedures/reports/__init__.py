"""The report models: failures, run history, locations, state-change summaries, titles and the
YAML helpers they share (the live progress page, which reads the wave book, is procedures/live_progress.py)."""
