"""The report models: live progress, failures, run history, locations, state-change summaries,
titles and the YAML helpers they share."""
