"""Files people give us or we keep, and their readers and writers: the partition sizes file
(:mod:`formats.sizes_file`), the snapshot file (:mod:`formats.snapshot_file`), Kafka's
state-change log lines (:mod:`formats.state_change_log`) and the files that hold them
(:mod:`formats.state_change_files`). Built on ``kafka_zk``'s codecs and model (and may use
``planning``'s); no ZooKeeper session, no Spark, no Airflow.

Failure: a file that does not parse raises :class:`kafka_zk.errors.InvalidInput` or
:class:`kafka_zk.errors.InvalidPayload` naming the file, the line and the fix; OSError from the file system.
"""
