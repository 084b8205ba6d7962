"""A stopped roll resumes at the broker and gate it stopped at, and never restarts a broker twice (issue 39).

The roll engine on the emulator (6 brokers with data), two brokers rolled; the emulator's record of
process starts tells how often each broker was restarted. Each case stops the roll in another way,
checks the progress file names the broker and gate, then resumes the roll with the same file:

* the action restarted the broker, then failed (ssh dropped): the resume finds it back with a new
  session and does not run the action again;
* the action stopped the broker and failed: the resume finds it down, waits at the registration gate
  and stops there, named; the operator starts it; the next resume goes on without an action;
* the roll killed while the action ran: a broker already restarting is not restarted again; one whose
  action never got to act is, after the grace wait for a restart under way (also from a progress
  file written before the roll recorded which actions it started).
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

import pytest

from procedures.batches.book import BatchState
from procedures.restart.roll import ACTION_FAILED, NOT_RUN, STARTED, BrokerNotBack, RestartActionFailed, roll_all
from tests.dags.conftest import new_chroot
from tests.rolling_restart_env import engine_roll, process_starts, start_roll_cluster

BROKERS = (3, 5)


class Killed(BaseException):
    """The task process killed mid-action: nothing after it runs (the progress file is as it was)."""


@pytest.fixture
def env(zk_server, tmp_path: Path):
    connect = zk_server.connect_string + new_chroot(zk_server)
    with ExitStack() as cleanup:
        cluster = cleanup.enter_context(start_roll_cluster(connect))
        clients = []

        def roll(action, **settings):
            r, book, client = engine_roll(connect, action, tmp_path / "progress.json", [(b,) for b in BROKERS],
                                          **settings)
            clients.append(client)
            return r, book
        yield cluster, roll
        for c in clients:
            c.stop()
            c.close()


def _restarts(cluster, starts) -> dict[int, int]:
    after = process_starts(cluster)
    return {b: after.get(b, 0) - starts.get(b, 0) for b in range(1, 7)}


def _once(cluster, starts, brokers=BROKERS) -> None:
    assert _restarts(cluster, starts) == {b: (1 if b in brokers else 0) for b in range(1, 7)}


def _restart(cluster):
    return lambda broker: (cluster.restart_process(broker), "")[1]


def test_an_action_that_restarted_the_broker_then_failed_is_not_run_again(env) -> None:
    cluster, roll = env
    starts = process_starts(cluster)

    def restart_then_drop(broker: int) -> str:
        cluster.restart_process(broker)
        if broker == BROKERS[0]:
            raise RuntimeError("ssh: connection reset by peer")
        return ""
    r, book = roll(restart_then_drop)
    with pytest.raises(RestartActionFailed, match=rf"broker {BROKERS[0]}: stopped at the restart action: it failed: "
                                                  "ssh: connection reset by peer"):
        roll_all(r, book)
    r, book = roll(_restart(cluster))
    first = book.batch(0)
    assert (first.state, first.step, first.stopped_at) == (BatchState.FAILED, ACTION_FAILED, "restart action")
    book = roll_all(r, book)
    assert book.all_done and book.batch(0).acted == {str(BROKERS[0]): NOT_RUN}
    _once(cluster, starts)


def test_a_broker_left_down_by_a_failed_action_is_awaited_not_restarted_and_the_stop_names_the_gate(env) -> None:
    cluster, roll = env
    starts = process_starts(cluster)

    def stop_then_fail(broker: int) -> str:
        cluster.shutdown_broker(broker)
        raise RuntimeError("kafka.service: start request repeated too quickly")
    r, book = roll(stop_then_fail)
    with pytest.raises(RestartActionFailed):
        roll_all(r, book)
    r, book = roll(_restart(cluster), register_timeout_s=2)
    with pytest.raises(BrokerNotBack, match=rf"broker {BROKERS[0]} did not come back: stopped at the registration "
                                            rf"gate: broker {BROKERS[0]} not registered after 2s"):
        roll_all(r, book)
    r, book = roll(_restart(cluster))
    stopped = book.batch(0)
    assert (stopped.state, stopped.stopped_at) == (BatchState.FAILED, "registration")
    assert "without restarting it again" in stopped.message and "clear" not in stopped.message
    cluster.restart_broker(BROKERS[0])            # the operator starts it by hand
    book = roll_all(r, book)
    assert book.all_done
    _once(cluster, starts)


@pytest.mark.parametrize("acted_before_kill,file_before_acted", [(True, False), (False, False), (True, True)])
def test_a_roll_killed_while_the_action_ran_restarts_each_broker_once(env, tmp_path: Path, acted_before_kill: bool,
                                                                       file_before_acted: bool) -> None:
    """``file_before_acted``: the progress file of a roll from before ``acted`` was recorded (each may have run)."""
    cluster, roll = env
    starts = process_starts(cluster)

    def killed(broker: int) -> str:
        if acted_before_kill:
            cluster.restart_process(broker)
        raise Killed()
    r, book = roll(killed)
    with pytest.raises(Killed):
        roll_all(r, book)
    if file_before_acted:
        path = tmp_path / "progress.json"
        doc = json.loads(path.read_text())
        for b in doc["batches"]:
            b.pop("acted", None)
        path.write_text(json.dumps(doc))
    r, book = roll(_restart(cluster), resume_grace_s=2)
    assert book.batch(0).acted == ({} if file_before_acted else {str(BROKERS[0]): STARTED})
    assert (book.batch(0).state, book.batch(0).step) == (BatchState.SUBMITTED, "restarting")
    book = roll_all(r, book)
    assert book.all_done
    _once(cluster, starts)
