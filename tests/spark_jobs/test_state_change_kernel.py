"""The pure state-change log kernel: entries, topic-partitions, filters, order (no Spark, no I/O)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_zk.errors import InvalidInput
from formats.state_change_log import (
    Entry, OutOfOrder, ParseStats, compile_filter, entries_from_lines, format_entry, merge, reorder,
    topic_partitions,
)


def _entries(text: str, index: int = 0, stats: ParseStats | None = None) -> list[Entry]:
    pos, pairs = 0, []
    for line in text.split("\n"):
        pairs.append((pos, line))
        pos += len(line) + 1
    return list(entries_from_lines(pairs, index, stats or ParseStats()))


def test_stack_trace_lines_stay_with_their_entry_and_leading_orphans_are_counted() -> None:
    stats = ParseStats()
    got = _entries("orphan\n[2024-01-01 00:00:00,001] ERROR x\njava.lang.X\n\tat y\n"
                   "[2024-01-01 00:00:00,002] TRACE z", stats=stats)
    assert [e.lines for e in got] == [("[2024-01-01 00:00:00,001] ERROR x", "java.lang.X", "\tat y"),
                                      ("[2024-01-01 00:00:00,002] TRACE z",)]
    assert stats.orphan_lines == 1 and stats.entries == 2
    assert got[1].offset == len("orphan\n[2024-01-01 00:00:00,001] ERROR x\njava.lang.X\n\tat y\n")


@pytest.mark.parametrize("line, expected", [
    ("Changed partition my-topic-12 from OnlinePartition to OnlinePartition", [("my-topic", 12)]),
    ("Sent LeaderAndIsr request ... for partition being reassigned t.v2-3", [("t.v2", 3)]),
    ("Changed state of replica 4 for partition t-0 from OnlineReplica to OfflineReplica", [("t", 0)]),
    ("Mark replicas a-0,b-c-11 on broker 3 as offline", [("a", 0), ("b-c", 11)]),
    ("LeaderAndIsrPartitionState(topicName='t_x', partitionIndex=7, controllerEpoch=1)", [("t_x", 7)]),
    ("Sending UpdateMetadata request for [orders, 5]", [("orders", 5)]),
    ("[Controller id=1 epoch=3] Starting up at 2024-01-01", []),
])
def test_topic_partitions_in_kafka_2_4_and_the_tools_older_form(line: str, expected: list) -> None:
    assert topic_partitions(line) == expected


def test_filter_by_topic_regex_partitions_and_inclusive_time_range() -> None:
    f = compile_filter("or.*", "0,2", "2024-01-01 00:00:01,000", "2024-01-01 00:00:02,000")
    mk = lambda t, line: Entry(t, 0, 0, (line,))  # noqa: E731
    assert f.accepts(mk("2024-01-01 00:00:01,000", "for partition orders-2"))
    assert f.accepts(mk("2024-01-01 00:00:02,000", "for partition orders-0"))
    assert not f.accepts(mk("2024-01-01 00:00:02,001", "for partition orders-0"))
    assert not f.accepts(mk("2024-01-01 00:00:01,000", "for partition orders-1"))
    assert not f.accepts(mk("2024-01-01 00:00:01,000", "for partition xorders-0"))   # whole name
    assert not f.accepts(mk("2024-01-01 00:00:01,000", "no partition named"))
    assert compile_filter().accepts(mk("2024-01-01 00:00:01,000", "no partition named"))


@pytest.mark.parametrize("kwargs, message", [
    ({"topic": "("}, "not a valid regex"),
    ({"topic": ""}, "--topic is empty"),
    ({"partitions": "1"}, "needs --topic"),
    ({"topic": "t", "partitions": "1,x"}, "not a partition id"),
    ({"topic": "t", "partitions": "1,-2"}, "negative"),
    ({"topic": "t", "partitions": "1,2,1"}, "repeated entries: 1"),
    ({"start": "2024-01-01 00:00:00"}, "not in the format"),
    ({"start": "2024-02-30 00:00:00,000"}, "not a calendar time"),
    ({"end": "yesterday"}, "not in the format"),
    ({"start": "2024-01-02 00:00:00,000", "end": "2024-01-01 00:00:00,000"}, "is after"),
])
def test_bad_filter_options_are_refused_with_the_fix(kwargs: dict, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        compile_filter(**kwargs)


def test_quoted_times_are_accepted_as_kafkas_tool_does() -> None:
    assert compile_filter(start='"2024-01-01 00:00:00,000"').start == "2024-01-01 00:00:00,000"


_times = st.integers(0, 50).map(lambda s: f"2024-01-01 00:00:{s:02d},000")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_times, max_size=12), min_size=1, max_size=5), st.integers(1, 20))
def test_merge_of_reordered_files_is_the_full_sort_or_refused(files: list[list[str]], window: int) -> None:
    streams = [[Entry(t, i, off, (t,)) for off, t in enumerate(times)] for i, times in enumerate(files)]
    expected = sorted((e for s in streams for e in s), key=lambda e: e.key)
    try:
        got = list(merge(reorder(s, window, f"f{i}") for i, s in enumerate(streams)))
    except OutOfOrder as exc:
        assert "out of time order" in str(exc) and "--spark" in str(exc)
        return
    assert got == expected


def test_reorder_window_fixes_small_inversions() -> None:
    s = [Entry(t, 0, o, (t,)) for o, t in enumerate(["b", "a", "c", "e", "d"])]
    assert [e.time for e in reorder(s, 1, "f")] == ["a", "b", "c", "d", "e"]
    with pytest.raises(OutOfOrder, match="f: the entry at byte 3"):
        list(reorder([Entry(t, 0, o, (t,)) for o, t in enumerate(["c", "d", "e", "a"])], 2, "f"))


def test_format_prefixes_every_line_of_an_entry() -> None:
    e = Entry("t", 0, 0, ("[t] ERROR x", "java.X"))
    assert format_entry(e, "b1/state-change.log") == "b1/state-change.log: [t] ERROR x\nb1/state-change.log: java.X"
    assert format_entry(e, None) == "[t] ERROR x\njava.X"
