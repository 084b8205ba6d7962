"""Every planner in one home: pure functions from a cluster snapshot to a plan (issue 35's layer 2).

The plan model (:mod:`planning.model`: moves, :class:`~planning.model.Plan`, waves, the refusals),
the kernels the plan job runs (:mod:`planning.kernels`), the planners the in-task runbooks run
(:mod:`planning.election`, :mod:`planning.topic_deletion`), the per-wave throttles and the wave
time model, and the plan folder's reader and writer side by side (:mod:`planning.plan_folder`).
Imports only ``kafka_zk``'s models and codecs: no Airflow, no Spark, no ZooKeeper session; the
plan folder is the only file I/O.

Failure: the planners raise :class:`kafka_zk.errors.InvalidInput` (or a subclass) naming the
input and the fix; the plan folder's reader raises :class:`kafka_zk.errors.InvalidPayload`, its
writer OSError from the file system.
"""
