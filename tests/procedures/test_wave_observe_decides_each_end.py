"""observe(state, seen, now): each way the wait on a wave ends, pinned on the pure function.

The old ``WaveDoneTrigger.run`` loop had seven exits; each is one test here, on hand-made polls
and a clock that is only the numbers passed in (no ZooKeeper, no event loop, no sleeping). The
trigger's own tests (tests/operators/test_wave_trigger.py, test_controller_evidence.py,
test_wave_progress.py, test_stall_causes.py) run the same rules through the I/O loop.
"""

from __future__ import annotations

from kafka_zk.codecs import TopicPartition
from procedures.waves.book import FROM_LOG_SIZES, WaveBook, WaveMove, WaveProgress, WaveSpec
from procedures.waves.observe import (DIAGNOSE, END, HOLD, PAUSE, RECONNECT, Excerpt, Limits, Log, Notify, Outage,
                                      Poll, Record, Seen, WatchState, observe)
from procedures.waves.stall_causes import CONTROLLER, StallCause

T0 = 1_700_000_000.0
TP = TopicPartition("orders", 0)
BOOK = WaveBook("h" * 64, (WaveSpec(0, (WaveMove(TP, (1, 2), (3, 2), size=1000),), status="submitted",
                                    submitted_at=T0),))
MOVING = WaveProgress(0, 0, 1, 1000, 1000, ("orders-0",))
FINISHED = WaveProgress(0, 1, 1, 0, 1000)
GONE_BROKER = StallCause("orders-0", "destination broker 3 is not registered", True)


def _limits(**kw) -> Limits:
    return Limits(**{"run_id": "r", "wave_id": 0, "deadline": T0 + 3600, "poll_interval": 2.0, **kw})


def _poll(progress: WaveProgress = MOVING, **kw) -> Seen:
    fields = {"book": BOOK, "progress": progress, "still_listed": not progress.complete, "gone": (), "blocked": (),
              "sizes_note": "", "max_age_s": None, **kw}
    return Seen(poll=Poll(**fields))


def _run(state: WatchState, seen: Seen, now: float, causes=("orders-0: follower 3 is down",)):
    """One poll as the loop runs it: observe, and when asked, again with the causes read."""
    new, decision = observe(state, seen, now)
    if decision.next == DIAGNOSE:
        assert new is state                          # nothing advanced before the causes are read
        causes = tuple(StallCause(*c.split(": ", 1)) for c in causes)
        new, decision = observe(state, Seen(seen.poll, seen.outage, seen.broken, causes), now)
    return new, decision


def _texts(decision) -> list[str]:
    return [fx.text for fx in decision.effects if isinstance(fx, Log)]


def test_done_once_finished_and_no_longer_listed_and_held_back_before_not_before() -> None:
    state = WatchState.start(_limits(not_before=T0 + 5), T0)
    held, decision = observe(state, _poll(FINISHED), T0 + 2)
    assert decision.next == HOLD and decision.hold_until == T0 + 5 and decision.event is None
    _, decision = observe(held, _poll(FINISHED), T0 + 5)
    assert decision.next == END
    assert decision.event["status"] == "done" and decision.event["elapsed_s"] == 5.0
    assert decision.event["message"] == "wave 0 finished" and decision.event["done"] == 1
    _, listed = observe(state, _poll(FINISHED, still_listed=True), T0 + 9)    # complete, node still naming it
    assert listed.next == PAUSE


def test_a_deleted_topic_is_a_dead_end_at_once_with_its_causes_and_one_notification() -> None:
    state = WatchState.start(_limits(), T0)
    first, decision = observe(state, _poll(gone=("orders",)), T0 + 1)
    assert decision.next == DIAGNOSE and first is state
    _, decision = _run(state, _poll(gone=("orders",)), T0 + 1)
    assert decision.next == END and decision.event["status"] == "stalled" and decision.event["dead_end"] is True
    assert decision.event["message"] == "wave 0 cannot finish: orders-0: follower 3 is down"
    notes = [fx for fx in decision.effects if isinstance(fx, Notify)]
    assert [n.what for n in notes] == ["cannot finish"]


def test_the_deadline_ends_the_wait_with_the_stopped_partitions_and_their_causes() -> None:
    state = WatchState.start(_limits(deadline=T0 + 10), T0)
    _, decision = _run(state, _poll(), T0 + 10)
    assert decision.event["status"] == "timeout"
    assert decision.event["message"] == ("wave 0 not finished by its deadline (0/1 partitions done; still moving: "
                                         "orders-0; stopped: orders-0: follower 3 is down)")
    assert [fx.what for fx in decision.effects if isinstance(fx, Notify)] == ["was not finished by its deadline"]


def test_a_cause_waiting_cannot_clear_is_told_after_the_notice_and_ends_the_wait_after_dead_end_s() -> None:
    lim = _limits(dead_end_s=120.0, blocked_notice_s=10.0)
    state, decision = _run(WatchState.start(lim, T0), _poll(blocked=(GONE_BROKER,)), T0)
    assert decision.next == PAUSE and state.blocked_since == T0
    assert any("ending the wait if it lasts 120s more" in t for t in _texts(decision))
    state, decision = _run(state, _poll(blocked=(GONE_BROKER,)), T0 + 10)
    assert [fx.what for fx in decision.effects if isinstance(fx, Notify)] == ["is blocked"]
    state, decision = _run(state, _poll(blocked=(GONE_BROKER,)), T0 + 60)
    assert not [fx for fx in decision.effects if isinstance(fx, Notify)]        # one notification per wait
    _, decision = _run(state, _poll(blocked=(GONE_BROKER,)), T0 + 120)
    assert decision.event["status"] == "stalled" and decision.event["dead_end"] is True
    assert decision.event["message"] == ("wave 0 cannot finish as the cluster stands (for 120s): "
                                         "orders-0: destination broker 3 is not registered")
    cleared, _ = _run(state, _poll(), T0 + 61)
    assert cleared.blocked_since is None                                      # a cleared cause starts over


def test_no_progress_warns_once_with_an_excerpt_then_stalls_at_the_stall_timeout() -> None:
    lim = _limits(stall_warning_s=60.0, stall_timeout_s=300.0)
    state, decision = _run(WatchState.start(lim, T0), _poll(), T0)
    assert decision.next == PAUSE and not [fx for fx in decision.effects if isinstance(fx, (Notify, Excerpt))]
    state, decision = _run(state, _poll(), T0 + 60)
    kinds = [type(fx).__name__ for fx in decision.effects]
    assert kinds.count("Excerpt") == 1 and kinds.count("Notify") == 1
    record = next(fx for fx in decision.effects if isinstance(fx, Record))
    assert record.warn and record.quiet == 60.0 and record.causes == "orders-0: follower 3 is down"
    assert any(t.startswith("wave 0: no progress for 60s (judged from ISR joins") for t in _texts(decision))
    state, decision = _run(state, _poll(), T0 + 120)
    assert not [fx for fx in decision.effects if isinstance(fx, (Notify, Excerpt))]
    _, decision = _run(state, _poll(), T0 + 300)
    assert decision.event["status"] == "stalled" and "dead_end" not in decision.event
    assert decision.event["message"].startswith("wave 0 made no progress for 300s (0/1 done; judged from ISR joins")


def test_progress_restarts_the_stall_clock_but_a_switch_of_source_does_not() -> None:
    lim = _limits(stall_warning_s=60.0)
    state, _ = _run(WatchState.start(lim, T0), _poll(), T0)
    state, _ = _run(state, _poll(WaveProgress(0, 0, 1, 600, 1000, ("orders-0",), FROM_LOG_SIZES)), T0 + 30)
    assert state.last_change == T0                       # the same bytes read another way: nothing copied
    state, _ = _run(state, _poll(WaveProgress(0, 0, 1, 400, 1000, ("orders-0",), FROM_LOG_SIZES)), T0 + 50)
    assert state.last_change == T0 + 50


def test_a_short_zookeeper_outage_reconnects_and_a_long_one_ends_the_wait() -> None:
    state = WatchState.start(_limits(zk_outage_s=30.0), T0)
    state, _ = _run(state, _poll(), T0)
    state, decision = observe(state, Seen(outage="connection loss"), T0 + 5)
    assert decision.next == RECONNECT and state.failing_since == T0 + 5
    assert _texts(decision) == ["wave 0: ZooKeeper read failed (connection loss); retrying for up to 30s more"]
    _, decision = observe(state, Seen(outage="connection loss"), T0 + 35)
    assert decision.event["status"] == "error" and decision.event["done"] == 0     # the last progress kept
    assert decision.event["message"].startswith("ZooKeeper unreachable for 30s while waiting on wave 0")
    back, decision = _run(state, _poll(), T0 + 20)
    assert back.failing_since is None
    assert decision.effects[0] == Outage("wave 0", 15.0, "connection loss")     # the run's history names it


def test_a_failure_no_retry_clears_ends_the_wait_at_once() -> None:
    _, decision = observe(WatchState.start(_limits(), T0), Seen(broken="waves.json is missing"), T0)
    assert decision.next == END and decision.event == {"status": "error", "run_id": "r", "wave_id": 0,
                                                       "message": "waves.json is missing"}


def test_a_controller_not_acting_counts_only_on_evidence() -> None:
    slow = StallCause("orders-0", "the controller has not started the reassignment", True, CONTROLLER)
    lim = _limits(controller_evidence_s=60.0, dead_end_s=300.0)
    state, decision = _run(WatchState.start(lim, T0), _poll(blocked=(slow,), controller=1, controller_epoch=5), T0)
    assert state.blocked_since is None                    # left out: one poll is no evidence
    assert any("a forced election is advised only if it lasts 60s" in t for t in _texts(decision))
    state, decision = _run(state, _poll(blocked=(slow,), controller=1, controller_epoch=5), T0 + 60)
    assert state.blocked_since == T0 + 60                 # the same controller and epoch for 60 s: evidence
    assert any("force a controller election" in t for t in _texts(decision))
    state, _ = _run(state, _poll(blocked=(slow,), controller=2, controller_epoch=6), T0 + 62)
    assert state.blocked_since is None                    # a new controller: the count starts again


def test_observe_is_pure() -> None:
    state = WatchState.start(_limits(stall_warning_s=60.0), T0)
    seen = _poll()
    assert _run(state, seen, T0 + 61) == _run(state, seen, T0 + 61)
    assert state == WatchState.start(_limits(stall_warning_s=60.0), T0)      # the input state is never changed
