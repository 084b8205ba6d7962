"""State-change log files: find them, read them (plain, rotated, gzip; whole or by byte range),
and merge them in this process with bounded memory.

Files are found as Kafka's ``StateChangeLogMerger`` finds them: ``--logs`` is a comma-separated
list (an item with ``*?[`` is expanded as a glob, sorted), ``--logs-regex`` is a path whose last
component is a regex searched in the names of that directory's files (sorted). A file is gzip
when it starts with gzip's magic bytes, whatever its name. Lines split on ``\\n`` (a trailing
``\\r`` is dropped) and decode as UTF-8 with invalid bytes replaced, on every path.

:func:`read_split` is the one reader: the in-process merge reads each file as one split, the
Spark job reads plain files in byte ranges (an entry belongs to the split its first line starts
in), so both see the same entries at the same offsets.

Failure: no file found, a missing, unreadable or non-regular file, a file given twice, a corrupt
gzip stream raise :class:`kafka_zk.errors.InvalidInput` naming the file and the fix; the file
checks run before anything is written.
"""

from __future__ import annotations

import collections
import datetime as _dt
import glob
import gzip
import io
import os
import re
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Iterable, Iterator, Sequence, TextIO

from kafka_zk.errors import InvalidInput
from spark_jobs.kernels.state_change import (
    Entry, EntryFilter, MergeStats, ParseStats, entries_from_lines, format_entry, format_time, merge,
    parse_time, reorder, topic_partitions,
)

GZIP_MAGIC = b"\x1f\x8b"
DEFAULT_REORDER_WINDOW = 10_000
_GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class LogFile:
    """One input: its index (tie-break order), its label (the path as found), size, gzip."""

    index: int
    path: str
    size: int
    gzipped: bool


def find_logs(logs: str | None = None, logs_regex: str | None = None) -> list[LogFile]:
    """The input files for exactly one of ``--logs`` / ``--logs-regex``, checked readable."""
    if (logs is None) == (logs_regex is None):
        raise InvalidInput('Provide arguments to exactly one of the two options "logs" or "logs-regex"')
    paths: list[str] = []
    if logs is not None:
        items = [s.strip() for s in logs.split(",") if s.strip()]
        if not items:
            raise InvalidInput(f"--logs {logs!r} names no file; give e.g. --logs b1/state-change.log,b2/state-change.log")
        for item in items:
            if _GLOB_CHARS.search(item):
                found = sorted(p for p in glob.glob(item) if os.path.isfile(p))
                if not found:
                    raise InvalidInput(f"--logs: the pattern {item!r} matches no file; check the path")
                paths.extend(found)
            else:
                paths.append(item)
    else:
        assert logs_regex is not None
        cut = logs_regex.rfind("/") + 1
        dirname = "." if cut == 0 else (logs_regex[:cut - 1] or "/")
        try:
            name_re = re.compile(logs_regex[cut:])
        except re.error as exc:
            raise InvalidInput(f"--logs-regex {logs_regex!r}: {logs_regex[cut:]!r} is not a valid regex "
                               f"({exc}); e.g. --logs-regex '/var/log/kafka/state-change.log.*'") from None
        if not os.path.isdir(dirname):
            raise InvalidInput(f"--logs-regex {logs_regex!r}: directory {dirname!r} does not exist; "
                               "the part before the last '/' is a directory, the rest a regex of names")
        names = sorted(n for n in os.listdir(dirname) if name_re.search(n)
                       and os.path.isfile(os.path.join(dirname, n)))
        if not names:
            raise InvalidInput(f"--logs-regex {logs_regex!r} matches no file in {dirname!r}")
        paths = [dirname.rstrip("/") + "/" + n if dirname != "/" else "/" + n for n in names]
    return check_files(paths)


def check_files(paths: Sequence[str]) -> list[LogFile]:
    """Each path exists, is a regular readable file, and appears once."""
    seen: dict[str, str] = {}
    out: list[LogFile] = []
    for i, path in enumerate(paths):
        real = os.path.realpath(path)
        if real in seen:
            raise InvalidInput(f"log file {path!r} is given twice (also as {seen[real]!r}); "
                               "each file is merged once")
        seen[real] = path
        if not os.path.exists(path):
            raise InvalidInput(f"log file {path!r} does not exist; check the path")
        if not os.path.isfile(path):
            raise InvalidInput(f"log file {path!r} is not a regular file; give the state-change.log files")
        try:
            with open(path, "rb") as fh:
                head = fh.read(2)
        except OSError as exc:
            raise InvalidInput(f"log file {path!r} cannot be read ({exc.strerror}); "
                               "fix its permissions or leave it out") from None
        out.append(LogFile(i, path, os.path.getsize(path), head == GZIP_MAGIC))
    return out


def _lines(fh: BinaryIO, pos: int) -> Iterator[tuple[int, str]]:
    for raw in fh:
        start = pos
        pos += len(raw)
        if raw.endswith(b"\n"):
            raw = raw[:-1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        yield start, raw.decode("utf-8", "replace")


def read_split(log: LogFile, start: int, end: int | None, stats: ParseStats) -> Iterator[Entry]:
    """The entries whose first line starts in ``[start, end)`` of ``log`` (``end=None``: to the
    end). A gzip file is read whole (offsets count decompressed bytes)."""
    try:
        if log.gzipped:
            with gzip.open(log.path, "rb") as fh:
                yield from entries_from_lines(_lines(fh, 0), log.index, stats)
            return
        with open(log.path, "rb") as fh:
            pos = 0
            if start > 0:
                fh.seek(start - 1)
                pos = start - 1 + len(fh.readline())   # the line in progress belongs to the split before
            yield from entries_from_lines(_lines(fh, pos), log.index, stats,
                                          skip_leading=start > 0, stop_at=end)
    except (OSError, EOFError, zlib.error) as exc:
        raise InvalidInput(f"log file {log.path!r} cannot be read ({exc}); "
                           "a truncated or corrupt gzip file? leave it out or re-copy it") from None


def merged_entries(logs: Sequence[LogFile], flt: EntryFilter, stats: MergeStats,
                   reorder_window: int = DEFAULT_REORDER_WINDOW) -> Iterator[Entry]:
    """Every entry of ``logs`` that ``flt`` accepts, in ``(time, file index, offset)`` order."""
    streams = []
    for log in logs:
        per = stats.per_file.setdefault(log.path, ParseStats())
        stats.files.append(log.path)
        kept = (e for e in read_split(log, 0, None, per) if flt.accepts(e))
        streams.append(reorder(kept, reorder_window, log.path))
    return merge(streams)


def write_merged(logs: Sequence[LogFile], flt: EntryFilter, out: TextIO | io.TextIOBase,
                 prefix: bool = True, reorder_window: int = DEFAULT_REORDER_WINDOW) -> MergeStats:
    """The in-process merge: formatted entries, one per line group, to ``out``."""
    stats = MergeStats()
    labels = {log.index: log.path for log in logs}
    for entry in merged_entries(logs, flt, stats, reorder_window):
        out.write(format_entry(entry, labels[entry.file_index] if prefix else None))
        out.write("\n")
        stats.written += 1
    return stats


@dataclass(frozen=True)
class Excerpt:
    """The merged entries about some partitions in a time window (what a stalled wave's report
    shows): the files read, the window, the formatted lines (each prefixed with its file), and
    how many entries matched before the cut to the last ``max_entries``."""

    files: tuple[str, ...]
    start: str | None
    end: str | None
    lines: tuple[str, ...]
    matched: int

    @property
    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)


def expand_logs(logs_glob: str) -> list[LogFile]:
    """A folder (every ``state-change.log*`` under it), a file, or a glob (``**`` allowed)."""
    if not logs_glob or not logs_glob.strip():
        raise InvalidInput("no broker log location given: set broker_logs to a folder, file or glob "
                           "reachable from the worker, e.g. /mnt/kafka-logs/*/state-change.log*")
    pattern = logs_glob.strip()
    if os.path.isdir(pattern):
        pattern = os.path.join(pattern, "**", "state-change.log*")
    found = sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p))
    if not found:
        raise InvalidInput(f"broker logs {logs_glob!r} match no file; give a folder, file or glob "
                           "reachable from the worker")
    return check_files(found)


def state_change_excerpt(logs_glob: str, partitions: Iterable[tuple[str, int]],
                         around_time: str | _dt.datetime | None = None,
                         window: float | _dt.timedelta = 600.0, max_entries: int = 200,
                         reorder_window: int = DEFAULT_REORDER_WINDOW) -> Excerpt:
    """The entries naming any of ``partitions`` within ``window`` of ``around_time``.

    ``around_time`` is in the logs' clock (log4j writes the brokers' local time); ``None``
    anchors the window at the newest entry about those partitions (the window ends there), which
    needs no clock agreement between the caller and the brokers: a stalled partition's last
    entries are the ones that explain the stall. Bounded memory: two streaming passes at most,
    and only the last ``max_entries`` entries are kept.
    """
    logs = expand_logs(logs_glob)
    wanted = {(str(t), int(p)) for t, p in partitions}
    if not wanted:
        raise InvalidInput("state_change_excerpt: no partitions given")
    span = window if isinstance(window, _dt.timedelta) else _dt.timedelta(seconds=float(window))
    if span.total_seconds() < 0:
        raise InvalidInput(f"window {window!r} is negative")

    def about(entry: Entry) -> bool:
        return any(tp in wanted for tp in topic_partitions(entry.lines[0]))

    def run(flt: EntryFilter) -> tuple[collections.deque, int]:
        kept: collections.deque = collections.deque(maxlen=max_entries)
        n = 0
        for entry in merged_entries(logs, flt, MergeStats(), reorder_window):
            if about(entry):
                kept.append(entry)
                n += 1
        return kept, n

    if around_time is None:
        last, n = run(EntryFilter())
        if not last:
            return Excerpt(tuple(log.path for log in logs), None, None, (), 0)
        end = _parse_log_time(last[-1].time)
        start = end - span
    else:
        center = around_time if isinstance(around_time, _dt.datetime) else \
            _parse_log_time(parse_time(around_time, "around_time"))
        start, end = center - span, center + span
    kept, n = run(EntryFilter(start=format_time(start), end=format_time(end)))
    labels = {log.index: log.path for log in logs}
    lines = tuple(line for e in kept for line in format_entry(e, labels[e.file_index]).split("\n"))
    return Excerpt(tuple(log.path for log in logs), format_time(start), format_time(end), lines, n)


def _parse_log_time(text: str) -> _dt.datetime:
    return _dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f")
