"""The emulator's state-change.log files: Kafka 2.4's lines for a reassignment with a broker
killed mid-way and a topic deletion, one file per broker, merged by the CLI.

The controller's file is checked line by line against a golden file (times masked: the
simulated clock's wall-time pacing varies); the merge of all files is checked for time order,
completeness and the filters.
"""

from __future__ import annotations

import re
from pathlib import Path

from cli.main import main
from tests.kafka_sim.zk_read import create_json, topic, wait_for

GOLDEN = Path(__file__).parent / "golden" / "state_change_controller_4.log"
START = 1714557600.0           # 2024-05-01 10:00:00 UTC = simulated second 0
TIME = re.compile(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3})\] ")


def _mask(text: str) -> str:
    return re.sub(TIME.pattern, "[T] ", text, flags=re.M)


def test_reassignment_with_a_killed_leader_and_a_deletion_are_logged_as_kafka_2_4_does(
        make_cluster, zk, tmp_path: Path, capsys) -> None:
    logs = tmp_path / "logs"
    cluster = make_cluster(brokers={1: "a", 2: "b", 3: "c", 4: "a"}, speed=100.0,
                           state_change_logs=str(logs), log_start=START)
    cluster.move_controller(4)
    cluster.create_topic("orders", {0: [1, 2, 3], 1: [2, 3, 4]}, sizes={0: 50 * 1024 ** 3, 1: 1000})
    cluster.create_topic("old", {0: [2, 3]}, sizes={0: 1000})
    create_json(zk, "/admin/reassign_partitions",
                {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [2, 3, 4]}]})
    wait_for(lambda: topic(zk, "orders").get("adding_replicas", {}).get("0") == [4], 20, "phase A")
    cluster.kill_broker(1)
    wait_for(lambda: zk.exists("/admin/reassign_partitions") is None, 60, "the reassignment to finish")
    create_json(zk, "/admin/delete_topics/old", None)
    wait_for(lambda: zk.exists("/brokers/topics/old") is None, 30, "topic old to be deleted")
    assert cluster.wait_idle(30)
    cluster.stop()

    files = sorted(logs.glob("broker-*/state-change.log"))
    assert [f.parent.name for f in files] == ["broker-1", "broker-2", "broker-3", "broker-4"]
    controller = (logs / "broker-4" / "state-change.log").read_text()
    assert _mask(controller) == GOLDEN.read_text()
    # the killed broker logged nothing after its death: its last line is before the kill's lines
    assert "Changed state of replica 1 for partition orders-0 from OnlineReplica to OfflineReplica" in controller
    assert "Handling stop replica (delete=true) for partition old-0" in (logs / "broker-2" / "state-change.log").read_text()

    rc = main(["state-change-logs", "--logs-regex", f"{logs}/broker-.*", "--no-prefix"])
    # --logs-regex names files of ONE folder, as in Kafka's tool: here only folders match
    assert rc == 1 and "matches no file" in capsys.readouterr().err
    rc = main(["state-change-logs", "--logs", f"{logs}/broker-*/state-change.log"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    lines = out.splitlines()
    per_file = {str(f): f.read_text().splitlines() for f in files}
    assert sum(map(len, per_file.values())) == len(lines)
    times = [TIME.match(line.split(": ", 1)[1]).group(1) for line in lines]
    assert times == sorted(times) and times[0].startswith("2024-05-01 10:")
    for f, own in per_file.items():            # each file's lines keep their order in the merge
        assert [line.split(": ", 1)[1] for line in lines if line.startswith(f + ": ")] == own

    rc = main(["state-change-logs", "--logs", f"{logs}/broker-*/state-change.log", "--topic", "ord.*",
               "--partitions", "0", "--no-prefix"])
    out, _ = capsys.readouterr()
    assert rc == 0 and out and all("orders-0" in line or "topicName='orders', partitionIndex=0" in line
                                   for line in out.splitlines())
    assert "partition being reassigned orders-0" in out and "old-0" not in out
