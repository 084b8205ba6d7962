"""Where the wave trigger reads follower log sizes: the connection's ``log_dirs_source``.

Copy progress is judged from the bytes each new replica holds, which only the brokers know: a
real deployment reads them as ``kafka-log-dirs.sh --describe`` prints them (Kafka's
DescribeLogDirs request, answered by every live broker). ZooKeeper does not hold them. The
``kafka_zookeeper`` connection names the source in ``extra.log_dirs_source``:

* ``command:<command line>`` — run it on every poll (from the triggerer), e.g.
  ``command:kafka-log-dirs.sh --bootstrap-server kafka1:9092 --describe``: the triggerer host
  then needs Kafka's tools, a route to the brokers' listeners and, on a secured cluster,
  ``--command-config``; bounded by ``extra.log_dirs_timeout_s`` (default 30 s);
* ``file:<path>`` — a file something else refreshes with that output (a cron job or sidecar);
  older than ``extra.log_dirs_max_age_s`` (default 120 s, by its modification time) it is stale;
* ``emulator`` — the sizes the emulator publishes under ``/kafka-sim/log-dirs`` in the same
  chroot (read by :func:`kafka_zk.log_dirs.read_published_log_dirs`; rehearsals), stale likewise
  past the max age.

Without a source, or when a read fails or is stale, progress falls back to ISR joins (a new
replica counts as copied once it joins the ISR) and the progress line says so.

Failure: a malformed ``log_dirs_source`` raises :class:`InvalidInput` naming the connection and
the forms accepted (:func:`parse_log_dirs_source`); reading never raises — a failed or stale
read is a :class:`LogDirsReading` without sizes whose ``note`` says why.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Mapping

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException

from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidInput, KafkaZkError
from kafka_zk.log_dirs import read_published_log_dirs, replica_sizes

FORMS = "'command:<kafka-log-dirs.sh ... --describe>', 'file:<path>' or 'emulator'"


@dataclass(frozen=True)
class LogDirsSource:
    """How to read the brokers' log sizes: ``kind`` ∈ {command, file, emulator}."""

    kind: str
    target: str = ""
    max_age_s: float = 120.0
    timeout_s: float = 30.0

    def __str__(self) -> str:
        return f"{self.kind}:{self.target}" if self.target else self.kind


@dataclass(frozen=True)
class LogDirsReading:
    """Bytes per (partition, broker) replica, or None with ``note`` saying why there are none."""

    sizes: Mapping[tuple[TopicPartition, int], int] | None
    note: str = ""


def _seconds(extra: Mapping[str, Any], key: str, default: float, where: str) -> float:
    raw = extra.get(key, default)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = -1.0
    if not 0 < value <= 3600:
        raise InvalidInput(f"{where}: extra {key}={raw!r} must be seconds in (0, 3600]")
    return value


def parse_log_dirs_source(extra: Mapping[str, Any], where: str) -> LogDirsSource | None:
    """The connection extra's ``log_dirs_source`` (None when not set)."""
    raw = extra.get("log_dirs_source")
    if raw in (None, ""):
        return None
    text = str(raw).strip()
    max_age = _seconds(extra, "log_dirs_max_age_s", 120.0, where)
    timeout = _seconds(extra, "log_dirs_timeout_s", 30.0, where)
    kind, sep, target = text.partition(":")
    if text == "emulator":
        return LogDirsSource("emulator", "", max_age, timeout)
    if sep and kind == "file" and target.strip():
        return LogDirsSource("file", target.strip(), max_age, timeout)
    if sep and kind == "command" and target.strip():
        try:
            if shlex.split(target):
                return LogDirsSource("command", target.strip(), max_age, timeout)
        except ValueError:
            pass
    raise InvalidInput(f"{where}: extra log_dirs_source={raw!r} is not one of {FORMS}")


def _text(source: LogDirsSource, client: KazooClient) -> tuple[str, float]:
    """The tool's output and the wall-clock time it describes."""
    if source.kind == "command":
        done = subprocess.run(shlex.split(source.target), capture_output=True, text=True,
                              timeout=source.timeout_s, check=False)
        if done.returncode != 0:
            raise OSError(f"exit {done.returncode}: {(done.stderr or done.stdout).strip()[-300:]}")
        return done.stdout, time.time()
    if source.kind == "file":
        with open(source.target, encoding="utf-8") as fh:
            return fh.read(), os.stat(source.target).st_mtime
    text, at = read_published_log_dirs(client)
    return text, time.time() if at is None else at


def read_log_dirs(source: LogDirsSource | None, client: KazooClient) -> LogDirsReading:
    """Replica sizes from ``source``; never raises (see the module docstring)."""
    if source is None:
        return LogDirsReading(None, "no log_dirs_source on the connection")
    try:
        text, at = _text(source, client)
        age = time.time() - at   # an outside source's age is judged on the wall clock
        if age > source.max_age_s:
            return LogDirsReading(None, f"log sizes from {source} are {age:.0f}s old (max {source.max_age_s:.0f}s)")
        return LogDirsReading(replica_sizes(text))
    except subprocess.TimeoutExpired:
        return LogDirsReading(None, f"{source} did not answer within {source.timeout_s:.0f}s")
    except (OSError, KafkaZkError, KazooException, UnicodeDecodeError) as exc:
        return LogDirsReading(None, f"log sizes from {source} not read ({type(exc).__name__}: {exc})")
