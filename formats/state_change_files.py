"""State-change log files: find them, read them (plain, rotated, gzip; whole or by byte range),
and merge them in this process with bounded memory.

Files are found as Kafka's ``StateChangeLogMerger`` finds them: ``--logs`` is a comma-separated
list (an item with ``*?[`` is expanded as a glob, sorted), ``--logs-regex`` is a path whose last
component is a regex searched in the names of that directory's files (sorted). A file is gzip
when it starts with gzip's magic bytes, whatever its name. Lines split on ``\\n`` (a trailing
``\\r`` is dropped) and decode as UTF-8 with invalid bytes replaced, on every path.

:func:`read_split` reads an entry at a time: the Spark job reads plain files in byte ranges with
it (an entry belongs to the split its first line starts in), gzip and small files whole. The
in-process merge reads whole files a block at a time (:func:`read_chunks`, the same entries at
the same offsets: a whole-file split goes through the same block reader) and merges the files a
sorted batch at a time (:func:`merged_chunks`); see docs/state-change-logs.md, "Speed".

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
from formats.state_change_log import (
    HEADER_RE, TIME_PATTERN, Entry, EntryFilter, MergeStats, ParseStats, entries_from_lines, format_entry,
    format_time, header_time, merge_batches, parse_time, reorder_chunks, topic_partitions,
)

GZIP_MAGIC = b"\x1f\x8b"
_BLOCK = 1 << 20
#: a newline followed by a line header_time takes for an entry's first line: splitting a block there
#: cuts it into entries in C (a literal first, so the regex engine jumps from newline to newline)
_SPLIT_AT_HEADERS = re.compile("\n(?=\\[?" + TIME_PATTERN + ")")
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


def _whole_file_entries(fh: BinaryIO, file_index: int, stats: ParseStats) -> Iterator[Entry]:
    """Every entry of a file read from its start (see :func:`_whole_file_chunks`)."""
    for chunk in _whole_file_chunks(fh, file_index, stats):
        yield from chunk


def _whole_file_chunks(fh: BinaryIO, file_index: int, stats: ParseStats) -> Iterator[list[Entry]]:
    """Every entry of a file read from its start, a list per block read: what
    :func:`entries_from_lines` gives for :func:`_lines`. An ASCII block without ``\r`` (the usual case) is decoded at
    once and cut into entries at the lines that start with a timestamp (one regex scan, byte
    offsets = character offsets); any other block goes line by line through the same code as
    before, so both give the same entries."""
    time: str | None = None         # the entry in progress (it may continue in the next block)
    offset = 0
    parts: list[str] = []
    base = 0                        # file offset of the block
    tail = b""
    split, is_header, new = _SPLIT_AT_HEADERS.split, HEADER_RE.match, tuple.__new__
    while True:
        chunk = fh.read(_BLOCK)
        data = tail + chunk
        if not data:
            break
        if chunk:
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                tail = data
                continue
            block, tail = data[:cut], data[cut:]
        else:
            block, tail = data, b""            # the last line, without a newline
        got: list[Entry] = []
        if block.isascii() and b"\r" not in block:
            text = block.decode("ascii")
            if text.endswith("\n"):
                text = text[:-1]
            pieces = split(text)               # each piece but perhaps the first starts an entry
            at = 0
            first = pieces[0]
            if is_header(first) is None:       # lines continuing the entry in progress, or orphans
                if time is None:
                    stats.orphan_lines += first.count("\n") + 1
                else:
                    parts.append(first)
                at = len(first) + 1
                pieces[0] = ""                 # done with (skipped below)
            for piece in pieces:
                if not piece:
                    continue
                if time is not None:
                    if len(parts) == 1:
                        one = parts[0]
                        lines = tuple(one.split("\n")) if "\n" in one else (one,)
                    else:
                        lines = tuple("\n".join(parts).split("\n"))
                    got.append(new(Entry, (time, file_index, offset, lines)))
                time = piece[1:24] if piece[0] == "[" else piece[:23]
                offset = base + at
                parts = [piece]
                at += len(piece) + 1
        else:
            for start, line in _lines(io.BytesIO(block), base):
                t = header_time(line)
                if t is None:
                    if time is None:
                        stats.orphan_lines += 1
                    else:
                        parts.append(line)
                    continue
                if time is not None:
                    got.append(new(Entry, (time, file_index, offset, tuple("\n".join(parts).split("\n")))))
                time, offset, parts = t, start, [line]
        base += len(block)
        if got:
            stats.entries += len(got)
            yield got
    if time is not None:
        stats.entries += 1
        yield [new(Entry, (time, file_index, offset, tuple("\n".join(parts).split("\n"))))]


def read_chunks(log: LogFile, stats: ParseStats) -> Iterator[list[Entry]]:
    """All the entries of ``log``, a list per block read (what the in-process merge reads)."""
    try:
        if log.gzipped:
            with gzip.open(log.path, "rb") as fh:
                yield from _whole_file_chunks(fh, log.index, stats)
            return
        with open(log.path, "rb", buffering=0) as raw:
            yield from _whole_file_chunks(raw, log.index, stats)
    except (OSError, EOFError, zlib.error) as exc:
        raise _unreadable(log, exc) from None


def _unreadable(log: LogFile, exc: BaseException) -> InvalidInput:
    return InvalidInput(f"log file {log.path!r} cannot be read ({exc}); "
                        "a truncated or corrupt gzip file? leave it out or re-copy it")


def read_split(log: LogFile, start: int, end: int | None, stats: ParseStats) -> Iterator[Entry]:
    """The entries whose first line starts in ``[start, end)`` of ``log`` (``end=None``: to the
    end). A gzip file is read whole (offsets count decompressed bytes)."""
    try:
        if log.gzipped:
            with gzip.open(log.path, "rb") as fh:
                yield from _whole_file_entries(fh, log.index, stats)
            return
        if start == 0 and end is None:
            with open(log.path, "rb", buffering=0) as raw:
                yield from _whole_file_entries(raw, log.index, stats)
            return
        with open(log.path, "rb") as fh:
            pos = 0
            if start > 0:
                fh.seek(start - 1)
                pos = start - 1 + len(fh.readline())   # the line in progress belongs to the split before
            yield from entries_from_lines(_lines(fh, pos), log.index, stats,
                                          skip_leading=start > 0, stop_at=end)
    except (OSError, EOFError, zlib.error) as exc:
        raise _unreadable(log, exc) from None


def merged_entries(logs: Sequence[LogFile], flt: EntryFilter, stats: MergeStats,
                   reorder_window: int = DEFAULT_REORDER_WINDOW) -> Iterator[Entry]:
    """Every entry of ``logs`` that ``flt`` accepts, in ``(time, file index, offset)`` order."""
    for chunk in merged_chunks(logs, flt, stats, reorder_window):
        yield from chunk


def merged_chunks(logs: Sequence[LogFile], flt: EntryFilter, stats: MergeStats,
                  reorder_window: int = DEFAULT_REORDER_WINDOW) -> Iterator[list[Entry]]:
    """:func:`merged_entries`, a sorted list at a time (what :func:`write_merged` writes)."""
    streams = []
    for log in logs:
        per = stats.per_file.setdefault(log.path, ParseStats())
        stats.files.append(log.path)
        chunks = read_chunks(log, per)
        if not flt.keeps_all:
            chunks = ([e for e in chunk if flt.accepts(e)] for chunk in chunks)
        streams.append(reorder_chunks(chunks, reorder_window, log.path))
    return merge_batches(streams)


def write_merged(logs: Sequence[LogFile], flt: EntryFilter, out: TextIO | io.TextIOBase,
                 prefix: bool = True, reorder_window: int = DEFAULT_REORDER_WINDOW) -> MergeStats:
    """The in-process merge: formatted entries, one per line group, to ``out``."""
    stats = MergeStats()
    starts = {log.index: (log.path + ": " if prefix else "") for log in logs}
    joins = {i: "\n" + p for i, p in starts.items()}
    written = 0
    for entries in merged_chunks(logs, flt, stats, reorder_window):
        batch = [starts[index] + (lines[0] if len(lines) == 1 else joins[index].join(lines))
                 for _time, index, _offset, lines in entries]
        batch.append("")
        out.write("\n".join(batch))
        written += len(entries)
    stats.written = written
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
