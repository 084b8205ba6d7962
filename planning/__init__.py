"""Pure planning functions the runbooks and the plan job share (the contract layer's planners).

The plan model (:mod:`planning.model`: moves, :class:`~planning.model.Plan`,
waves, the refusals), the plan folder's writer (:mod:`~planning.plan_folder.write`, with the
per-wave throttles of :mod:`~planning.throttles`) and the planners that need no Spark —
topic deletion and preferred leader election — live here so that the Airflow steps
(``operators``) and the Spark plan job (``spark_jobs``) import one definition from the layer both
stand on. No Airflow, no Spark; only the writer does I/O (files in the run folder).

Failure: the planners raise :class:`kafka_zk.errors.InvalidInput` (or a subclass) naming the
input and the fix; nothing here writes to ZooKeeper; the writer raises OSError from the file system.
"""
