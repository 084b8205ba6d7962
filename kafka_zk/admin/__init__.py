"""Admin actions Kafka's ZooKeeper tools perform, one job per module.

``topics`` (create/add partitions/delete request), ``configs`` (read-modify-write + change
notification), ``throttles`` (apply per wave, restore exactly), ``reassignment`` (validate,
create-only submit, status, ours/foreign), ``election`` (candidates, size-bounded batches,
submit), ``deletion`` (batched markers, progress), ``controller`` (read, re-elect, move off
removed brokers); ``reassignment`` also rewrites a stuck move (delete + create, then re-elect).
Every write goes through :class:`kafka_zk.writer.ZkWriter`; every function validates all input before its first write.
"""
