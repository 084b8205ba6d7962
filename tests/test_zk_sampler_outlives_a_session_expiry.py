"""tests/zk_helpers.ZkSampler, the thread tests read ZooKeeper with while a run goes on, keeps
sampling after its session expires (what a load spike does to a starved kazoo client): the session
is expired for real, on the test ZooKeeper, by a second client that takes it over and closes it,
and the sampler sees a node created after that."""

from __future__ import annotations

import time

from kazoo.client import KazooClient

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
        thief = KazooClient(hosts=zk_connect, timeout=10, client_id=first)
        thief.start(timeout=10)
        thief.stop()                    # closes the shared session: the sampler's session is expired
        thief.close()

        zk.create("/after")
        deadline = time.monotonic() + 90
        while "after" not in seen and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "after" in seen, (sampler.errors, sampler.is_alive())
        assert sampler.is_alive() and sampler.zk.client_id[0] != first[0]    # a new session, same thread
        sampler.stop()
    finally:
        sampler.close()
