"""Every CLI test runs three times: on ZooKeeper 3.8 directly and through the proxies that make
it look like 3.5 and 3.4 (tests/zk_proxy.py). ``zk`` (the plain kazoo client tests read back
with) always talks to the real server directly; ``zk_connect`` is what the CLI is given.

``kafka-runbook plan --zookeeper`` reads the runbooks' retiring-brokers file by default; each CLI
test gets its own (absent) one, so a file left under the default run root by anything else on the
machine cannot change a plan (the emulator's cluster id is seeded, hence the same across runs).
"""

from __future__ import annotations

from typing import Iterator

import pytest
from kazoo.client import KazooClient


@pytest.fixture(params=["3.8", "3.5", "3.4"])
def zk_connect(request, zk_server, zk_chroot: str, zk_proxies) -> Iterator[str]:
    if request.param == "3.8":
        yield f"{zk_server.connect_string}{zk_chroot}"
        return
    proxy = zk_proxies[request.param]
    before = len(proxy.refused)
    yield f"{proxy.hosts}{zk_chroot}"
    assert proxy.refused[before:] == [], f"ZooKeeper {proxy.mode} would have closed the session"


@pytest.fixture
def zk(zk_server, zk_chroot: str) -> Iterator[KazooClient]:
    client = KazooClient(hosts=f"{zk_server.connect_string}{zk_chroot}", timeout=10)
    client.start(timeout=10)
    yield client
    client.stop()
    client.close()


@pytest.fixture(autouse=True)
def own_retiring_file(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KAFKA_RUNBOOKS_RETIRING_FILE", str(tmp_path / "retiring_brokers_of_this_test.json"))
