"""Partition sizes from what ``kafka-log-dirs.sh --describe`` prints (the operators' source).

The tool prints two status lines and then one JSON document::

    Querying brokers for log directories information
    Received log directory information from brokers 1,2,3
    {"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/data","error":null,
      "partitions":[{"partition":"foo-0","size":1024,"offsetLag":0,"isFuture":false}]}]}]}

The size of a partition is the **largest size of any of its replicas** (excluding future
replicas of intra-broker log-dir moves). Not the leader's: the output does not say which
replica leads, and a new replica copies the leader's log, which is at least as large as any
in-sync follower's; the maximum is therefore the best estimate of bytes to copy (a lagging
follower only makes the max safer). Partition names are split at the *last* ``-``.

Failure: text with no JSON document, JSON of the wrong shape, or a bad partition name raises
:class:`kafka_zk.errors.InvalidPayload` naming the problem and the command that produces the file.
"""

from __future__ import annotations

import json
from typing import Any

from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidPayload

HOW = "produce it with `kafka-log-dirs.sh --bootstrap-server HOST:PORT --describe > sizes.json`"


def split_partition_name(name: str) -> TopicPartition:
    """``my-topic-12`` → ``TopicPartition("my-topic", 12)``."""
    topic, sep, pid = str(name).rpartition("-")
    if not sep or not topic or not pid.isdigit():
        raise InvalidPayload(f"log-dirs output: partition name {name!r} is not <topic>-<partition>")
    return TopicPartition(topic, int(pid))


def _document(text: str) -> dict[str, Any]:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("{"):
            try:
                doc = json.loads(stripped)
            except ValueError as exc:
                raise InvalidPayload(f"log-dirs output: the JSON line does not parse ({exc}); {HOW}") from None
            if isinstance(doc, dict):
                return doc
    try:
        doc = json.loads(text)
    except ValueError:
        raise InvalidPayload(f"log-dirs output: no JSON document found; {HOW}") from None
    if not isinstance(doc, dict):
        raise InvalidPayload(f"log-dirs output: expected a JSON object; {HOW}")
    return doc


def parse_log_dirs(text: str) -> dict[TopicPartition, int]:
    """Per partition, the largest replica size in bytes (see the module docstring)."""
    doc = _document(text)
    brokers = doc.get("brokers")
    if not isinstance(brokers, list):
        raise InvalidPayload(f"log-dirs output: 'brokers' must be a list; {HOW}")
    sizes: dict[TopicPartition, int] = {}
    for b in brokers:
        dirs = b.get("logDirs") if isinstance(b, dict) else None
        if not isinstance(dirs, list):
            raise InvalidPayload(f"log-dirs output: broker entry {b!r:.80} lacks a 'logDirs' list; {HOW}")
        for d in dirs:
            if not isinstance(d, dict) or d.get("error"):
                continue  # an offline log dir reports an error and no partitions
            for p in d.get("partitions") or ():
                if not isinstance(p, dict) or "partition" not in p or "size" not in p:
                    raise InvalidPayload(f"log-dirs output: partition entry {p!r:.80} needs partition and size")
                if p.get("isFuture"):
                    continue
                tp = split_partition_name(p["partition"])
                size = int(p["size"])
                if size > sizes.get(tp, -1):
                    sizes[tp] = size
    return dict(sorted(sizes.items()))


def load_sizes(path: str) -> dict[TopicPartition, int]:
    """:func:`parse_log_dirs` of a file."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise InvalidPayload(f"sizes file {path}: cannot open ({exc.strerror}); {HOW}") from None
    return parse_log_dirs(text)


def encode_log_dirs(replica_sizes: dict[int, dict[TopicPartition, int]]) -> str:
    """The tool's output for {broker: {tp: size}} (for tests, rehearsals and the emulator)."""
    brokers = [{"broker": b, "logDirs": [{"logDir": "/var/lib/kafka", "error": None, "partitions": [
        {"partition": str(tp), "size": s, "offsetLag": 0, "isFuture": False}
        for tp, s in sorted(replica_sizes[b].items())]}]} for b in sorted(replica_sizes)]
    return ("Querying brokers for log directories information\n"
            f"Received log directory information from brokers {','.join(str(b) for b in sorted(replica_sizes))}\n"
            + json.dumps({"version": 1, "brokers": brokers}, separators=(",", ":")) + "\n")
