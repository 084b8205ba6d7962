"""The ZooKeeper contract as code: paths, payload codecs, the cluster model, the snapshot
reader, the one write gate, and the admin actions Kafka's ZooKeeper tools perform.

Imports kazoo, the standard library and pydantic only: the same code runs in a Spark
executor, an Airflow task, the CLI and the emulator.
"""
