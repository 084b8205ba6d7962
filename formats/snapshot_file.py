"""The snapshot artifact: a :class:`ClusterSnapshot` to and from a JSON-lines file (pure I/O).

Format (version 1), one JSON object per line, each with a ``kind``:

* ``{"kind":"cluster","version":1,"controller_id":..,"controller_epoch":..,"taken_at_ms":..,
  "reassignment":[{"topic":..,"partition":..,"replicas":[..]}]|null,
  "preferred_election":[{"topic":..,"partition":..}]|null,"delete_markers":[..]}`` — first line;
* ``{"kind":"broker","id":1,"rack":"r1","host":..,"port":..,"endpoints":[..]}`` per live broker;
* ``{"kind":"broker_config","entity":"1","config":{..}}`` per ``/config/brokers/<entity>``;
* ``{"kind":"topic","topic":..,"config":{..},"topic_id":..,"marked_for_deletion":..,
  "assignment_version":..}`` per topic, followed by its partitions;
* ``{"kind":"partition","topic":..,"partition":..,"replicas":[..],"adding":[..],"removing":[..],
  "leader":..,"leader_epoch":..,"isr":[..],"controller_epoch":..}`` per partition.

Columnar variant: a path ending in ``.parquet`` is written (and read) as one Parquet file with
the same records as rows and the fields above as columns (absent fields null), via pyarrow,
imported only for such a path. The plan job reads it without any JSON parsing, which is most
of its Spark time on a large cluster (see bench/bench_plan_phases.py); JSON lines stay the
default and remain readable everywhere.

Why JSON lines by default: Spark reads it natively and splits it across tasks by line
(``spark.read.json`` with a fixed schema, no Python per row), a human can ``grep`` it, the
snapshot reader can stream it out line by line, and the plain-Python loader needs only the
stdlib (a Spark executor or an Airflow worker may not have pyarrow). Loading 1M partitions in
plain Python takes a few seconds (measured in bench/bench_plan.py); Spark never loads it in Python.

Failure: a file that is missing, not JSON lines, of another version or missing the cluster line
raises :class:`kafka_zk.errors.InvalidPayload` naming the file, the line and the fix.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterator

import msgspec

from kafka_zk.codecs import PreferredElectionRequest, ReassignmentEntry, ReassignmentRequest, TopicPartition
from kafka_zk.errors import InvalidPayload
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic

FORMAT_VERSION = 1


def header_records(snapshot: ClusterSnapshot) -> Iterator[dict[str, Any]]:
    """The cluster record, then the brokers in id order and the broker configs in entity order."""
    re = snapshot.reassignment
    pe = snapshot.preferred_election
    yield {"kind": "cluster", "version": FORMAT_VERSION, "controller_id": snapshot.controller_id,
           "controller_epoch": snapshot.controller_epoch, "taken_at_ms": snapshot.taken_at_ms,
           "reassignment": None if re is None else [
               {"topic": e.topic, "partition": e.partition, "replicas": list(e.replicas)}
               for e in re.entries],
           "preferred_election": None if pe is None else [
               {"topic": tp.topic, "partition": tp.partition} for tp in pe.partitions],
           "delete_markers": sorted(snapshot.delete_markers)}
    for b in sorted(snapshot.brokers):
        br = snapshot.brokers[b]
        yield {"kind": "broker", "id": b, "rack": br.rack, "host": br.host, "port": br.port,
               "endpoints": list(br.endpoints)}
    for entity in sorted(snapshot.broker_configs):
        yield {"kind": "broker_config", "entity": entity, "config": dict(snapshot.broker_configs[entity])}


def topic_record(name: str, t: Topic) -> dict[str, Any]:
    """The record of topic ``name`` (its partitions follow it in the file)."""
    return {"kind": "topic", "topic": name, "config": dict(t.config), "topic_id": t.topic_id,
            "marked_for_deletion": t.marked_for_deletion, "assignment_version": t.assignment_version}


def partition_records(name: str, t: Topic) -> list[dict[str, Any]]:
    """The records of topic ``name``'s partitions, in partition order (lists as tuples)."""
    parts = t.partitions
    return [{"kind": "partition", "topic": name, "partition": pid, "replicas": p.replicas, "adding": p.adding,
             "removing": p.removing, "leader": p.leader, "leader_epoch": p.leader_epoch, "isr": p.isr,
             "controller_epoch": p.controller_epoch} for pid in sorted(parts) for p in (parts[pid],)]


def snapshot_records(snapshot: ClusterSnapshot) -> Iterator[dict[str, Any]]:
    """The file's records, cluster record first, topics in name order, each followed by its partitions."""
    yield from header_records(snapshot)
    for name in sorted(snapshot.topics):
        t = snapshot.topics[name]
        yield topic_record(name, t)
        yield from partition_records(name, t)


def _arrow_schema():
    import pyarrow as pa

    ints = pa.list_(pa.int64())
    return pa.schema([
        ("kind", pa.string()), ("version", pa.int64()), ("controller_id", pa.int64()),
        ("controller_epoch", pa.int64()), ("taken_at_ms", pa.int64()),
        ("reassignment", pa.list_(pa.struct([("topic", pa.string()), ("partition", pa.int64()),
                                             ("replicas", ints)]))),
        ("preferred_election", pa.list_(pa.struct([("topic", pa.string()), ("partition", pa.int64())]))),
        ("delete_markers", pa.list_(pa.string())), ("id", pa.int64()), ("rack", pa.string()),
        ("host", pa.string()), ("port", pa.int64()), ("endpoints", pa.list_(pa.string())),
        ("entity", pa.string()), ("config", pa.map_(pa.string(), pa.string())), ("topic", pa.string()),
        ("topic_id", pa.string()), ("marked_for_deletion", pa.bool_()), ("assignment_version", pa.int64()),
        ("partition", pa.int64()), ("replicas", ints), ("adding", ints), ("removing", ints),
        ("leader", pa.int64()), ("leader_epoch", pa.int64()), ("isr", ints)])


def _write_parquet(snapshot: ClusterSnapshot, path: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _arrow_schema()
    columns: dict[str, list] = {f.name: [] for f in schema}
    for rec in snapshot_records(snapshot):
        if "config" in rec:
            rec = dict(rec, config=list(rec["config"].items()))
        for name, values in columns.items():
            values.append(rec.get(name))
    # row groups of 128k rows: Spark reads one task per row group, so a big snapshot is read in parallel
    pq.write_table(pa.table(columns, schema=schema), path, compression="snappy", row_group_size=1 << 17)


def write_snapshot(snapshot: ClusterSnapshot, path: str) -> None:
    """Write ``snapshot`` to ``path`` atomically (temp file + rename); Parquet for ``*.parquet``."""
    tmp = f"{path}.tmp{os.getpid()}"
    if path.endswith(".parquet"):
        _write_parquet(snapshot, tmp)
        os.replace(tmp, path)
        return
    # msgspec writes the bytes json.dumps(separators=(",", ":"), ensure_ascii=False) writes, ~10x faster
    lines = msgspec.json.Encoder().encode_lines
    with open(tmp, "wb") as f:
        f.write(lines(list(header_records(snapshot))))
        for name in sorted(snapshot.topics):
            t = snapshot.topics[name]
            f.write(lines([topic_record(name, t), *partition_records(name, t)]))
    os.replace(tmp, path)


class _ParquetLines:
    """A Parquet snapshot as a context manager iterating over its records (dicts)."""

    def __init__(self, path: str) -> None:
        import pyarrow.parquet as pq

        try:
            self._table = pq.read_table(path)
        except OSError:
            raise
        except Exception as exc:  # pyarrow.ArrowInvalid: not a Parquet file
            raise OSError(f"not a Parquet file ({exc})") from None

    def __enter__(self) -> "_ParquetLines":
        return self

    def __exit__(self, *exc: object) -> None:
        self._table = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        names = self._table.column_names
        columns = [self._table.column(n).to_pylist() for n in names]
        for row in zip(*columns):
            rec = {n: v for n, v in zip(names, row) if v is not None}
            if "config" in rec:
                rec["config"] = dict(rec["config"])
            yield rec


def load_snapshot(path: str) -> ClusterSnapshot:
    """Read a snapshot written by :func:`write_snapshot` (JSON lines, or Parquet for ``*.parquet``)."""
    try:
        f = _ParquetLines(path) if path.endswith(".parquet") else open(path, encoding="utf-8")
    except OSError as exc:
        raise InvalidPayload(f"snapshot file {path}: cannot open ({exc.strerror or exc}); "
                             "take one with `kafka-runbook plan ... --zookeeper` or check the path") from None
    brokers: dict[int, Broker] = {}
    configs: dict[str, dict[str, str]] = {}
    topic_docs: dict[str, dict[str, Any]] = {}
    parts: dict[str, dict[int, Partition]] = {}
    head: dict[str, Any] | None = None
    loads = json.loads
    with f:
        for n, line in enumerate(f, 1):
            if isinstance(line, str) and not line.strip():
                continue
            try:
                d = loads(line) if isinstance(line, str) else line
                kind = d["kind"]
                if kind == "partition":
                    t = d["topic"]
                    parts[t][d["partition"]] = Partition(
                        t, d["partition"], tuple(d["replicas"]), tuple(d.get("adding") or ()),
                        tuple(d.get("removing") or ()), d.get("leader"), d.get("leader_epoch"),
                        tuple(d.get("isr") or ()), d.get("controller_epoch"))
                elif kind == "topic":
                    topic_docs[d["topic"]] = d
                    parts.setdefault(d["topic"], {})
                elif kind == "broker":
                    brokers[d["id"]] = Broker(d["id"], d.get("rack"), d.get("host"), d.get("port", -1),
                                              tuple(d.get("endpoints") or ()), True)
                elif kind == "broker_config":
                    configs[d["entity"]] = dict(d["config"])
                elif kind == "cluster":
                    if d.get("version") != FORMAT_VERSION:
                        raise InvalidPayload(f"snapshot file {path}: format version {d.get('version')!r} "
                                             f"is not {FORMAT_VERSION}; re-take the snapshot with this tool")
                    head = d
                else:
                    raise KeyError(kind)
            except InvalidPayload:
                raise
            except (ValueError, KeyError, TypeError) as exc:
                raise InvalidPayload(f"snapshot file {path} line {n}: not a snapshot record ({exc!r}); "
                                     "the file is truncated or not a snapshot — re-take it") from None
    if head is None:
        raise InvalidPayload(f"snapshot file {path}: no cluster line; it is not a snapshot file "
                             "written by formats.snapshot_file.write_snapshot")
    topics = {name: Topic(name, parts.get(name, {}), dict(doc.get("config") or {}), doc.get("topic_id"),
                          bool(doc.get("marked_for_deletion")), int(doc.get("assignment_version") or 1))
              for name, doc in topic_docs.items()}
    re = head.get("reassignment")
    pe = head.get("preferred_election")
    return ClusterSnapshot(
        brokers, topics, configs,
        None if re is None else ReassignmentRequest(tuple(
            ReassignmentEntry(e["topic"], e["partition"], tuple(e["replicas"])) for e in re)),
        None if pe is None else PreferredElectionRequest(tuple(
            TopicPartition(e["topic"], e["partition"]) for e in pe)),
        frozenset(head.get("delete_markers") or ()), head.get("controller_id"),
        head.get("controller_epoch"), int(head.get("taken_at_ms") or 0))
