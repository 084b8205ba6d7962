"""The shape of every emulator write, read back from the ZooKeeper server's own transaction log.

Like the recorded vectors' ``zk_writes`` (taken from the server), this does not trust the
emulator's journal: ZooKeeper's ``TxnLogToolkit`` dumps the committed transactions, and for
each broker session (one that registered ``/brokers/ids/<id>``) every write is checked against
docs/zookeeper.md §0/§10: controller writes are 2-op multis ``[check /controller_epoch, op]``; the only
other broker writes are the registration multi, the election multi, the leader's own ISR
setData, ISR-change notifications, startup paths, ``/cluster/id`` and producer-id blocks.
"""

from __future__ import annotations

import glob
import json
import re
import subprocess

from tests.kafka_sim.zk_read import create_json, wait_for

TOOLKIT = "org.apache.zookeeper.server.persistence.TxnLogToolkit"
CLASSPATH = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-api.jar"
RECORD = re.compile(r"^\d+/\d+/\d+, .*? session (0x[0-9a-f]+) cxid 0x[0-9a-f]+ zxid (0x[0-9a-f]+) (\w+)(.*)$")
OP = re.compile(r"(check|create|setData|delete|error):[^/]*?(/[A-Za-z0-9_.\-/<>]+)")


def transactions(data_dir, chroot: str) -> list[tuple[str, str, list[tuple[str, str]], str]]:
    """(session, type, [(op, path)], raw) for every txn touching ``chroot``, in zxid order."""
    out = []
    for log in sorted(glob.glob(f"{data_dir}/data/version-2/log.*")):
        text = subprocess.run(["java", "-cp", CLASSPATH, TOOLKIT, "-d", log], capture_output=True,
                              timeout=60).stdout.decode("utf-8", "replace")
        record = None
        for line in text.splitlines():
            m = RECORD.match(line)
            if m:
                record = [m.group(1), m.group(3), m.group(4)]
                out.append(record)
            elif record is not None:
                record[2] += "\n" + line
    txns = []
    for session, kind, rest in out:
        if kind == "multi":
            ops = OP.findall(rest)
        else:
            ops = [(kind, p) for p in re.findall(r"(/[A-Za-z0-9_.\-/<>]+)", rest)[:1]]
        if any(p.startswith(chroot + "/") or p == chroot for _, p in ops):
            txns.append((session, kind, [(o, p[len(chroot):]) for o, p in ops], rest))
    return txns


def test_every_controller_write_is_a_fenced_multi(make_cluster, zk, zk_server, zk_chroot):
    cluster = make_cluster(speed=50.0)
    cluster.create_topic("f", {0: [0, 1], 1: [1, 2], 2: [2, 3]}, sizes={0: 1000})
    create_json(zk, "/admin/reassign_partitions",
                {"version": 1, "partitions": [{"topic": "f", "partition": 0, "replicas": [2, 3]}]})
    wait_for(lambda: zk.exists("/admin/reassign_partitions") is None, what="reassignment")
    create_json(zk, "/admin/preferred_replica_election",
                {"version": 1, "partitions": [{"topic": "f", "partition": 0}]})
    wait_for(lambda: zk.exists("/admin/preferred_replica_election") is None, what="election")
    cluster.kill_broker(1)
    cluster.restart_broker(1)
    cluster.move_controller()
    zk.create("/admin/delete_topics/f")
    wait_for(lambda: zk.exists("/admin/delete_topics/f") is None, what="deletion")
    assert cluster.wait_idle(20)
    cluster.stop()

    txns = transactions(zk_server.data_dir, zk_chroot)
    brokers = {s for s, kind, ops, _ in txns if kind == "multi" and ops and ops[0][1].startswith("/brokers/ids/")}
    assert len(brokers) == 5                                  # 4 brokers + broker 1's second session
    fenced = 0
    for session, kind, ops, raw in txns:
        if session not in brokers or kind in ("createSession", "closeSession", "error"):
            continue
        paths = [p for _, p in ops]
        if kind == "multi" and [o for o, _ in ops][:1] == ["check"]:
            assert len(ops) == 2 and ops[0][1] == "/controller_epoch", raw
            fenced += 1
        elif kind == "multi":
            assert [o for o, _ in ops] == ["create", "setData"], raw
            assert paths[0] == paths[1] and paths[0].startswith("/brokers/ids/") or \
                paths == ["/controller", "/controller_epoch"], raw
        elif kind == "setData":                               # leader ISR change, producer ids
            assert re.fullmatch(r"/brokers/topics/f/partitions/\d+/state", paths[0]) or \
                paths[0] == "/latest_producer_id_block", raw
        else:
            assert kind == "create", raw
            assert paths[0].startswith("/isr_change_notification/isr_change_") or paths[0] in (
                "/cluster", "/cluster/id", "/controller_epoch", "/consumers", "/brokers", "/brokers/ids",
                "/brokers/topics", "/brokers/seqid", "/config", "/config/changes", "/config/topics",
                "/config/clients", "/config/users", "/config/brokers", "/admin", "/admin/delete_topics",
                "/isr_change_notification", "/latest_producer_id_block", "/log_dir_event_notification"), raw
    assert fenced > 20
    state_writes = [json.loads(raw[raw.index("{"):raw.rindex("}") + 1]) for s, kind, ops, raw in txns
                    if s in brokers and kind == "setData" and ops[0][1].endswith("/state")]
    assert state_writes and all("leader_epoch" in w for w in state_writes)
