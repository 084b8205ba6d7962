"""A batch's state is a BatchState with one transition table, changed only through BatchBook.advance,
stamped with the caller's clock; the progress file round-trips with the runbook's own field names."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_zk.errors import InvalidPayload
from procedures.batches.book import ALLOWED, Batch, BatchBook, BatchState, IllegalBatchTransition


@dataclass(frozen=True)
class TopicBatch(Batch):
    ITEMS_KEY = "topics"
    marked: tuple[str, ...] = ()


def test_every_arrow_of_the_table_is_allowed_and_every_other_one_refused() -> None:
    for start in BatchState:
        for to in BatchState:
            batch = Batch(0, ("a",), state=start)
            if to in ALLOWED[start]:
                assert batch.advance(to, 1.0).state is to
            else:
                with pytest.raises(IllegalBatchTransition, match=f"{start.value} -> {to.value} is not allowed"):
                    batch.advance(to, 1.0)


def test_the_book_changes_one_batch_at_the_callers_time_and_round_trips_through_its_file(tmp_path) -> None:
    lists = [["a", "b"], ["c"]]
    book = BatchBook.fresh(TopicBatch, lists)
    book = book.advance(1, BatchState.SUBMITTED, 100.0, marked=("c",)).advance(1, BatchState.SUBMITTED, 130.0)
    book = book.advance(1, BatchState.DONE, 160.0)
    assert [b.state for b in book.batches] == [BatchState.PENDING, BatchState.DONE]
    assert (book.batch(1).submitted_at, book.batch(1).done_at, book.batch(1).seconds) == (100.0, 160.0, 60.0)
    path = tmp_path / "deletion_progress.json"
    book.save(path)
    doc = json.loads(path.read_text())["batches"][1]
    assert (doc["topics"], doc["state"], doc["marked"]) == (["c"], "done", ["c"])   # the runbook's own names
    again = BatchBook.load(path, TopicBatch, lists)
    assert again == book and again.next_open() == book.batch(0) and not again.all_done
    with pytest.raises(IllegalBatchTransition, match="done -> submitted"):
        again.advance(1, BatchState.SUBMITTED, 200.0)
    with pytest.raises(IllegalBatchTransition, match="only through advance"):
        again.update(0, state=BatchState.DONE)


def test_a_file_of_other_batches_is_not_resumed_and_a_garbled_one_is_refused_naming_it(tmp_path) -> None:
    path = tmp_path / "p.json"
    BatchBook.fresh(TopicBatch, [["a"]]).advance(0, BatchState.DONE, 1.0).save(path)
    assert BatchBook.load(path, TopicBatch, [["b"]]) == BatchBook.fresh(TopicBatch, [["b"]])
    path.write_text(json.dumps({"batches": [{"index": 0, "topics": ["a"], "state": "exploded"}]}))
    with pytest.raises(InvalidPayload, match=r"p\.json: not a batch progress file.*delete it"):
        BatchBook.load(path, TopicBatch, [["a"]])
    with pytest.raises(InvalidPayload, match="batch 3 is not in the plan"):
        BatchBook.fresh(TopicBatch, [["a"]]).batch(2)


def test_seconds_per_item_is_the_slowest_finished_batch() -> None:
    book = BatchBook.fresh(Batch, [["a", "b"], ["c"], ["d"]])
    assert book.seconds_per_item() is None
    book = book.advance(0, BatchState.SUBMITTED, 0.0).advance(0, BatchState.DONE, 4.0)      # 2 s per item
    book = book.advance(1, BatchState.SUBMITTED, 10.0).advance(1, BatchState.DONE, 13.0)    # 3 s per item
    book = book.advance(2, BatchState.DONE, 20.0)                                           # found done: untimed
    assert book.seconds_per_item() == 3.0 and book.all_done and book.next_open() is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(list(BatchState)), max_size=12))
def test_any_sequence_of_changes_either_follows_the_table_or_is_refused_leaving_the_book_as_it_was(steps) -> None:
    book = BatchBook.fresh(Batch, [["x"]])
    for now, to in enumerate(steps):
        before = book.batch(0)
        if to in ALLOWED[before.state]:
            book = book.advance(0, to, float(now))
            after = book.batch(0)
            assert after.state is to
            if to is BatchState.SUBMITTED:   # the first submission time is kept
                assert after.submitted_at == (before.submitted_at if before.submitted_at is not None else now)
        else:
            with pytest.raises(IllegalBatchTransition):
                book.advance(0, to, float(now))
            assert book.batch(0) == before
    # done is final: nothing leaves it
    assert ALLOWED[BatchState.DONE] == frozenset()
