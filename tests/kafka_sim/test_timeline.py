"""Move and wave spans read from the emulator's history (kafka_sim/timeline.py)."""

from __future__ import annotations

from kafka_sim.engine import SimEvent
from kafka_sim.timeline import WaveSpan, move_spans, update_detail, wave_spans


def _update(t: float, rs: list[int], ars: list[int], rrs: list[int], partition: int = 0) -> SimEvent:
    return SimEvent(t, "reassign_update", "t", partition, detail=update_detail(rs, ars, rrs))


def _done(t: float, replicas: list[int], partition: int = 0) -> SimEvent:
    return SimEvent(t, "reassign_done", "t", partition, detail=f"replicas={replicas}")


def test_a_move_spans_its_first_update_to_its_completion_and_later_b_updates_do_not_reopen_it() -> None:
    events = [_update(1.0, [1, 2, 3], [3], [1]), _update(4.0, [1, 2, 3], [3], [1]), _done(5.0, [2, 3])]
    assert move_spans(events) == {("t", 0): (1.0, 5.0)}


def test_a_completed_move_finished_again_as_a_no_op_keeps_its_span() -> None:
    # a lost connection under the node's update (B5): the controller runs B again for a partition
    # already at its target — nothing to add or remove, so no second move
    events = [_update(1.0, [1, 2, 3], [3], [1]), _done(5.0, [2, 3]), _update(9.0, [2, 3], [], []), _done(9.5, [2, 3])]
    assert move_spans(events) == {("t", 0): (1.0, 5.0)}


def test_a_partition_moved_twice_keeps_its_later_move() -> None:
    events = [_update(1.0, [1, 2, 3], [3], [1]), _done(5.0, [2, 3]),
              _update(7.0, [2, 3, 4], [4], [2]), _done(9.0, [3, 4])]
    assert move_spans(events) == {("t", 0): (7.0, 9.0)}


def test_a_wave_spans_its_earliest_opening_to_its_latest_closing() -> None:
    events = [_update(1.0, [1, 2], [2], [1], 0), _update(2.0, [1, 3], [3], [1], 1),
              _done(4.0, [2], 0), _done(6.0, [3], 1)]
    assert wave_spans(events, [[("t", 0), ("t", 1)], [("t", 9)]]) == [WaveSpan(1.0, 6.0), None]
