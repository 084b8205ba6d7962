"""The emulated brokers' Kafka wire protocol: enough of it (ApiVersions, Metadata, ListOffsets,
Fetch) for ``kafka-runbook verify-replicas`` — or any Kafka client — to read the partitions'
deterministic records from every replica. See ``listener.py`` (sockets), ``handlers.py``
(requests to responses), ``records.py`` (the records themselves), ``state.py`` (what a broker
can serve, read from the engine).
"""
