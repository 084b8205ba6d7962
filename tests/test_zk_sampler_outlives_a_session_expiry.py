"""tests/zk_helpers.ZkSampler, the thread tests read ZooKeeper with while a run goes on, keeps
sampling after its session expires (what a load spike does to a starved kazoo client): the session
is expired for real, on the test ZooKeeper, by a second client that takes it over and closes it,
and the sampler sees a node created after that (:func:`kafka_sim.session_close.close_session`: the
second client always stopped, so it never goes on holding the session)."""

from __future__ import annotations

import time

from kafka_sim.session_close import close_session, session_ended
from kafka_zk.connect import parse_connect_string
from tests.zk_helpers import ZkSampler, sampling_client


def test_the_sampler_sees_nodes_created_after_its_session_expired(zk, zk_connect: str) -> None:
    seen: set[str] = set()
    sampler = ZkSampler(sampling_client(zk_connect), lambda c: seen.update(c.get_children("/")),
                        name="test-sampler")
    try:
        sampler.start()
        zk.create("/before")
        deadline = time.monotonic() + 60
        while "before" not in seen and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "before" in seen

        first = sampler.zk.client_id
        # a second client joins the session and closes it: the sampler's session is expired
        assert close_session(parse_connect_string(zk_connect).hosts_text, first,
                             lambda: session_ended(sampler.zk, first[0]), timeout=60) is None

        zk.create("/after")
        deadline = time.monotonic() + 90
        while "after" not in seen and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "after" in seen, (sampler.errors, sampler.is_alive())
        assert sampler.is_alive() and sampler.zk.client_id[0] != first[0]    # a new session, same thread
        sampler.stop()
    finally:
        sampler.close()
