"""Size limits every writer of an admin znode shares, named once.

ZooKeeper refuses a znode larger than ``jute.maxbuffer`` (1 MiB by default, docs/zookeeper.md §0);
:mod:`kafka_zk.writer` enforces that hard limit. The runbooks and the command line cut their
``/admin/reassign_partitions`` and ``/admin/preferred_replica_election`` writes into batches of at
most :data:`ADMIN_BATCH_BYTES`, half of it, so a batch never approaches the limit.

Failure: none (constants).
"""

ADMIN_BATCH_BYTES = 512 * 1024

#: The largest batch a user may ask for: under ZooKeeper's 1 MiB with headroom for the request.
MAX_ADMIN_BATCH_BYTES = 1_000_000
