"""The in-process merge's fast paths give exactly what the plain ones give: the block reader of
whole files (ASCII blocks cut by one regex scan, other blocks line by line) the same entries,
offsets and counts as the line reader, at every block size; the sorted-list reorder (entry by
entry or chunk by chunk) the same entries, order and refusals as a heap of the same window; the
batched k-way merge the full sort."""

from __future__ import annotations

import heapq
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formats import state_change_files as files
from formats.state_change_log import (Entry, OutOfOrder, ParseStats, entries_from_lines, merge, merge_batches,
                                       reorder, reorder_chunks)

HEADER = st.builds(lambda s, m: f"[2024-05-01 10:{s:02d}:{s:02d},{m:03d}] TRACE x", st.integers(0, 59),
                   st.integers(0, 999))
LINE = st.one_of(
    HEADER,
    st.sampled_from(["\tat kafka.Foo(Foo.scala:1)", "", "java.lang.X: boom", "2024-05-01 10:00:00,000 bare",
                     "[2024-05-01 10:00:0x,000] not a time", "caf\u00e9 \u2603", "trailing\r", "\r"]),
    st.text(alphabet=st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)), max_size=12),
)


def _by_lines(data: bytes) -> tuple[list[Entry], ParseStats]:
    stats = ParseStats()
    return list(entries_from_lines(files._lines(io.BytesIO(data), 0), 3, stats)), stats


def _by_blocks(data: bytes) -> tuple[list[Entry], ParseStats]:
    stats = ParseStats()
    return list(files._whole_file_entries(io.BytesIO(data), 3, stats)), stats


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=40), st.booleans(), st.integers(min_value=1, max_value=200),
       st.sampled_from(["utf-8", "latin-1"]))
def test_the_block_reader_gives_the_line_readers_entries_at_any_block_size(lines, newline_at_end, block,
                                                                          encoding):
    text = "\n".join(lines) + ("\n" if newline_at_end and lines else "")
    data = text.encode(encoding, "replace")
    old = files._BLOCK
    files._BLOCK = block
    try:
        got, got_stats = _by_blocks(data)
    finally:
        files._BLOCK = old
    want, want_stats = _by_lines(data)
    assert got == want
    assert (got_stats.orphan_lines, got_stats.entries) == (want_stats.orphan_lines, want_stats.entries)


def _heap_reorder(entries, window):
    heap, last = [], None
    for e in entries:
        heapq.heappush(heap, e)
        if len(heap) > window:
            out = heapq.heappop(heap)
            if last is not None and out < last:
                raise OutOfOrder("")
            last = out
            yield out
    while heap:
        out = heapq.heappop(heap)
        if last is not None and out < last:
            raise OutOfOrder("")
        last = out
        yield out


def _run(gen):
    got = []
    try:
        for e in gen:
            got.append(e)
    except OutOfOrder:
        return got, True
    return got, False


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 30), max_size=80), st.integers(min_value=1, max_value=12))
def test_the_sorted_list_reorder_is_the_heap_reorder(times, window):
    entries = [Entry(f"{t:03d}", 0, off, (str(t),)) for off, t in enumerate(times)]
    assert _run(reorder(iter(entries), window, "f")) == _run(_heap_reorder(iter(entries), window))


def test_a_long_file_in_order_keeps_the_held_list_short():
    entries = (Entry(f"{i:09d}", 0, i, ("x",)) for i in range(50_000))
    assert [e.offset for e in reorder(entries, 100, "f")] == list(range(50_000))


@pytest.mark.parametrize("block", [7, 64, 1 << 20])
def test_a_gzip_file_and_its_plain_copy_read_the_same(tmp_path, block):
    import gzip
    text = "orphan\n" + "".join(f"[2024-05-01 10:00:{i % 60:02d},000] TRACE e{i}\n\tat x\n" for i in range(300))
    plain, packed = tmp_path / "a.log", tmp_path / "a.log.gz"
    plain.write_text(text)
    with gzip.open(packed, "wt") as fh:
        fh.write(text)
    old = files._BLOCK
    files._BLOCK = block
    try:
        logs = files.check_files([str(plain), str(packed)])
        a, b = ParseStats(), ParseStats()
        ea, eb = list(files.read_split(logs[0], 0, None, a)), list(files.read_split(logs[1], 0, None, b))
    finally:
        files._BLOCK = old
    assert [(e.time, e.offset, e.lines) for e in ea] == [(e.time, e.offset, e.lines) for e in eb]
    assert (a.orphan_lines, a.entries) == (b.orphan_lines, b.entries) == (1, 300)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.integers(0, 40), max_size=30), max_size=6), st.integers(min_value=1, max_value=8))
def test_the_batched_merge_is_the_full_sort_at_any_batch_size(files_times, batch):
    streams = [sorted(Entry(f"{t:03d}", i, off, (str(t),)) for off, t in enumerate(times))
               for i, times in enumerate(files_times)]
    everything = sorted(e for s in streams for e in s)
    assert list(merge([iter(s) for s in streams], batch)) == everything
    chunked = [iter([s[i:i + batch] for i in range(0, len(s), batch)] + [[]]) for s in streams]   # empty chunks too
    batches = list(merge_batches(chunked))
    assert [e for b in batches for e in b] == everything and all(batches)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 30), max_size=80), st.integers(min_value=1, max_value=12),
       st.lists(st.integers(min_value=0, max_value=9), min_size=1, max_size=20))
def test_reordering_chunks_is_the_heap_reorder_whatever_the_chunking(times, window, sizes):
    entries = [Entry(f"{t:03d}", 0, off, (str(t),)) for off, t in enumerate(times)]
    chunks, at, k = [], 0, 0
    while at < len(entries):
        n = sizes[k % len(sizes)]
        if n == 0:                          # an empty chunk (a block whose entries were all filtered out)
            chunks.append([])
            n = 1
        chunks.append(entries[at:at + n])
        at, k = at + n, k + 1
    got, raised = [], False
    try:
        for chunk in reorder_chunks(iter(chunks), window, "f"):
            assert chunk
            got.extend(chunk)
    except OutOfOrder:
        raised = True
    assert (got, raised) == _run(_heap_reorder(iter(entries), window))
