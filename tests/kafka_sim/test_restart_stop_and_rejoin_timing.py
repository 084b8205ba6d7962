"""A restarted broker stops and rejoins on Kafka 2.4.1's clock: fast when leadership moves, 16 s on the retry path.

Recorded (tests/vectors/real_kafka_2_4_1/d.json, ZooKeeper commit times): broker 2, whose leadership
(td-2) moved at once, closed its session 1.08 s after SIGTERM; broker 0, which also led ta4-1 [0,9]
(its other replica never registered, so no controlled shutdown could move it), 16.16 s after it
(3 attempts, 5 s backoff after each). A restarted broker was back in the ISRs 1.59-1.72 s after its new
registration (d and f). Durations are read from the emulator's history (simulated time, exact and
deterministic) and compared with the recording's by ratio and order, never with the wall clock.
"""

from __future__ import annotations

import json

import pytest

from kafka_sim.faults import (CONTROLLED_SHUTDOWN_BACKOFF_S, CONTROLLED_SHUTDOWN_RETRIES, CONTROLLED_SHUTDOWN_RETRY_S,
                              SHUTDOWN_EXIT_S, START_TO_REGISTRATION_S)
from kafka_sim.spec import REJOIN_FETCH
from kafka_zk.errors import InvalidInput
from tests.kafka_sim.zk_read import state, wait_for

MB = 1024 * 1024


def _recorded() -> dict[str, float]:
    """d.json's figures: each stop's SIGTERM → session closed, each restart's registration → ISR joins."""
    d = json.load(open("tests/vectors/real_kafka_2_4_1/d.json"))
    sigterm = {a["broker"]: a["t_rel"] for a in d["timeline"]
               if a["type"] == "action" and a["action"].startswith("stop broker")}
    closed = {int(w["session"].split()[1]): w["t_rel"] for w in d["zk_writes"] if w["op"] == "closeSession"}
    registered = {int(w["session"].split()[1]): w["t_rel"] for w in d["zk_writes"]
                  if w["op"] == "multi" and w["ops"][0]["path"].startswith("/brokers/ids/")}
    joins = {b: [w["t_rel"] - registered[b] for w in d["zk_writes"] if w["op"] == "setData"
                 and w["path"].endswith("/state") and w["t_rel"] > registered[b]
                 and b in w["data"]["isr"] and w["data"]["leader"] != b][:3] for b in registered}
    return {"clean_stop": closed[2] - sigterm[2], "retry_stop": closed[0] - sigterm[0],
            "rejoin_min": min(min(j) for j in joins.values()), "rejoin_max": max(max(j) for j in joins.values())}


def _events(cluster, kind: str, broker: int) -> list[float]:
    return [e.time for e in cluster.history() if e.kind == kind and e.broker == broker]


def _stopped(cluster, broker: int) -> float:
    """Simulated seconds from SIGTERM to the session's close."""
    wait_for(lambda: _events(cluster, "broker_stopped", broker), 30, f"broker {broker} to stop")
    return _events(cluster, "broker_stopped", broker)[-1] - _events(cluster, "controlled_shutdown_started", broker)[-1]


def test_the_recording_has_a_fast_clean_stop_and_a_slow_retried_one():
    rec = _recorded()
    assert 0.9 < rec["clean_stop"] < 1.3 and 15.9 < rec["retry_stop"] < 16.5, rec
    assert 1.5 < rec["rejoin_min"] <= rec["rejoin_max"] < 1.8, rec


def test_a_clean_controlled_shutdown_stops_well_under_the_retry_path(make_cluster, zk):
    rec = _recorded()
    cluster = make_cluster(speed=20.0)
    cluster.move_controller(1)
    cluster.create_topic("td", {0: [0, 3], 1: [3, 0]})
    cluster.restart_process(0)
    took = _stopped(cluster, 0)
    answers = [e.detail for e in cluster.history() if e.kind == "controlled_shutdown_answer" and e.broker == 0]
    assert answers == ["succeeded"]                            # one request, every leadership moved
    assert took == pytest.approx(SHUTDOWN_EXIT_S, abs=1e-3)
    assert 0.8 * rec["clean_stop"] <= took <= 1.2 * rec["clean_stop"]
    assert took < CONTROLLED_SHUTDOWN_RETRY_S / 10             # nowhere near the retry path
    wait_for(lambda: state(zk, "td", 0)["isr"] == [3, 0], 30, "broker 0 back in td-0's ISR")
    assert state(zk, "td", 0)["leader"] == 3                   # leadership comes back only by an election


def test_a_shutdown_that_cannot_move_a_leadership_takes_its_three_retries(make_cluster, zk):
    """tr-0's only other replica is down: the controller answers 'still led' three times (5 s apart),
    the broker sleeps once more and stops uncleanly, 16.1 s after SIGTERM; what could move, moved at once."""
    rec = _recorded()
    cluster = make_cluster(speed=20.0)
    cluster.move_controller(1)
    cluster.create_topic("td", {0: [0, 3]})
    cluster.create_topic("tr", {0: [0, 2]})
    cluster.kill_broker(2)
    wait_for(lambda: state(zk, "tr", 0)["isr"] == [0], 20, "broker 2 out of tr-0's ISR")
    cluster.restart_process(0)
    wait_for(lambda: state(zk, "td", 0)["leader"] == 3, 20, "td-0's leadership moved by the first attempt")
    took = _stopped(cluster, 0)
    started = _events(cluster, "controlled_shutdown_started", 0)[-1]
    answers = [(e.time - started, e.detail) for e in cluster.history()
               if e.kind == "controlled_shutdown_answer" and e.broker == 0]
    assert [round(t, 3) for t, _ in answers] == [i * CONTROLLED_SHUTDOWN_BACKOFF_S
                                                 for i in range(CONTROLLED_SHUTDOWN_RETRIES)]
    assert all("1 partition(s) still led: tr-0" in detail for _, detail in answers), answers
    assert took == pytest.approx(CONTROLLED_SHUTDOWN_RETRY_S, abs=1e-3)
    assert 0.95 * rec["retry_stop"] <= took <= 1.05 * rec["retry_stop"]
    wait_for(lambda: _events(cluster, "broker_started", 0), 30, "broker 0 registered again")
    back = _events(cluster, "broker_started", 0)[-1] - _events(cluster, "broker_stopped", 0)[-1]
    assert back == pytest.approx(START_TO_REGISTRATION_S, abs=1e-3)


def test_a_restarted_broker_rejoins_the_isr_after_its_first_fetch(make_cluster, zk):
    rec = _recorded()
    cluster = make_cluster(speed=20.0)
    cluster.move_controller(1)
    cluster.create_topic("td", {0: [0, 3], 1: [3, 0]})
    cluster.restart_process(0)
    wait_for(lambda: _events(cluster, "broker_started", 0), 30, "broker 0 registered again")
    wait_for(lambda: len([e for e in cluster.history() if e.kind == "isr_join" and e.broker == 0]) >= 2, 30,
             "broker 0 back in both ISRs")
    registered = _events(cluster, "broker_started", 0)[-1]
    joins = [e.time - registered for e in cluster.history() if e.kind == "isr_join" and e.broker == 0]
    assert joins == pytest.approx([REJOIN_FETCH, REJOIN_FETCH], abs=1e-3)
    assert all(rec["rejoin_min"] - 0.1 <= j <= rec["rejoin_max"] + 0.1 for j in joins), (joins, rec)
    assert state(zk, "td", 0)["isr"] == [3, 0] and state(zk, "td", 1)["isr"] == [3, 0]


def test_a_follower_that_missed_data_rejoins_only_after_copying_it(make_cluster, zk):
    """With producers writing, the first fetch starts the copy of what it missed; the join waits for its catch-up."""
    cluster = make_cluster(speed=20.0, network_rate=4 * MB, produce_rate=1 * MB)
    cluster.move_controller(1)
    cluster.create_topic("td", {0: [3, 0]})
    cluster.restart_process(0)
    wait_for(lambda: [e for e in cluster.history() if e.kind == "isr_join" and e.broker == 0], 60,
             "broker 0 back in td-0's ISR")
    registered = _events(cluster, "broker_started", 0)[-1]
    caught = [e.time for e in cluster.history() if e.kind == "caught_up" and e.broker == 0][-1]
    joined = [e.time for e in cluster.history() if e.kind == "isr_join" and e.broker == 0][-1]
    stopped_fetching = _events(cluster, "controlled_shutdown_started", 0)[-1]
    first_fetch = registered + REJOIN_FETCH
    missed = 1 * MB * (first_fetch - stopped_fetching)          # the leader's growth while it did not fetch
    assert caught == pytest.approx(first_fetch + missed / (4 * MB - 1 * MB), rel=0.02)
    assert registered < first_fetch < caught <= joined


def test_a_broker_already_stopping_is_not_restarted_twice(make_cluster, zk):
    cluster = make_cluster(speed=5.0)
    cluster.move_controller(1)
    cluster.create_topic("tr", {0: [0, 2]})
    cluster.kill_broker(2)
    wait_for(lambda: state(zk, "tr", 0)["isr"] == [0], 20, "broker 2 out of tr-0's ISR")
    cluster.restart_process(0)                                 # the retry path: ~16 s of simulated time
    with pytest.raises(InvalidInput, match="broker 0 is not running \\(or already stopping\\)"):
        cluster.restart_process(0)


def test_the_cluster_is_not_idle_while_a_restarted_broker_has_yet_to_fetch(make_cluster, zk):
    """wait_idle waits for the rejoin: at a slow clock the first fetch is seconds away; idle means the ISR is whole."""
    cluster = make_cluster(speed=1.0, rejoin_fetch_s=1.0)
    cluster.move_controller(1)
    cluster.create_topic("td", {0: [3, 0]})
    cluster.kill_broker(0)
    wait_for(lambda: state(zk, "td", 0)["isr"] == [3], 20, "broker 0 out of td-0's ISR")
    cluster.restart_broker(0)
    assert cluster.wait_idle(30)
    assert state(zk, "td", 0)["isr"] == [3, 0]
