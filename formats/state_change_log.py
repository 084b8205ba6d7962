"""State-change log entries: parse, filter, order, format (Kafka's ``StateChangeLogMerger``).

Pure logic shared by the in-process merge (:mod:`formats.state_change_files`) and the Spark
job (:mod:`spark_jobs.state_change_job`); no I/O, no Spark import, so both paths produce the
same bytes.

An *entry* starts with a line whose first characters are log4j's ``[yyyy-MM-dd HH:mm:ss,SSS]``
(Kafka's ``stateChangeAppender`` layout ``[%d] %p %m (%c)%n``; the bracket is optional) and
takes every following line without a timestamp (stack traces) with it. Entries are ordered by
``(time, file index, byte offset)``: time first, as Kafka's tool does, ties broken by the
order the files were given and then by position in the file, so the order is total and the
same on every path. Times compare as their fixed-width text, exactly as the tool compares them.

The topic-partitions an entry is about are read from its first line: Kafka 2.4's own forms
(``partition t-0``, ``partition being reassigned t-0``, ``replicas t-0,t-1 on broker``,
``topicName='t', partitionIndex=0``) and the older ``[t,0]`` form that Kafka's tool looks for.

Failure: :func:`parse_time` raises :class:`kafka_zk.errors.InvalidInput` on a time that is not
``yyyy-MM-dd HH:mm:ss,SSS`` or not a calendar time; :func:`compile_filter` on a bad topic regex
or partition list. Nothing else here raises on input data: lines without a timestamp before the
first entry of a file are counted (:class:`ParseStats`), never guessed at.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import operator
import re
from dataclasses import dataclass, field
from itertools import islice
from typing import Iterable, Iterator, NamedTuple, Sequence

from kafka_zk.errors import InvalidInput

TIME_FORMAT = "yyyy-MM-dd HH:mm:ss,SSS"
_TIME = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}"
TIME_PATTERN = _TIME             # a log4j time, as a regex (no group)
HEADER_RE = re.compile(r"\[?(" + _TIME + r")")
TIME_RE = re.compile(_TIME + r"\Z")
_LEGAL = r"[a-zA-Z0-9._-]"   # org.apache.kafka.common.internals.Topic.LEGAL_CHARS
_TP = r"(" + _LEGAL + r"+)-([0-9]+)(?!" + _LEGAL + r")"
TP_PATTERNS = (
    re.compile(r"\[(" + _LEGAL + r"+),( )*([0-9]+)\]"),                 # Kafka's tool: [t,0]
    re.compile(r"partition (?:being reassigned )?" + _TP),             # 2.4: for partition t-0
    re.compile(r"topicName='(" + _LEGAL + r"+)', partitionIndex=([0-9]+)"),
)
REPLICAS_RE = re.compile(r"replicas ((?:" + _LEGAL + r"+-[0-9]+,)*" + _LEGAL + r"+-[0-9]+) on broker")
_TP_ONE = re.compile(r"\A" + _TP + r"\Z")


class Entry(NamedTuple):
    """One log entry: its time text, the file it came from (index and label), its byte offset
    in that file, and its lines (the first holds the timestamp). A tuple, so entries compare by
    ``(time, file index, offset)`` natively (the lines never decide: offsets are unique within
    a file), which keeps the sorts and heap merges in C."""

    time: str
    file_index: int
    offset: int
    lines: tuple[str, ...]

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.time, self.file_index, self.offset)


@dataclass
class ParseStats:
    """Per-file counts of what was not an entry (reported as warnings, never dropped silently)."""

    orphan_lines: int = 0          # lines without a timestamp before a file's first entry
    entries: int = 0


@dataclass(frozen=True)
class EntryFilter:
    """``--topic`` (a regex matched against the whole topic name), ``--partitions`` and the
    inclusive time range (``None``: open)."""

    topic: re.Pattern[str] | None = None
    partitions: frozenset[int] = frozenset()
    start: str | None = None
    end: str | None = None

    @property
    def by_partition(self) -> bool:
        return self.topic is not None or bool(self.partitions)

    @property
    def keeps_all(self) -> bool:
        """No option given: every entry is kept (the merge then skips the check)."""
        return self.start is None and self.end is None and not self.by_partition

    def accepts(self, entry: Entry) -> bool:
        if self.start is not None and entry.time < self.start:
            return False
        if self.end is not None and entry.time > self.end:
            return False
        if not self.by_partition:
            return True
        for topic, part in topic_partitions(entry.lines[0]):
            if self.topic is not None and not self.topic.fullmatch(topic):
                continue
            if self.partitions and part not in self.partitions:
                continue
            return True
        return False


def parse_time(text: str, option: str = "time") -> str:
    """A ``yyyy-MM-dd HH:mm:ss,SSS`` time (quotes and blanks around it are dropped, as Kafka's
    tool does), checked to be a real calendar time; returned in its canonical text."""
    cleaned = text.replace('"', " ").strip()
    if not TIME_RE.match(cleaned):
        raise InvalidInput(f"{option} {text!r} is not in the format {TIME_FORMAT}; "
                           "write e.g. '2024-05-01 13:45:00,000'")
    try:
        _dt.datetime.strptime(cleaned, "%Y-%m-%d %H:%M:%S,%f")
    except ValueError as exc:
        raise InvalidInput(f"{option} {text!r} is not a calendar time ({exc}); "
                           f"write a real date and time in the format {TIME_FORMAT}") from None
    return cleaned


def format_time(when: _dt.datetime) -> str:
    """log4j's ``%d`` (ISO8601 with a comma before the milliseconds)."""
    return when.strftime("%Y-%m-%d %H:%M:%S,") + f"{when.microsecond // 1000:03d}"


def compile_filter(topic: str | None = None, partitions: str | Sequence[int] | None = None,
                   start: str | None = None, end: str | None = None) -> EntryFilter:
    """The filter for the tool's options, each checked: ``partitions`` as ``"0,1,2"`` or ints
    (no repeats, none negative, only with a topic as in Kafka's tool), times as
    :func:`parse_time`, ``start`` not after ``end``."""
    pattern = None
    if topic is not None:
        if not topic:
            raise InvalidInput("--topic is empty: give a topic name or regex, e.g. --topic 'orders.*'")
        try:
            pattern = re.compile(topic)
        except re.error as exc:
            raise InvalidInput(f"--topic {topic!r} is not a valid regex ({exc}); "
                               "escape special characters, e.g. 'orders\\.v2'") from None
    parts: list[int] = []
    if partitions is not None:
        if pattern is None:
            raise InvalidInput("--partitions needs --topic (as in Kafka's tool); "
                               "use --topic '.*' for every topic")
        items = partitions.split(",") if isinstance(partitions, str) else list(partitions)
        for item in items:
            try:
                value = int(str(item).strip())
            except ValueError:
                raise InvalidInput(f"--partitions {partitions!r}: {item!r} is not a partition id; "
                                   "write comma-separated integers, e.g. 0,1,2") from None
            if value < 0:
                raise InvalidInput(f"--partitions {partitions!r}: {value} is negative; partition ids are ≥ 0")
            parts.append(value)
        dups = sorted({p for p in parts if parts.count(p) > 1})
        if dups:
            raise InvalidInput("The list of partitions contains repeated entries: "
                               + ",".join(map(str, dups)))
    s = parse_time(start, "--start-time") if start is not None else None
    e = parse_time(end, "--end-time") if end is not None else None
    if s is not None and e is not None and s > e:
        raise InvalidInput(f"--start-time {s} is after --end-time {e}; swap them")
    return EntryFilter(pattern, frozenset(parts), s, e)


def topic_partitions(line: str) -> list[tuple[str, int]]:
    """Every topic-partition the line names, in the order found."""
    found: list[tuple[str, int]] = []
    for pattern in TP_PATTERNS:
        for m in pattern.finditer(line):
            groups = [g for g in m.groups() if g is not None and g.strip()]
            found.append((groups[0], int(groups[-1])))
    for m in REPLICAS_RE.finditer(line):
        for item in m.group(1).split(","):
            tp = _TP_ONE.match(item)
            if tp:
                found.append((tp.group(1), int(tp.group(2))))
    return found


def header_time(line: str) -> str | None:
    """The timestamp an entry's first line starts with, or None for a continuation line."""
    m = HEADER_RE.match(line)
    return m.group(1) if m else None


def entries_from_lines(lines: Iterable[tuple[int, str]], file_index: int, stats: ParseStats,
                       skip_leading: bool = False, stop_at: int | None = None) -> Iterator[Entry]:
    """Group ``(byte offset, line)`` pairs into entries.

    Lines before the first timestamped line are orphans: counted in ``stats`` unless
    ``skip_leading`` (a split that starts inside the previous split's entry). With ``stop_at``,
    no entry *starts* at or after that offset, but the last one keeps its continuation lines
    past it (how a split reads its share of a file).
    """
    time: str | None = None
    offset = 0
    buf: list[str] = []
    for pos, line in lines:
        t = header_time(line)
        if t is None:
            if time is None:
                if not skip_leading:
                    stats.orphan_lines += 1
                continue
            buf.append(line)
            continue
        if time is not None:
            stats.entries += 1
            yield Entry(time, file_index, offset, tuple(buf))
            time = None
        if stop_at is not None and pos >= stop_at:
            return
        time, offset, buf = t, pos, [line]
    if time is not None:
        stats.entries += 1
        yield Entry(time, file_index, offset, tuple(buf))


class OutOfOrder(InvalidInput):
    """A file whose entries go back in time further than the reorder window allows."""


def reorder(entries: Iterable[Entry], window: int, label: str) -> Iterator[Entry]:
    """``entries`` in key order, given that none is more than ``window`` entries away from its
    place (log4j appends from several threads, so a file's times can go back a little); see
    :func:`reorder_chunks`."""
    for chunk in reorder_chunks(([e] for e in entries), window, label):
        yield from chunk


def reorder_chunks(chunks: Iterable[list[Entry]], window: int, label: str) -> Iterator[list[Entry]]:
    """:func:`reorder` for entries that come in lists (a file's blocks), giving lists.

    The last ``window`` entries are held in a sorted list, and the smallest leaves when one more
    arrives — the same entries, in the same order, as a heap of ``window`` entries. An entry in
    order is appended, one out of order is inserted where it belongs; a whole chunk that is in
    order and starts after everything held is appended at once (the same result, in C). Raises
    :class:`OutOfOrder` naming the file and both times when an entry belongs before one already
    given out, so the in-process merge never prints an order that differs from a full sort.
    """
    held: list[Entry] = []
    head = 0                        # held[head:] are waiting; held[:head] are given out
    last: Entry | None = None
    for chunk in chunks:
        if not chunk:
            continue
        if (head == len(held) or not chunk[0] < held[-1]) and all(map(operator.le, chunk, chunk[1:])):
            held += chunk
            cut = len(held) - window
            if cut > head:
                out = held[head:cut]
                if last is not None and out[0] < last:
                    raise _out_of_order(label, out[0], last.key, window)
                last, head = out[-1], cut
                yield out
        else:
            out = []
            for entry in chunk:
                if head == len(held) or not entry < held[-1]:
                    held.append(entry)
                else:
                    bisect.insort(held, entry, lo=head)
                if len(held) - head > window:
                    first = held[head]
                    head += 1
                    if last is not None and first < last:
                        if out:
                            yield out
                        raise _out_of_order(label, first, last.key, window)
                    last = first
                    out.append(first)
            if out:
                yield out
        if head >= 4096 and head * 2 >= len(held):
            del held[:head]
            head = 0
    out = held[head:]
    if out:
        if last is not None and out[0] < last:
            raise _out_of_order(label, out[0], last.key, window)
        yield out


def _out_of_order(label: str, entry: Entry, last: tuple[str, int, int], window: int) -> OutOfOrder:
    return OutOfOrder(f"{label}: the entry at byte {entry.offset} ({entry.time}) comes after entries "
                      f"up to {last[0]}, more than {window} entries out of time order; raise "
                      "--reorder-window or use --spark (which sorts the whole input)")


def merge(streams: Iterable[Iterable[Entry]], batch: int = 4096) -> Iterator[Entry]:
    """k-way merge of per-file streams already in key order, each read ``batch`` entries at a
    time (see :func:`merge_batches`)."""
    def chunks(stream: Iterable[Entry]) -> Iterator[list[Entry]]:
        it = iter(stream)
        return iter(lambda: list(islice(it, batch)), [])
    for sorted_batch in merge_batches([chunks(s) for s in streams]):
        yield from sorted_batch


def merge_batches(streams: Iterable[Iterable[list[Entry]]]) -> Iterator[list[Entry]]:
    """The k-way merge of per-file streams already in key order, each given as lists of entries
    (its chunks), a sorted list at a time.

    Each stream is read a chunk at a time. Every buffered entry up to the smallest of
    the streams' last buffered keys (the frontier) is given out, sorted together: no entry still
    unread can come before the frontier (each stream's unread entries come after its last
    buffered one), and keys are unique, so the result is the full merge. The sort is timsort
    over k sorted runs, in C. Memory: one chunk per stream.
    """
    live = [iter(s) for s in streams]
    bufs: list[list[Entry]] = [[] for _ in live]
    starts = [0 for _ in live]
    while True:
        i = 0
        while i < len(live):                 # refill empty buffers; drop streams at their end
            if starts[i] == len(bufs[i]):
                chunk = next(live[i], None)
                while chunk is not None and not chunk:
                    chunk = next(live[i], None)
                if chunk is None:
                    del live[i], bufs[i], starts[i]
                    continue
                bufs[i], starts[i] = chunk, 0
            i += 1
        if not live:
            return
        frontier = min(b[-1] for b in bufs)
        out: list[Entry] = []
        for j, b in enumerate(bufs):
            k = bisect.bisect_right(b, frontier, starts[j])
            if k > starts[j]:
                out += b[starts[j]:k]
                starts[j] = k
        if len(live) > 1:
            out.sort()
        yield out


def format_entry(entry: Entry, label: str | None) -> str:
    """The entry's lines, each prefixed with ``label: `` when a label is given, joined by
    newlines (no trailing newline)."""
    if label is None:
        return "\n".join(entry.lines)
    prefix = label + ": "
    return "\n".join(prefix + line for line in entry.lines)


@dataclass
class MergeStats:
    """What a merge read and kept, per file label (warnings come from here)."""

    files: list[str] = field(default_factory=list)
    per_file: dict[str, ParseStats] = field(default_factory=dict)
    written: int = 0

    @property
    def entries(self) -> int:
        return sum(s.entries for s in self.per_file.values())

    def warnings(self) -> list[str]:
        out = []
        for label, s in self.per_file.items():
            if s.orphan_lines:
                out.append(f"warning: {label}: {s.orphan_lines} line(s) before the first timestamped "
                           "entry skipped (the file starts inside an entry: rotated mid-trace?)")
            if s.entries == 0:
                out.append(f"warning: {label}: no timestamped entries")
        return out
