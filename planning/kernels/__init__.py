"""The plan job's kernels: one module per planner (decommission, add brokers and move topics, budgeted
rebalance, RF change, replace, rollback, a user's JSON, stuck rewrites) plus the shared balancing,
placement, wave and validation passes. Pure Python over :mod:`kafka_zk.model`; the plan job
(:mod:`spark_jobs.operations`) picks one by ``--op``. Failure: :class:`planning.model.PlanRefused`
or :class:`kafka_zk.errors.InvalidInput` naming the input and the fix."""
