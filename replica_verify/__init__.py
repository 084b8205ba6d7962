"""Replica verification over the Kafka protocol — ``kafka-replica-verification.sh`` in Python.

Fetches every selected partition from every replica's broker (as a debugging consumer, replica
id −2, so followers answer too) and compares the replicas' record batches offset by offset:
last offsets, CRCs, and the records' bytes (keys, values, timestamps, headers). Reports the
maximum lag between what all replicas agree on and the high watermark. Not ZooKeeper code: it
speaks only the Kafka protocol (kafka-python's protocol layer), to real brokers or to the
emulator's (``kafka_sim.wire``).

Modules: ``options`` (the tool's options, checked), ``connection`` (one broker socket),
``discovery`` (Metadata, ListOffsets), ``compare`` (pure batch comparison), ``verifier``
(the fetch/compare rounds and the summary), ``tails`` (the runbooks' quick check: chosen
replicas' log end offsets and last batches against their leaders').
"""
