"""A reader that leaves early (``kafka-runbook topics --describe | head -5``) ends the output
quietly, as Kafka's tools do: no ``internal error BrokenPipeError``, nothing on stderr, the
command's own exit status; handled once in the CLI entry, so every subcommand gets it."""

import subprocess
import sys
from pathlib import Path

import pytest

from kazoo.client import KazooClient

from tests.conftest import new_chroot
from tests.zk_helpers import create_topic_by_hand, register_brokers, set_config_by_hand

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "cli.main"]


def _head(args: list[str], lines: int = 5) -> tuple[list[str], str, int]:
    """Run the CLI into a pipe, read ``lines`` lines and close the pipe, as ``head`` does."""
    proc = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    got = [proc.stdout.readline().decode() for _ in range(lines)]
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return got, err, proc.wait(timeout=120)


@pytest.fixture(scope="module")
def many_topics(zk_server):
    connect = zk_server.connect_string + new_chroot(zk_server, "/pipe")
    zk = KazooClient(hosts=connect, timeout=10)
    zk.start(timeout=10)
    try:
        register_brokers(zk, {1: "a", 2: "b", 3: "c"})
        for t in range(150):                  # ~3,000 describe lines, 150 long config lines: > a pipe's 64 KiB
            create_topic_by_hand(zk, f"topic-{t:04d}", {p: [1 + p % 3, 1 + (p + 1) % 3] for p in range(20)})
            set_config_by_hand(zk, f"topics/topic-{t:04d}", {"retention.ms": "86400000", "cleanup.policy": "delete",
                                                               "leader.replication.throttled.replicas": "*",
                                                               "message.timestamp.type": "LogAppendTime" * 30})
    finally:
        zk.stop()
        zk.close()
    return connect


@pytest.mark.parametrize("args", [["topics", "--describe"], ["configs", "--describe", "--entity-type", "topics"]])
def test_a_reader_leaving_early_is_a_quiet_exit(many_topics, args):
    got, err, code = _head([*args, "--zookeeper", many_topics])
    assert all(got) and err == "" and code == 0


def test_a_broken_pipe_that_is_not_stdout_is_still_an_error(capsys):
    from cli import main as cli_main

    out = cli_main.PipeSafeStdout(sys.stdout)
    assert not out.reader_gone()              # a capture, not a pipe: never taken for a reader leaving
    assert cli_main._internal_error(BrokenPipeError("socket")) == 3
    assert "internal error BrokenPipeError" in capsys.readouterr().err
