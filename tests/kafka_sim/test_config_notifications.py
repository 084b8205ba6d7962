"""Brokers purge ``/config/changes`` as Kafka 2.4.1 does (issue 11, item b).

Behaviour pinned: on each new notification, and at startup, every broker deletes all
notifications older than the expiry (by znode ctime), including ones it processed long ago;
the brokers race and the losers' deletes fail silently. The expiry is 15 minutes in Kafka;
the tests shorten it with ``ClusterSpec.config_notification_max_age`` (wall seconds).
"""

from __future__ import annotations

import logging
import time

from tests.kafka_sim.zk_read import wait_for, writes_to

MAX_AGE = 3.0


def _notify(zk, entity_path: str) -> str:
    return zk.create("/config/changes/config_change_", f'{{"version":2,"entity_path":"{entity_path}"}}'.encode(),
                     sequence=True)


def _wait_older_than(zk, paths: list[str], age: float) -> None:
    """Bounded wait until every path's ctime is more than ``age`` s in the past (wall clock)."""
    newest = max(zk.exists(p).ctime for p in paths) / 1000.0
    deadline = time.monotonic() + age + 10
    while time.time() - newest <= age + 0.2:
        if time.monotonic() >= deadline:   # a bounded wait, not a timing check
            raise TimeoutError(f"the notifications did not age past {age} s within {age + 10} s")
        time.sleep(0.1)


def _deletes(cluster, path: str) -> list:
    return [w for w in cluster.journal() if w.path == path and w.op == "delete"]


def test_a_new_notification_makes_every_broker_purge_old_ones_processed_long_ago(make_cluster, zk, caplog):
    cluster = make_cluster(config_notification_max_age=MAX_AGE)
    zk.ensure_path("/config/brokers")
    zk.create("/config/brokers/0", b'{"version":1,"config":{"leader.replication.throttled.rate":"1000"}}')
    before = sum(1 for e in cluster.history() if e.kind == "throttle_rates" and e.broker == 0)
    old = [_notify(zk, "brokers/0"), _notify(zk, "topics/none")]
    wait_for(lambda: sum(1 for e in cluster.history() if e.kind == "throttle_rates" and e.broker == 0) > before,
             what="broker 0 processed its notification")
    _wait_older_than(zk, old, MAX_AGE)
    cluster.wait_idle(timeout=10)
    assert all(zk.exists(p) is not None for p in old), "nothing purges without a new notification"

    caplog.set_level(logging.WARNING, logger="kafka_sim")
    new = _notify(zk, "topics/none")
    wait_for(lambda: all(zk.exists(p) is None for p in old), what="expired notifications purged")
    cluster.wait_idle(timeout=10)
    assert zk.exists(new) is not None, "a young notification stays"
    for p in old:   # four brokers raced; exactly one delete won, the others were silent
        assert len(_deletes(cluster, p)) == 1
    assert writes_to(cluster.journal(), new) == []
    assert not [r for r in caplog.records if "emulator step failed" in r.getMessage()]


def test_a_starting_broker_purges_expired_notifications(make_cluster, zk):
    zk.ensure_path("/config/changes")
    old = [_notify(zk, "topics/a"), _notify(zk, "brokers/1")]
    _wait_older_than(zk, old, MAX_AGE)
    cluster = make_cluster(config_notification_max_age=MAX_AGE)   # no new notification after this
    wait_for(lambda: all(zk.exists(p) is None for p in old), what="purged at startup")
    assert sum(len(_deletes(cluster, p)) for p in old) == 2


def test_a_purge_deletes_every_expired_notification_of_a_long_list_and_keeps_the_young_ones(make_cluster, zk):
    # the reads go a chunk at a time (8, 16, ...) and stop at the first young child: 30 expired ones
    # span three chunks; the young ones after them stay
    cluster = make_cluster(config_notification_max_age=MAX_AGE)
    zk.ensure_path("/config/topics")
    old = [_notify(zk, "topics/none") for _ in range(30)]
    _wait_older_than(zk, old, MAX_AGE)
    cluster.wait_idle(timeout=10)
    young = [_notify(zk, "topics/none") for _ in range(3)]
    wait_for(lambda: all(zk.exists(p) is None for p in old), what="30 expired notifications purged")
    cluster.wait_idle(timeout=10)
    assert all(zk.exists(p) is not None for p in young)
    assert all(len(_deletes(cluster, p)) == 1 for p in old)
