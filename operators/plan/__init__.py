"""Planning steps: the plan step that launches the Spark job (step.py), the operations it plans
(ops.py, topic_ops.py, rollback.py) and the snapshot input; the log-dirs input, retiring brokers and
topic specs are in :mod:`procedures.plan`."""
