"""The emulator's command channel outlives its session: once ZooKeeper expired the session the
queue listens on (an outage longer than the session timeout, or a process starved that long), the
watch it had is gone; the queue lists the commands again on the new session, so a command sent
after the expiry is still served (CI 2026-12-02: a roll's restart after a 6 s outage went
unanswered for 60 s and the roll stopped).
"""

from __future__ import annotations

from kafka_sim.control import send_command
from kafka_sim.session_close import close_session, session_ended
from tests.kafka_sim.command_server import serving_commands
from tests.kafka_sim.zk_read import wait_for


def test_a_command_sent_after_the_queues_session_expired_is_served(make_cluster, zk, zk_server):
    cluster = make_cluster(speed=20.0)
    with serving_commands(cluster):
        client = cluster.tool_client
        old = client.client_id[0]
        why = close_session(zk_server.connect_string, client.client_id, lambda: session_ended(client, old), 30)
        assert why is None, why
        wait_for(lambda: client.connected and client.client_id[0] != old, what="the queue's new session")
        send_command(zk, "kill-broker", {"broker": 3}, timeout=20)
        assert zk.exists("/brokers/ids/3") is None
