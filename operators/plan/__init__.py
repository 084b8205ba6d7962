"""Planning steps: the plan step that launches the Spark job (step.py), the operations it plans
(ops.py, topic_ops.py, rollback.py), the snapshot and log-dirs inputs, retiring brokers, topic specs."""
