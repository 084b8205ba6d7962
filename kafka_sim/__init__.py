"""kafka_sim: the Kafka side of a ZooKeeper-mode cluster, emulated against a real ZooKeeper.

N simulated brokers (each with its own kazoo session and ephemeral registration) and their
controller react to ZooKeeper as ``docs/zookeeper.md`` §2 describes for Kafka 2.4+, while
partition data replicates at network or throttled rates on a simulated clock. Entry point:
:class:`kafka_sim.cluster.EmulatedCluster` with a :class:`kafka_sim.spec.ClusterSpec`.
"""
