"""The rolling restart's progress file (procedures/restart/roll.py): resumed when the plan is the same,
carried over in a re-plan's new order, refused when a re-plan changed the batches after brokers were
restarted (never a broker restarted twice)."""

from __future__ import annotations

import pytest

from kafka_zk.errors import InvalidInput
from procedures.batches.book import BatchState
from procedures.restart.roll import load_progress


def test_progress_follows_each_batch_into_a_new_order_and_other_batches_are_refused_once_brokers_restarted(tmp_path):
    """Re-planning in the same run folder (another controller, another order) never restarts a broker twice."""
    path = tmp_path / "restart_progress.json"
    book = load_progress(path, [(1,), (2,), (3,)])
    assert [b.items for b in book.batches] == [("1",), ("2",), ("3",)] and not path.exists()
    book.advance(0, BatchState.SUBMITTED, 1.0).save(path)
    assert load_progress(path, [(1,), (2,), (3,)]).batch(0).state is BatchState.SUBMITTED   # same plan: resumed
    reordered = load_progress(path, [(2,), (3,), (1,)])     # the controller moved: another order, same batches
    assert [(b.index, b.items, b.state) for b in reordered.batches] == [
        (0, ("2",), BatchState.PENDING), (1, ("3",), BatchState.PENDING), (2, ("1",), BatchState.SUBMITTED)]
    with pytest.raises(InvalidInput, match=r"already restarted broker\(s\) 1"):
        load_progress(path, [(2,), (3,)])
    book.save(path)                                       # nothing restarted yet: another plan is taken as is
    assert [b.items for b in load_progress(path, [(2,), (1,)]).batches] == [("2",), ("1",)]
