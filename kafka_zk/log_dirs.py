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

The document starts at the first line beginning with ``{`` and may span lines. It is decoded
in one pass by msgspec into typed structs (the fields read, nothing else: no dict per entry);
a document that is not plainly typed as the tool prints it (a size as a string, trailing text)
is decoded instead one broker entry at a time with the stdlib decoder, which accepts what it
can and names what it cannot. Neither builds a tree of dicts for a 10⁶-partition output
(~240 MB, one line). The splittable per-partition form the
plan job reads is :mod:`formats.sizes_file` (which builds on this module, never the other way),
whose :func:`~formats.sizes_file.load_sizes` reads either form.

:func:`read_published_log_dirs` reads that output where the emulator publishes it (for
rehearsals and ``kafka-runbook sim log-dirs``): zlib-compressed and split into chunks under
:data:`PUBLISHED_PATH` (``chunk-0000``…), the parent holding a JSON header ``{"version":1,
"encoding":"zlib","chunks":N,"sim_time":…,"at":<wall-clock epoch s>}``. The emulator
(:mod:`kafka_sim.log_dirs`) writes it; no Kafka component reads it.

Failure: text with no JSON document, JSON of the wrong shape, a bad partition name or a size
that is not an integer raises :class:`kafka_zk.errors.InvalidPayload` naming the problem and
the command that produces the file; :func:`read_published_log_dirs` raises
:class:`kafka_zk.errors.InvalidInput` when nothing was published under the chroot.
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional

import msgspec
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidInput, InvalidPayload

PUBLISHED_PATH = "/kafka-sim/log-dirs"

HOW = "produce it with `kafka-log-dirs.sh --bootstrap-server HOST:PORT --describe > sizes.json`"

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")
_DOC_START = re.compile(r"^[ \t\r\f\v]*\{", re.M)


def split_partition_name(name: str) -> TopicPartition:
    """``my-topic-12`` → ``TopicPartition("my-topic", 12)``."""
    topic, sep, pid = str(name).rpartition("-")
    if not sep or not topic or not (pid.isascii() and pid.isdigit()):
        raise InvalidPayload(f"log-dirs output: partition name {name!r} is not <topic>-<partition>")
    return TopicPartition(topic, int(pid))


def _syntax(detail: str) -> InvalidPayload:
    return InvalidPayload(f"log-dirs output: the JSON document does not parse ({detail}); {HOW}")


def _decode(text: str, i: int) -> tuple[Any, int]:
    try:
        return _DECODER.raw_decode(text, i)
    except json.JSONDecodeError as exc:
        raise _syntax(str(exc)) from None


def _after(text: str, i: int, closing: str) -> tuple[bool, int]:
    """Past a ``,`` (True: another item follows) or ``closing`` (False), skipping whitespace."""
    i = _WS.match(text, i).end()
    ch = text[i:i + 1]
    if ch == ",":
        return True, _WS.match(text, i + 1).end()
    if ch == closing:
        return False, i + 1
    raise _syntax(f"expected ',' or {closing!r} at char {i}")


def _broker_entries(text: str) -> Iterator[Any]:
    """The entries of the document's ``brokers`` list, each decoded on its own, in order."""
    start = _DOC_START.search(text)
    if start is None:
        raise InvalidPayload(f"log-dirs output: no JSON document found; {HOW}")
    i = _WS.match(text, start.end()).end()
    seen = False
    more = text[i:i + 1] != "}"
    while more:
        key, i = _decode(text, i)
        if not isinstance(key, str):
            raise _syntax(f"object key {key!r} is not a string")
        i = _WS.match(text, i).end()
        if text[i:i + 1] != ":":
            raise _syntax(f"expected ':' at char {i}")
        i = _WS.match(text, i + 1).end()
        if key == "brokers" and text[i:i + 1] == "[":
            seen = True
            i = _WS.match(text, i + 1).end()
            items = text[i:i + 1] != "]"
            i = i if items else i + 1
            while items:
                entry, i = _decode(text, i)
                yield entry
                items, i = _after(text, i, "]")
        else:
            _, i = _decode(text, i)
            if key == "brokers":
                seen = False
                break
        more, i = _after(text, i, "}")
    if not seen:
        raise InvalidPayload(f"log-dirs output: 'brokers' must be a list; {HOW}")


def _size(value: Any, entry: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InvalidPayload(f"log-dirs output: partition entry {entry!r:.80} has a size that is not an "
                             f"integer; {HOW}") from None


def max_replica_sizes(brokers: Iterable[Any]) -> dict[str, int]:
    """Per partition *name*, the largest non-future replica size over ``brokers`` entries."""
    best: dict[str, int] = {}
    get = best.get
    for b in brokers:
        dirs = b.get("logDirs") if isinstance(b, dict) else None
        if not isinstance(dirs, list):
            raise InvalidPayload(f"log-dirs output: broker entry {b!r:.80} lacks a 'logDirs' list; {HOW}")
        for d in dirs:
            if not isinstance(d, dict) or d.get("error"):
                continue  # an offline log dir reports an error and no partitions
            parts = d.get("partitions") or ()
            if not isinstance(parts, (list, tuple)):
                raise InvalidPayload(f"log-dirs output: log dir {d.get('logDir')!r} has 'partitions' that "
                                     f"is not a list; {HOW}")
            for p in parts:
                if type(p) is not dict or "partition" not in p or "size" not in p:
                    raise InvalidPayload(f"log-dirs output: partition entry {p!r:.80} needs partition and size")
                if p.get("isFuture"):
                    continue
                name, size = p["partition"], p["size"]
                if type(size) is not int:
                    size = _size(size, p)
                if type(name) is not str:
                    name = str(name)
                if size > get(name, -1):
                    best[name] = size
    return best


@dataclass(frozen=True)
class PartitionSizes:
    """Sizes as three parallel columns, one row per partition (what Spark and the artifact take)."""

    topics: tuple[str, ...]
    partitions: tuple[int, ...]
    sizes: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.sizes)

    def items(self) -> Iterator[tuple[TopicPartition, int]]:
        make = TopicPartition._make
        return ((make((t, p)), s) for t, p, s in zip(self.topics, self.partitions, self.sizes))


def _canonical(best: dict[str, int], odd: list[str]) -> None:
    """Fold names whose partition number has leading zeros ("t-01") into "t-1", keeping the max."""
    for name in odd:
        topic, _, pid = name.rpartition("-")
        size, key = best.pop(name), f"{topic}-{int(pid)}"
        if size > best.get(key, -1):
            best[key] = size


class _Partition(msgspec.Struct):
    partition: str
    size: int
    isFuture: bool = False


class _LogDir(msgspec.Struct):
    error: Optional[str] = None
    partitions: Optional[list[_Partition]] = None


class _Broker(msgspec.Struct):
    logDirs: list[_LogDir]


class _Document(msgspec.Struct):
    brokers: list[_Broker]


_TYPED = msgspec.json.Decoder(_Document)


_DOC_START_BYTES = re.compile(rb"^[ \t\r\f\v]*\{", re.M)


def _typed_best(text: str | bytes) -> dict[str, int] | None:
    """:func:`max_replica_sizes` of a document decoded in one pass into typed structs (msgspec:
    unknown fields skipped, no dict per entry), or ``None`` when anything is not plainly typed
    as the tool prints it (then the stdlib path decodes it and names the problem). Given the
    file's bytes, the document is decoded in place (no text copy of a 240 MB output)."""
    start = (_DOC_START_BYTES if isinstance(text, bytes) else _DOC_START).search(text)
    if start is None:
        return None
    try:
        doc = _TYPED.decode(memoryview(text)[start.end() - 1:] if isinstance(text, bytes)
                            else text[start.end() - 1:])
    except msgspec.DecodeError:         # ValidationError included
        return None
    best: dict[str, int] = {}
    get = best.get
    for b in doc.brokers:
        for d in b.logDirs:
            if d.error or not d.partitions:
                continue
            for p in d.partitions:
                if p.isFuture:
                    continue
                name, size = p.partition, p.size
                if size > get(name, -1):
                    best[name] = size
    return best


def log_dirs_columns(text: str | bytes) -> PartitionSizes:
    """Per partition, the largest replica size in bytes, as columns in order of first appearance
    (``text`` may be the file's bytes: UTF-8, decoded only if the typed pass cannot read it)."""
    best = _typed_best(text)
    if best is None:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        best = max_replica_sizes(_broker_entries(text))
    while True:
        topics: list[str] = []
        pids: list[int] = []
        interned: dict[str, str] = {}
        odd: list[str] = []
        for name in best:
            topic, sep, pid = name.rpartition("-")
            if not sep or not topic or not (pid.isascii() and pid.isdigit()):
                split_partition_name(name)  # raises, naming the partition
            if pid[0] == "0" and len(pid) > 1:
                odd.append(name)
            topics.append(interned.setdefault(topic, topic))
            pids.append(int(pid))
        if not odd:
            return PartitionSizes(tuple(topics), tuple(pids), tuple(best.values()))
        _canonical(best, odd)


def log_dirs_sizes(text: str) -> dict[TopicPartition, int]:
    """Per partition, the largest replica size in bytes, in order of first appearance."""
    return dict(log_dirs_columns(text).items())


def parse_log_dirs(text: str) -> dict[TopicPartition, int]:
    """Per partition, the largest replica size in bytes (see the module docstring), sorted."""
    return dict(sorted(log_dirs_sizes(text).items()))


def replica_sizes(text: str) -> dict[tuple[TopicPartition, int], int]:
    """Per (partition, broker), the bytes that broker's replica holds (future replicas and log
    dirs reporting an error left out): what a follower has copied so far, for progress."""
    out: dict[tuple[TopicPartition, int], int] = {}
    for b in _broker_entries(text):
        broker = b.get("broker") if isinstance(b, dict) else None
        if isinstance(broker, bool) or not isinstance(broker, int):
            raise InvalidPayload(f"log-dirs output: broker entry {b!r:.80} lacks an integer 'broker'; {HOW}")
        for d in b.get("logDirs") or ():
            if not isinstance(d, dict) or d.get("error"):
                continue
            for p in d.get("partitions") or ():
                if type(p) is not dict or "partition" not in p or "size" not in p:
                    raise InvalidPayload(f"log-dirs output: partition entry {p!r:.80} needs partition and size")
                if p.get("isFuture"):
                    continue
                key = (split_partition_name(str(p["partition"])), broker)
                out[key] = max(out.get(key, 0), _size(p["size"], p))
    return out


def encode_log_dirs(replica_sizes: dict[int, dict[TopicPartition, int]]) -> str:
    """The tool's output for {broker: {tp: size}} (for tests, rehearsals and the emulator)."""
    brokers = [{"broker": b, "logDirs": [{"logDir": "/var/lib/kafka", "error": None, "partitions": [
        {"partition": str(tp), "size": s, "offsetLag": 0, "isFuture": False}
        for tp, s in sorted(replica_sizes[b].items())]}]} for b in sorted(replica_sizes)]
    return ("Querying brokers for log directories information\n"
            f"Received log directory information from brokers {','.join(str(b) for b in sorted(replica_sizes))}\n"
            + json.dumps({"version": 1, "brokers": brokers}, separators=(",", ":")) + "\n")


def read_published_log_dirs(client: KazooClient) -> tuple[str, float | None]:
    """The log-dirs output the emulator published under :data:`PUBLISHED_PATH` and the wall-clock
    epoch seconds it was published at (None for a publication that did not record it)."""
    try:
        header, _ = client.get(PUBLISHED_PATH)
        doc = json.loads(header)
        n = doc["chunks"]
        blob = b"".join(client.get(f"{PUBLISHED_PATH}/chunk-{i:04d}")[0] for i in range(n))
        at = doc.get("at")
        return zlib.decompress(blob).decode("utf-8"), float(at) if isinstance(at, (int, float)) else None
    except (NoNodeError, ValueError, KeyError, TypeError, zlib.error):
        raise InvalidInput(f"no emulator sizes published under {PUBLISHED_PATH}: start "
                           "`kafka-runbook sim` on this --zookeeper connect string first") from None
