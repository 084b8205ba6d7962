"""The CLI's bad-input table (issue 12 finding 7): hundreds of refused commands, generated per
command and option, each run in-process against one seeded ZooKeeper chroot.

Every case must exit non-zero with ONE ``Error:`` line on stderr naming the problem (no
traceback, no "internal error": that is the catch-all for bugs), finish within a bound (run in
a thread that is joined with a deadline), write nothing to ZooKeeper and leave the case folder
without new files (no throttle record). "Nothing written" is checked with plain kazoo twice
over: a data watch and a child watch on every znode of the chroot, drained after each case (a
write fires one even if undone later, which a before/after diff would miss), and a full tree
dump compared before and after the table (and after any case whose watch fired, to name the
node). A full dump per case costs ~0.2 s on a loaded 2-core machine; the watches cost nothing.
A few cases go through the real entry point in a subprocess.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from cli.main import main
from kafka_sim.zookeeper_server import free_port
from kafka_zk.topic_configs import BROKER_CONFIGS, TOPIC_CONFIGS, ConfigKey
from tests.conftest import new_chroot
from tests.zk_helpers import register_brokers, set_config_by_hand, tree

CASE_DEADLINE_S = 120.0       # a refusal is immediate; this only bounds a hang so the test reports it
BIG_TOPIC = "b" * 200         # with 4,500 partitions its reassignment JSON is over 1 MB
BIG_PARTITIONS = 4_500


@dataclass(frozen=True)
class Case:
    argv: tuple[str, ...]
    expect: str               # a substring of the error naming the problem

    @property
    def id(self) -> str:
        return " ".join(a if len(a) < 40 else a[:37] + "..." for a in self.argv)[:150]


# ------------------------------------------------------------------------------ the cluster

@pytest.fixture(scope="module")
def cluster(zk_server, tmp_path_factory):
    connect = f"{zk_server.connect_string}{new_chroot(zk_server)}"
    zk = KazooClient(hosts=connect, timeout=10)
    zk.start(timeout=10)
    register_brokers(zk, {0: "a", 1: "b", 2: "c", 3: "a"})

    def topic(name: str, partitions: dict[int, list[int]]) -> None:
        zk.create(f"/brokers/topics/{name}", json.dumps(
            {"version": 1, "partitions": {str(p): r for p, r in partitions.items()}}).encode())
        set_config_by_hand(zk, f"topics/{name}", {})

    topic("my-topic", {0: [0, 1], 1: [1, 2]})
    set_config_by_hand(zk, "topics/my-topic", {"flush.messages": "1"})
    topic("to_pic", {0: [0]})
    topic("__consumer_offsets", {0: [0]})
    topic("aa-grow", {0: [0, 1]})                                   # sorted before ab-full
    set_config_by_hand(zk, "topics/aa-grow", {"flush.messages": "1"})
    topic("ab-full", {p: [1, 2] for p in range(4)})
    topic(BIG_TOPIC, {p: [0, 1, 2] for p in range(BIG_PARTITIONS)})
    set_config_by_hand(zk, "brokers/1", {"leader.replication.throttled.rate": "777"})  # a user's rate
    for p, leader, isr in ((0, 0, [0, 1]), (1, 1, [1, 2])):
        zk.create(f"/brokers/topics/my-topic/partitions/{p}/state", json.dumps(
            {"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": 0, "isr": isr}).encode(),
            makepath=True)
    files = tmp_path_factory.mktemp("bad-input-files")
    yield connect, zk, files
    zk.stop()
    zk.close()


def _write_files(d: Path) -> dict[str, str]:
    def put(name: str, data: str | bytes) -> str:
        path = d / name
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
        return str(path)

    def plan(*entries: dict) -> str:
        return json.dumps({"version": 1, "partitions": list(entries)})

    good_entry = {"topic": "my-topic", "partition": 0, "replicas": [2, 1]}
    big = plan(*({"topic": BIG_TOPIC, "partition": p, "replicas": [1, 2, 3]} for p in range(BIG_PARTITIONS)))
    assert len(big) > 1_048_576
    (d / "folder").mkdir(exist_ok=True)
    return {
        "good": put("good.json", plan(good_entry)),
        "big": put("big.json", big),
        "deep": put("deep.json", "[" * 100_000 + "]" * 100_000),
        "deep_obj": put("deep_obj.json", '{"partitions":' + "[" * 100_000 + "]" * 100_000 + "}"),
        "nonutf": put("nonutf.json", b'{"version":1,"partitions":[{"topic":"\xff","partition":0,"replicas":[1]}]}'),
        "latin1": put("latin1.json", "{\"topics\":[{\"topic\":\"caf\u00e9\"}]}".encode("latin-1")),
        "junk": put("junk.json", "{not json"),
        "empty": put("empty.json", ""),
        "array": put("array.json", "[1,2]"),
        "no_parts": put("no_parts.json", plan()),
        "version2": put("version2.json", json.dumps({"version": 2, "partitions": [good_entry]})),
        "unknown_topic": put("unknown_topic.json", plan({"topic": "nope", "partition": 0, "replicas": [1]})),
        "unknown_part": put("unknown_part.json", plan({"topic": "my-topic", "partition": 7, "replicas": [1]})),
        "dead_broker": put("dead_broker.json", plan({"topic": "my-topic", "partition": 0, "replicas": [9, 1]})),
        "dup_replicas": put("dup_replicas.json", plan({"topic": "my-topic", "partition": 0, "replicas": [1, 1]})),
        "sup_replica": put("sup_replica.json", plan({"topic": "my-topic", "partition": 0, "replicas": ["²"]})),
        "log_dirs": put("log_dirs.json", plan({**good_entry, "log_dirs": ["/data/a", "any"]})),
        "no_replicas": put("no_replicas.json", plan({"topic": "my-topic", "partition": 0})),
        "dup_parts": put("dup_parts.json", plan(good_entry, good_entry)),
        "elect_dup": put("elect_dup.json", '{"partitions":[{"topic":"my-topic","partition":1},'
                                           '{"topic":"my-topic","partition":1}]}'),
        "elect_bad": put("elect_bad.json", '{"partitions":[{"topic":"my-topic"}]}'),
        "move_dup": put("move_dup.json", '{"version":1,"topics":[{"topic":"my-topic"},{"topic":"my-topic"}]}'),
        "move_ok": put("move_ok.json", '{"version":1,"topics":[{"topic":"my-topic"}]}'),
        "move_empty": put("move_empty.json", '{"version":1,"topics":[]}'),
        "record_junk": put("record_junk.json", '{"version":1,"topics":[{"topic":1}]}'),
        "record_sup": put("record_sup.json", json.dumps({"version": 1, "topics": [], "brokers": [
            {"broker": "²", "before": {}, "ours": {"leader.replication.throttled.rate": "5"}}]})),
        "missing": str(d / "missing.json"),
        "folder": str(d / "folder"),
        "no_dir_record": str(d / "no-such-dir" / "record.json"),
        "snapshot_missing": str(d / "no-snapshot.jsonl"),
    }


# ------------------------------------------------------------------------------ the table

def _bad_values(key: ConfigKey) -> list[tuple[str, str]]:
    """Values of ``key``'s type Kafka cannot take, each with the word the error must contain."""
    kind = key.type
    if kind in ("int", "long", "short"):
        hi = {"short": 2**15 - 1, "int": 2**31 - 1, "long": 2**63 - 1}[kind]
        out = [("abc", kind.upper()), ("1.5", kind.upper()), (str(hi + 1), kind.upper()), ("²", kind.upper()),
               ("", kind.upper())]
        if key.minimum is not None:
            out.append((str(int(key.minimum) - 1), "at least"))
        return out
    if kind == "double":
        return [("nan", "DOUBLE"), ("inf", "DOUBLE"), ("-Infinity", "DOUBLE"), ("1e400", "DOUBLE"),
                ("abc", "DOUBLE"), ("1.5", "no more than"), ("-0.1", "at least")]
    if kind == "boolean":
        return [("yes", "true or false"), ("1", "true or false")]
    if key.name == "message.format.version":
        return [("2.9", "2.4 knows"), ("3.0", "2.4 knows"), ("2.4-IV9", "2.4 knows"), ("banana", "2.4 knows")]
    if key.name.endswith("throttled.replicas"):
        return [("0-1", "[partitionId]:[brokerId]"), ("²:1", "[partitionId]:[brokerId]"),
                ("0:1,x", "[partitionId]:[brokerId]")]
    if key.choices:
        return [("bogus", "must be one of")]
    raise AssertionError(f"no bad values for {key.name}")


def cases(connect: str, f: dict[str, str]) -> list[Case]:
    Z = ("--zookeeper", connect)
    out: list[Case] = []

    def add(expect: str, *argv: str) -> None:
        out.append(Case(tuple(argv), expect))

    create = ("topics", *Z, "--create")
    ok_create = ("--partitions", "1", "--replication-factor", "1")
    # --- topics --create: names, counts, configs, assignments, misplaced options
    for name in ["", ".", "..", "a" * 250, "foo\n", "foo\r", "\nfoo", "foo bar", "foo/bar", "foo,bar", "fo\u00f6",
                 "foo\t", "foo:bar", "foo*", "²", "foo\x00", "caf\u00e9", "a/../b"]:
        add("Topic name is invalid" if name else "--topic is required", *create, "--topic", name, *ok_create)
    for n, msg in [("0", "larger than 0"), ("-1", "larger than 0"), ("2147483648", "more than Kafka allows"),
                   ("2147483647", "znode limit"), (str(10**30), "more than Kafka allows"),
                   ("200000", "znode limit")]:
        add(msg, *create, "--topic", "x", "--partitions", n, "--replication-factor", "1")
    add("znode limit", *create, "--topic", "x", "--partitions", "80000", "--replication-factor", "3")
    for rf, msg in [("0", "larger than 0"), ("-1", "larger than 0"), ("5", "larger than available brokers: 4"),
                    ("2147483648", "larger than available brokers")]:
        add(msg, *create, "--topic", "x", "--partitions", "1", "--replication-factor", rf)
    for flag in ("--partitions", "--replication-factor"):
        for v in ("abc", "1.5", "", "1e3"):
            add("invalid int value", *create, "--topic", "x", *ok_create, flag, v)
    for key in sorted(TOPIC_CONFIGS):
        for value, word in _bad_values(TOPIC_CONFIGS[key]):
            add(word, *create, "--topic", "x", *ok_create, "--config", f"{key}={value}")
    for item, msg in [("foo=1", "Unknown topic config name: foo"), ("retention.MS=1", "Unknown topic config name"),
                      ("=1", "is not key=value"), ("retention.ms", "is not key=value"),
                      ("foo\n=1", "Unknown topic config name: foo"), ("foo bar=1", "Unknown topic config name: foo bar")]:
        add(msg, *create, "--topic", "x", *ok_create, "--config", item)
    for ra, msg in [("²:1", "not a ':'-separated list"), ("0:0", "duplicate entries"), ("0:9", "not registered"),
                    ("0:1,2", "different replication factor"), ("a:b", "not a ':'-separated list"),
                    ("", "required when no --replica-assignment"), (",", "not a ':'-separated list"), ("0:1:", "not a ':'-separated list"),
                    ("-1:0", "expected one argument"), ("1:-1", "not a ':'-separated list"), ("0:1,1:\u0663", "not a ':'-separated list"),
                    (",".join(["0"] * 120_000), "split into batches")]:
        add(msg, *create, "--topic", "x", "--replica-assignment", ra)
    for extra in (("--delete-config", "flush.messages"), ("--if-exists",), ("--force",),
                  ("--under-replicated-partitions",), ("--unavailable-partitions",), ("--topics-with-overrides",),
                  ("--exclude-internal",), ("--describe-format", "1.x")):
        add("can't be used with option \"[create]\"", *create, "--topic", "x", *ok_create, *extra)
    add("cannot be combined", *create, "--topic", "x", "--replica-assignment", "0:1", "--replication-factor", "1")
    add("already exists", *create, "--topic", "my-topic", *ok_create)
    add("collides with existing topics: to_pic", *create, "--topic", "to.pic", *ok_create)
    add("Missing required argument(s) --partitions", *create, "--topic", "x", "--replication-factor", "1")
    add("Missing required argument(s) --replication-factor", *create, "--topic", "x", "--partitions", "1")
    add("--topic is required", *create, *ok_create)

    # --- topics --alter: every matching topic checked before the first write
    alter = ("topics", *Z, "--alter")
    add("can only be increased", *alter, "--topic", "a.-.*", "--partitions", "3")  # aa-grow could, ab-full not
    add("Invalid config(s): flush.messages", *alter, "--topic", "a.-.*", "--delete-config", "flush.messages")
    add("can only be increased", *alter, "--topic", "my-topic", "--partitions", "1")
    add("more than Kafka allows", *alter, "--topic", "my-topic", "--partitions", "2147483648")
    add("znode limit", *alter, "--topic", "my-topic", "--partitions", "2147483647")
    add("internal topic", *alter, "--topic", "__consumer_offsets", "--partitions", "5")
    add("does not exist", *alter, "--topic", "nope", "--partitions", "5")
    add("not a valid regular expression", *alter, "--topic", "(", "--partitions", "5")
    add("needs --partitions", *alter, "--topic", "my-topic")
    add("Increasing the number of partitions by 1 but 0 assignments", *alter, "--topic", "my-topic",
        "--partitions", "3", "--replica-assignment", "0:1,1:2")
    for key in sorted(TOPIC_CONFIGS):
        value, word = _bad_values(TOPIC_CONFIGS[key])[0]
        add(word, *alter, "--topic", "my-.*", "--config", f"{key}={value}")
    for extra in (("--replication-factor", "2"), ("--if-not-exists",), ("--force",), ("--exclude-internal",),
                  ("--under-replicated-partitions",)):
        add("can't be used with option \"[alter]\"", *alter, "--topic", "my-topic", "--partitions", "5", *extra)

    # --- topics --delete / --list / --describe with options they do not take
    delete = ("topics", *Z, "--delete", "--topic", "my-topic")
    for extra in (("--config", "a=b"), ("--config", "retention.ms=1"), ("--partitions", "3"),
                  ("--replication-factor", "1"), ("--replica-assignment", "0:1"), ("--delete-config", "x"),
                  ("--if-not-exists",), ("--disable-rack-aware",), ("--exclude-internal",),
                  ("--under-replicated-partitions",), ("--describe-format", "1.x")):
        add("can't be used with option \"[delete]\"", *delete, *extra)
    add("kafka internal topic", "topics", *Z, "--delete", "--topic", "__consumer_offsets")
    add("kafka internal topic", "topics", *Z, "--delete", "--topic", "__.*|my-topic")
    add("does not exist as expected", "topics", *Z, "--delete", "--topic", "nope")
    add("not a valid regular expression", "topics", *Z, "--delete", "--topic", "[")
    for action in ("list", "describe"):
        for extra in (("--config", "a=b"), ("--partitions", "3"), ("--replication-factor", "1"),
                      ("--delete-config", "x"), ("--if-not-exists",), ("--force",), ("--disable-rack-aware",),
                      ("--replica-assignment", "0:1")):
            add(f"can't be used with option \"[{action}]\"", "topics", *Z, f"--{action}", *extra)
    add("can't be used with option \"[list]\"", "topics", *Z, "--list", "--if-exists")
    add("does not exist as expected", "topics", *Z, "--describe", "--topic", "nope")
    add("can't be used with option \"[zookeeper]\"", "topics", *Z, "--describe", "--under-min-isr-partitions")
    # --- usage errors (argparse, one line)
    add("one of the arguments", "topics", *Z)
    add("not allowed with argument", "topics", *Z, "--list", "--delete")
    add("unrecognized arguments", "topics", *Z, "--list", "--bogus")
    add("the following arguments are required: --zookeeper", "topics", "--list")
    add("invalid choice", "bogus-command")
    add("invalid choice", "topics", *Z, "--describe", "--describe-format", "3.0")
    # --- connections and timeouts
    add("is not host:port", "topics", "--zookeeper", "localhost", "--list")
    add("did not answer within 1s", "topics", "--zookeeper", f"127.0.0.1:{free_port()}", "--zk-timeout", "1",
        "--list")
    add("does not exist on", "topics", "--zookeeper", connect + "/nochroot", "--list")
    for t in ("nan", "inf", "0", "-1", "abc", "1e9"):
        add("--zk-timeout", "topics", *Z, "--zk-timeout", t, "--list")
    for zc in ("", "127.0.0.1:99999", "127.0.0.1:abc", ":2181", "127.0.0.1:2181/bad//chroot", "127.0.0.1:2181/x\n"):
        add("connect string" if "\n" not in zc else "did not answer", "topics", "--zookeeper", zc, "--zk-timeout", "1", "--list")

    # --- configs
    cfg_topic = ("configs", *Z, "--entity-type", "topics", "--entity-name", "my-topic", "--alter")
    for key in sorted(TOPIC_CONFIGS):
        for value, word in _bad_values(TOPIC_CONFIGS[key]):
            if "," in value:
                continue
            add(word, *cfg_topic, "--add-config", f"{key}={value}")
    for key in sorted(BROKER_CONFIGS):
        for value, word in _bad_values(BROKER_CONFIGS[key]):
            for entity in (("--entity-name", "1"), ("--entity-default",)):
                add(word, "configs", *Z, "--entity-type", "brokers", *entity, "--alter", "--add-config",
                    f"{key}={value}")
    for entity in ("²", "\u0663", "03", "-1", "+1", "1.0", "abc", " 1", "1 ", "2147483648", "", "1\n"):
        add("broker id", "configs", *Z, "--entity-type", "brokers", "--entity-name", entity, "--alter",
            "--add-config", "leader.replication.throttled.rate=5")
    for name in ("foo\n", "..", "a" * 250, "foo bar", ""):
        add("Topic name is invalid", "configs", *Z, "--entity-type", "topics", "--entity-name", name, "--alter",
            "--add-config", "retention.ms=5")
    add("Unknown broker config name: log.retention.ms", "configs", *Z, "--entity-type", "brokers",
        "--entity-name", "1", "--alter", "--add-config", "log.retention.ms=1")
    add("Unknown topic config name: bogus", *cfg_topic, "--add-config", "bogus=1")
    add("Invalid config(s): retention.ms", *cfg_topic, "--delete-config", "retention.ms")
    add("is not key=value", *cfg_topic, "--add-config", "min.insync.replicas")
    add("has an empty key", *cfg_topic, "--add-config", "=5")
    add('Topic "nope" does not exist', "configs", *Z, "--entity-type", "topics", "--entity-name", "nope",
        "--alter", "--add-config", "retention.ms=1")
    add("only valid with --alter", "configs", *Z, "--entity-type", "topics", "--describe", "--add-config", "a=1")
    add("only supported with --entity-type brokers", "configs", *Z, "--entity-type", "topics", "--entity-default",
        "--alter", "--add-config", "retention.ms=1")
    add("--alter needs --entity-name", "configs", *Z, "--entity-type", "topics", "--alter", "--add-config", "a=1")
    add("needs --add-config and/or --delete-config", *cfg_topic)
    add("invalid choice", "configs", *Z, "--entity-type", "users", "--describe")

    # --- reassign
    rex = ("reassign", *Z, "--execute", "--reassignment-json-file")
    bad_files = [("deep", "nested too deeply"), ("deep_obj", "nested too deeply"), ("nonutf", "not UTF-8"),
                 ("junk", "not valid JSON"), ("empty", "no data"), ("array", "expected a JSON object"),
                 ("no_parts", "cannot be empty"), ("version2", "version 2"), ("missing", "No such file"),
                 ("folder", "Is a directory"), ("no_replicas", "needs topic, partition and replicas"),
                 ("sup_replica", "expected an integer")]
    for key, msg in bad_files:
        add(msg, *rex, f[key])
        add(msg, "reassign", *Z, "--verify", "--reassignment-json-file", f[key])
        add(msg, "throttle", *Z, "--set", "--reassignment-json-file", f[key], "--throttle", "5",
            "--record", f["no_dir_record"].replace("no-such-dir/", ""))
    for key, msg in [("unknown_topic", "nope"), ("unknown_part", "my-topic-7"), ("dead_broker", "9"),
                     ("dup_replicas", "duplicate"), ("log_dirs", "log_dirs"), ("dup_parts", "my-topic-0")]:
        add(msg, *rex, f[key])
        add(msg, *rex, f[key], "--throttle", "5", "--record", str(Path(f["good"]).with_name("r.json")))
    add("over the znode limit", *rex, f["big"], "--throttle", "10", "--record",
        str(Path(f["good"]).with_name("r.json")))
    add("over the znode limit", *rex, f["big"])
    for rate, msg in [("-5", "'-5' is not a throttle"), ("0", "from 1 to"), (str(2**63), "LONG"), (str(2**64), "LONG")]:
        add(msg, *rex, f["good"], "--throttle", rate, "--record", str(Path(f["good"]).with_name("r.json")))
    add("the folder", *rex, f["good"], "--throttle", "5", "--record", f["no_dir_record"])
    add("is a folder", *rex, f["good"], "--throttle", "5", "--record", f["folder"])
    add("throttle record", *rex, f["good"], "--throttle", "5", "--record", f["record_junk"])
    add("'1.5' is not a throttle", *rex, f["good"], "--throttle", "1.5")
    add("--reassignment-json-file is required", "reassign", *Z, "--execute")
    gen = ("reassign", *Z, "--generate", "--topics-to-move-json-file")
    for bl, msg in [("²", "not a broker id"), ("\u0663", "not a broker id"), ("a", "not a broker id"),
                    ("1,1", "duplicate entries: 1"), ("-1", "not a broker id"), ("", "--broker-list is required"),
                    (",", "--broker-list is required"), ("2147483648", "broker ids are 0..")]:
        add(msg, *gen, f["move_ok"], "--broker-list", bl)
    for key, msg in [("move_dup", "duplicate entries: my-topic"), ("move_empty", "non-empty list"),
                     ("deep", "nested too deeply"), ("nonutf", "not UTF-8"), ("latin1", "not UTF-8"),
                     ("missing", "No such file"), ("folder", "Is a directory"), ("junk", "not valid JSON")]:
        add(msg, *gen, f[key], "--broker-list", "0,1")

    # --- throttle
    thr = ("throttle", *Z, "--set", "--reassignment-json-file", f["good"])
    rec = str(Path(f["good"]).with_name("r.json"))
    for rate, msg in [("-1", "LONG"), (str(2**63), "LONG"), ("abc", "'abc' is not a throttle"), ("0", "from 1 to")]:
        add(msg, *thr, "--throttle", rate, "--record", rec)
        add(msg, *thr, "--throttle", "5", "--replica-alter-log-dirs-throttle", rate, "--record", rec)
    add("the folder", *thr, "--throttle", "5", "--record", f["no_dir_record"])
    add("is a folder", *thr, "--throttle", "5", "--record", f["folder"])
    add("throttle record", *thr, "--throttle", "5", "--record", f["record_junk"])
    add("needs --reassignment-json-file, --throttle and --record", "throttle", *Z, "--set", "--throttle", "5")
    add("needs --reassignment-json-file, --throttle and --record", *thr, "--record", rec)
    add("needs --reassignment-json-file, --throttle and --record", *thr, "--throttle", "5")
    add("log_dirs", "throttle", *Z, "--set", "--reassignment-json-file", f["log_dirs"], "--throttle", "5",
        "--record", rec)
    add("needs --record", "throttle", *Z, "--remove")
    for key, msg in [("missing", "No such file"), ("folder", "Is a directory"), ("nonutf", "not UTF-8"),
                     ("deep", "throttle record"), ("junk", "throttle record"), ("record_junk", "throttle record"),
                     ("record_sup", "broker id"), ("empty", "throttle record")]:
        add(msg, "throttle", *Z, "--remove", "--record", f[key])

    # --- elect
    for key, msg in [("elect_dup", "duplicate partitions: my-topic-1"), ("elect_bad", "needs topic and partition"),
                     ("junk", "data is empty"), ("deep", "data is empty"), ("nonutf", "not UTF-8"),
                     ("missing", "No such file"), ("folder", "Is a directory"), ("empty", "data is empty")]:
        add(msg, "elect", *Z, "--path-to-json-file", f[key])
    for flag, v, msg in [("--batch-bytes", "0", "must be positive"), ("--batch-bytes", "-1", "must be positive"),
                         ("--batch-bytes", "10", "alone exceeds"), ("--batch-partitions", "0", "at least 1"),
                         ("--batch-partitions", "-3", "at least 1"), ("--batch-timeout", "nan", "--batch-timeout"),
                         ("--batch-timeout", "inf", "--batch-timeout"), ("--batch-timeout", "0", "--batch-timeout"),
                         ("--batch-timeout", "-5", "--batch-timeout"), ("--batch-bytes", "x", "invalid int value")]:
        add(msg, "elect", *Z, flag, v)

    # --- plan (all refused before a snapshot is read or Spark starts)
    out_dir = str(Path(f["good"]).with_name("plan-out"))
    for op, extra in [("decommission", ("--brokers", "1")), ("add-brokers", ("--brokers", "3")),
                      ("change-rf", ("--topics", "my-topic", "--replication-factor", "2")),
                      ("move-topics", ("--topics", "my-topic", "--brokers", "0,1")),
                      ("reassign-json", ("--reassignment-json-file", f["good"])),
                      ("election", ()), ("delete-topics", ("--topics", "my-topic"))]:
        base = ("plan", op, *extra)
        add("is a file", *base, "--snapshot", f["good"], "--out", f["good"])
        add("is a file", *base, "--snapshot", f["good"], "--out", f["good"] + "/sub")
        add("--snapshot", *base, "--snapshot", f["snapshot_missing"], "--out", out_dir)
        add("is a folder", *base, "--snapshot", f["folder"], "--out", out_dir)
        add("--sizes", *base, "--snapshot", f["good"], "--sizes", f["missing"], "--out", out_dir)
        add("LONG", *base, "--snapshot", f["good"], "--throttle", str(2**63), "--out", out_dir)
        add("--throttle", *base, "--snapshot", f["good"], "--throttle", "0", "--out", out_dir)
        add("--max-moves-per-broker", *base, "--snapshot", f["good"], "--max-moves-per-broker", "0", "--out", out_dir)
        add("--max-znode-bytes", *base, "--snapshot", f["good"], "--max-znode-bytes", "10", "--out", out_dir)
        add("--max-znode-bytes", *base, "--snapshot", f["good"], "--max-znode-bytes", str(2**40), "--out", out_dir)
        add("--max-wave-bytes", *base, "--snapshot", f["good"], "--max-wave-bytes", "0", "--out", out_dir)
    for op in ("decommission", "add-brokers"):
        for b, msg in [("²", "not a broker id"), ("", "at least one broker id"), ("1,1", "duplicate entries"),
                       ("-1", "not a broker id"), ("04", "not a broker id"), ("1,,2", "an empty entry")]:
            add(msg, "plan", op, "--brokers", b, "--snapshot", f["good"], "--out", out_dir)
    add("Topic name is invalid", "plan", "change-rf", "--topics", "my-topic,foo\n", "--replication-factor", "2",
        "--snapshot", f["good"], "--out", out_dir)
    add("--replication-factor", "plan", "change-rf", "--topics", "my-topic", "--replication-factor", "0",
        "--snapshot", f["good"], "--out", out_dir)
    add("not a valid regular expression", "plan", "delete-topics", "--topic-regex", "(", "--snapshot", f["good"],
        "--out", out_dir)
    add("--batch-size", "plan", "election", "--batch-size", "0", "--snapshot", f["good"], "--out", out_dir)
    add("--reassignment-json-file", "plan", "reassign-json", "--reassignment-json-file", f["missing"],
        "--snapshot", f["good"], "--out", out_dir)
    return out


# ------------------------------------------------------------------------------ the run

def run_in_process(argv: tuple[str, ...]) -> tuple[object, str, str, bool]:
    """``main(argv)`` in a thread with stdout/stderr captured; (exit code, out, err, finished)."""
    result: dict[str, object] = {}
    out, err = io.StringIO(), io.StringIO()

    def target() -> None:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                result["rc"] = main(list(argv))
            except SystemExit as exc:
                result["rc"] = exc.code
            except BaseException as exc:  # noqa: BLE001 - reported as the failure it is
                result["rc"] = f"raised {type(exc).__name__}: {exc}"

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(CASE_DEADLINE_S)
    return result.get("rc"), out.getvalue(), err.getvalue(), not t.is_alive()


def _files(d: Path) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*")}


class WriteWatch:
    """A data and a child watch on every znode under the client's root; :meth:`fired` drains
    kazoo's callback queue (after a sync with the leader) and says whether any fired."""

    def __init__(self, zk: KazooClient) -> None:
        self.zk, self.events = zk, []

    def _watch(self, event) -> None:
        self.events.append(f"{event.type} {event.path}")

    def arm(self) -> None:
        self.events = []
        for path in tree(self.zk):
            self.zk.get(path, watch=self._watch)
            self.zk.get_children(path, watch=self._watch)

    def fired(self) -> list[str]:
        from kazoo.protocol.states import Callback

        self.zk.sync("/")
        drained = threading.Event()
        self.zk.handler.dispatch_callback(Callback("watch", drained.set, ()))
        assert drained.wait(30)
        return list(self.events)


def test_bad_input_table(cluster):
    connect, zk, d = cluster
    f = _write_files(d)
    table = cases(connect, f)
    assert len(table) >= 300, len(table)
    assert len({c.argv for c in table}) == len(table), "duplicate cases"
    before, files_before = tree(zk), _files(d)
    watch = WriteWatch(zk)
    watch.arm()
    failures = []
    for case in table:
        rc, out, err, finished = run_in_process(case.argv)
        lines = [line for line in err.splitlines() if line.strip()]
        problems = []
        if not finished:
            problems.append(f"no answer within {CASE_DEADLINE_S:g}s")
        if not isinstance(rc, int) or rc == 0:
            problems.append(f"exit {rc!r}")
        if len(lines) != 1 or not lines[0].startswith("Error: "):
            problems.append(f"stderr is not one Error: line: {err[-400:]!r}")
        if "Traceback" in err or "internal error" in err:
            problems.append("traceback / internal error")
        if case.expect not in err:
            problems.append(f"error does not name the problem ({case.expect!r})")
        events = watch.fired()
        if events:
            now = tree(zk)
            changed = sorted(set(now) ^ set(before) | {p for p in now if p in before and now[p] != before[p]})
            problems.append(f"ZooKeeper written: {events[:5]}; changed: {changed[:5]}")
            before = now
            watch.arm()
        files_now = _files(d)
        if files_now != files_before:
            problems.append(f"files written: {sorted(files_now - files_before)[:5]}")
            files_before = files_now
        if problems:
            failures.append(f"{case.id}\n    -> {'; '.join(problems)}\n    err: {err.strip()[:300]!r}")
    assert not failures, f"{len(failures)} of {len(table)} cases failed:\n" + "\n".join(failures)
    assert tree(zk) == before


@pytest.mark.parametrize("argv,expect", [
    (["configs", "--entity-type", "topics", "--entity-name", "my-topic", "--alter", "--add-config",
      "min.cleanable.dirty.ratio=nan"], "DOUBLE"),
    (["topics", "--create", "--topic", "x", "--replica-assignment", "²:1"], "not a ':'-separated list"),
    (["topics", "--delete", "--topic", "my-topic", "--config", "a=b"], "can't be used with option"),
    (["topics", "--list", "--bogus"], "unrecognized arguments"),
])
def test_real_entry_point_refuses_on_one_line(cluster, argv, expect):
    connect, zk, _ = cluster
    before = tree(zk)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    cmd = [sys.executable, "-c", "import sys; from cli.main import main; sys.exit(main())",
           argv[0], "--zookeeper", connect, *argv[1:]]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=CASE_DEADLINE_S, env=env)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode != 0 and len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr
    assert expect in proc.stderr and "Traceback" not in proc.stderr
    assert tree(zk) == before
