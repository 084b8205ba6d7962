"""The partition sizes artifact (``sizes.jsonl``): one partition per line, so Spark can split it.

Format (version 1), JSON lines::

    {"kind":"partition_sizes","version":1}
    {"topic":"orders","partition":0,"size":1073741824}
    {"topic":"orders","partition":1,"size":52428800}

The first line is the header; each other line is one partition and its size in bytes, already
reduced as :mod:`kafka_zk.log_dirs` defines it (the largest non-future replica). Why a second
form: ``kafka-log-dirs.sh --describe`` prints one JSON document on one line (~240 MB for 10⁶
partitions × RF 3), which Spark parses in one task while the other cores idle; these lines it
reads in parallel with a fixed schema (:func:`spark_jobs.spark_io.read_sizes_df`). The snapshot
step converts the operator's file into the run folder (``RunFolder.partition_sizes``); the plan
job accepts either form and converts raw output in its driver.

Which form a file is, is told by its content, not its name: a file whose first non-blank line is
the header is this artifact; anything else must parse as ``kafka-log-dirs.sh`` output.
:func:`load_sizes` reads either form (the operators' entry point).

Failure: an unreadable file, a bad line, an unknown version, or a file that is neither form
raises :class:`kafka_zk.errors.InvalidPayload` naming the file (and line) and the fix.
"""

from __future__ import annotations

import json
import os
import re
from typing import Iterable, Literal, Mapping

from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidPayload
from kafka_zk.log_dirs import HOW, PartitionSizes, log_dirs_columns

KIND = "partition_sizes"
FORMAT_VERSION = 1
HEADER_LINE = json.dumps({"kind": KIND, "version": FORMAT_VERSION}, separators=(",", ":"))
# a line exactly as write_sizes_file writes it (Kafka topic names need no JSON escapes)
_LINE = re.compile(r'\{"topic":"([A-Za-z0-9._-]+)","partition":(0|[1-9][0-9]*),"size":(-?(?:0|[1-9][0-9]*))\}\n?\Z')
_PEEK = 1 << 16  # the header is short; never read a long first line (the log-dirs document) whole

Form = Literal["partition_sizes", "log_dirs"]


def _cannot_open(path: str, exc: OSError) -> InvalidPayload:
    return InvalidPayload(f"sizes file {path}: cannot open ({exc.strerror or exc}); {HOW}")


def sizes_form(path: str) -> Form:
    """``"partition_sizes"`` if the file starts with the header, else ``"log_dirs"`` (to be parsed)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            line = f.readline(_PEEK)
            while line and not line.strip() and line.endswith("\n"):
                line = f.readline(_PEEK)
    except OSError as exc:
        raise _cannot_open(path, exc) from None
    stripped = line.strip()
    if not stripped.startswith('{"kind"') and not stripped.startswith('{ "kind"'):
        return "log_dirs"
    try:
        head = json.loads(stripped)
    except ValueError:
        return "log_dirs"
    if not isinstance(head, dict) or head.get("kind") != KIND:
        return "log_dirs"
    if head.get("version") != FORMAT_VERSION:
        raise InvalidPayload(f"sizes file {path}: partition sizes format version {head.get('version')!r} is not "
                             f"{FORMAT_VERSION}; convert the kafka-log-dirs output again with this tool")
    return "partition_sizes"


def write_sizes_file(sizes: PartitionSizes | Mapping[TopicPartition, int], path: str) -> int:
    """Write ``sizes`` as a ``sizes.jsonl`` atomically (temp file + rename); the number of partitions."""
    items: Iterable[tuple[tuple[str, int], int]] = (
        zip(zip(sizes.topics, sizes.partitions), sizes.sizes) if isinstance(sizes, PartitionSizes) else sizes.items())
    prefixes: dict[str, str] = {}
    tmp = f"{path}.tmp{os.getpid()}"
    n = 0
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(HEADER_LINE + "\n")
            chunk: list[str] = []
            for (topic, partition), size in items:
                prefix = prefixes.get(topic)
                if prefix is None:
                    prefix = prefixes[topic] = '{"topic":' + json.dumps(topic, ensure_ascii=False) + ',"partition":'
                chunk.append(f'{prefix}{int(partition)},"size":{int(size)}}}\n')
                if len(chunk) >= 8192:
                    f.write("".join(chunk))
                    n += len(chunk)
                    chunk.clear()
            f.write("".join(chunk))
            n += len(chunk)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return n


def _bad_line(path: str, n: int, line: str, why: str) -> InvalidPayload:
    return InvalidPayload(f"sizes file {path} line {n}: {why}, got {line.strip()[:80]!r}; each line after the "
                          'header must be {"topic":<name>,"partition":<n ≥ 0>,"size":<bytes>} once per partition: '
                          "convert the kafka-log-dirs.sh --describe output again (formats.sizes_file.convert_sizes)")


def read_sizes_columns(path: str) -> PartitionSizes:
    """Read and check a ``sizes.jsonl`` in plain Python: every line, and no partition twice.

    Lines as :func:`write_sizes_file` writes them take a regex fast path; any other line is
    decoded as JSON and checked field by field (~1.5 s for 10⁶ lines).
    """
    if sizes_form(path) != "partition_sizes":
        raise InvalidPayload(f"sizes file {path}: the first line is not {HEADER_LINE}; give a file written by "
                             "formats.sizes_file, or the kafka-log-dirs.sh --describe output itself")
    topics: list[str] = []
    pids: list[int] = []
    sizes: list[int] = []
    interned: dict[str, str] = {}
    fast = _LINE.match
    with open(path, encoding="utf-8") as f:
        header = True
        for n, line in enumerate(f, 1):
            m = fast(line)
            if m is not None:
                topic, pid, size = m.group(1), int(m.group(2)), int(m.group(3))
            elif not line.strip():
                continue
            elif header:
                header = False
                continue
            else:
                try:
                    d = json.loads(line)
                except ValueError:
                    raise _bad_line(path, n, line, "not JSON") from None
                topic, pid, size = (d.get("topic"), d.get("partition"), d.get("size")) if isinstance(d, dict) \
                    else (None, None, None)
                if type(topic) is not str or not topic or type(pid) is not int or pid < 0 or type(size) is not int:
                    raise _bad_line(path, n, line, "expected a topic, a partition ≥ 0 and a size")
            header = False
            topics.append(interned.setdefault(topic, topic))
            pids.append(pid)
            sizes.append(size)
    if len(set(zip(topics, pids))) != len(topics):
        seen: dict[tuple[str, int], int] = {}
        for i, key in enumerate(zip(topics, pids)):
            if key in seen:
                raise InvalidPayload(f"sizes file {path}: partition {key[0]}-{key[1]} appears twice (partitions "
                                     f"#{seen[key] + 1} and #{i + 1}); each partition must appear once: convert "
                                     "the kafka-log-dirs.sh --describe output again")
            seen[key] = i
    return PartitionSizes(tuple(topics), tuple(pids), tuple(sizes))


def read_sizes_file(path: str) -> dict[TopicPartition, int]:
    """:func:`read_sizes_columns` as a dict, in file order."""
    return dict(read_sizes_columns(path).items())


def _log_dirs_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise _cannot_open(path, exc) from None


def log_dirs_file_columns(path: str) -> PartitionSizes:
    """:func:`kafka_zk.log_dirs.log_dirs_columns` of a file's bytes, its errors naming the file."""
    data = _log_dirs_bytes(path)
    try:
        return log_dirs_columns(data)
    except UnicodeDecodeError as exc:
        raise InvalidPayload(f"sizes file {path}: not UTF-8 text ({exc.reason}); {HOW}") from None
    except InvalidPayload as exc:
        raise InvalidPayload(f"sizes file {path}: neither a partition sizes file (first line {HEADER_LINE}) nor "
                             f"valid kafka-log-dirs output: {exc}") from None


def read_any_sizes(path: str) -> dict[TopicPartition, int]:
    """Sizes from either form (see the module docstring), in file order."""
    if sizes_form(path) == "partition_sizes":
        return read_sizes_file(path)
    return dict(log_dirs_file_columns(path).items())


def load_sizes(path: str) -> dict[TopicPartition, int]:
    """Sizes from a file in either form, sorted by partition (the form is told by the content)."""
    return dict(sorted(read_any_sizes(path).items()))


def convert_sizes(src: str, dst: str) -> int:
    """Write ``dst`` (a ``sizes.jsonl``) from ``src`` in either form; the number of partitions.

    ``src`` is read and checked completely before ``dst`` is written (atomically), so a bad
    ``src`` leaves no ``dst``.
    """
    if sizes_form(src) == "partition_sizes":
        return write_sizes_file(read_sizes_columns(src), dst)
    return write_sizes_file(log_dirs_file_columns(src), dst)
