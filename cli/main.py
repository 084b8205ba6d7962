"""``kafka-runbook``: one subcommand per module, flags mirroring Kafka's own tools.

Each command module exposes ``add_parser(subparsers)`` (which registers its parser and sets
``func``) and is imported lazily, so ``kafka-runbook topics`` does not import Spark or Airflow.
Errors of this project (:class:`kafka_zk.errors.KafkaZkError`) print one line on stderr and
exit 1; usage errors print one line too (``Error: <command>: <problem>; see --help``) and exit
2. Any other exception is a bug: it still prints one ``Error:`` line (saying it is an internal
error) and exits 3, never a traceback.

A reader that goes away (``kafka-runbook topics --describe | head -5``) is handled here, once,
as Kafka's tools handle it (their ``System.out`` is a PrintStream, which swallows the error):
output stops quietly, the command finishes what it does (a write is never left half-done
because nobody reads its report) and exits with its own status; nothing on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import select
import sys
from typing import Any, NoReturn

from spark_jobs.argv import ArgvParser

COMMANDS: dict[str, str] = {
    "topics": "cli.topics",          # kafka-topics.sh --zookeeper
    "configs": "cli.configs",        # kafka-configs.sh --zookeeper
    "reassign": "cli.reassign",      # kafka-reassign-partitions.sh (generate/execute/verify)
    "elect": "cli.elect",            # kafka-preferred-replica-election.sh
    "throttle": "cli.throttle",      # set/remove replication throttles
    "plan": "cli.plan",              # Spark plans (decommission, add-brokers, ...)
    "retiring": "cli.retiring",      # brokers drained by a decommission, left out of later plans
    "sim": "cli.sim",                # the controller emulator
    "rehearse": "cli.rehearse",      # a plan on an emulated copy of the cluster
    "restart": "cli.restart",        # rolling restart, gated on ISR health (kafka-rolling-restart)
    "state-change-logs": "cli.state_change_logs",  # kafka.tools.StateChangeLogMerger
    "verify-replicas": "cli.verify_replicas",   # kafka-replica-verification.sh (Kafka protocol)
}


class OneLineParser(ArgvParser):
    """argparse with usage errors on one line (the usage is in ``--help``), reading option values
    as typed (``spark_jobs/argv.py``)."""

    def error(self, message: str) -> "NoReturn":  # type: ignore[override]
        text = " ".join(message.split())
        self.exit(2, f"Error: {self.prog}: {text}; see {self.prog} --help\n")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


class PipeSafeStdout:
    """``sys.stdout`` whose reader may leave: on a broken pipe, stdout becomes /dev/null (so the
    interpreter's last flush cannot fail either) and every later write is dropped."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.broken = False

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._reader_left()
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._reader_left()

    def reader_gone(self) -> bool:
        """Whether stdout is a pipe whose reader has closed it."""
        try:
            poller = select.poll()
            poller.register(self._stream.fileno(), select.POLLOUT)
            return any(ev & select.POLLERR for _, ev in poller.poll(0))
        except (AttributeError, OSError, ValueError):
            return False

    def _reader_left(self) -> None:
        self.broken = True
        try:
            fd = self._stream.fileno()
        except (AttributeError, OSError, ValueError):
            return                          # not a file (a test's capture): nothing to silence
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _internal_error(exc: BaseException) -> int:
    print(f"Error: internal error {type(exc).__name__}: {_one_line(exc)[:300]} (a bug in kafka-runbook; "
          "please report it with the command line)", file=sys.stderr)
    return 3


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = OneLineParser(prog="kafka-runbook", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        if only is not None and name != only:
            continue
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        mod.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    # local: a subcommand loads only what it runs (CLI start-up)
    from kafka_zk.errors import KafkaZkError

    # kazoo logs every reconnect attempt as a warning; the command reports one clear error instead
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    argv = list(sys.argv[1:] if argv is None else argv)
    only = argv[0] if argv and argv[0] in COMMANDS else None
    args = build_parser(only).parse_args(argv)
    real_stdout = sys.stdout
    sys.stdout = out = PipeSafeStdout(real_stdout)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError as exc:            # a command writing to stdout's buffer itself
        if not out.reader_gone():
            return _internal_error(exc)
        out._reader_left()
        return 0
    except KafkaZkError as exc:
        print(f"Error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - a bug; still one line, no traceback
        return _internal_error(exc)
    finally:
        out.flush()
        sys.stdout = real_stdout


if __name__ == "__main__":
    sys.exit(main())
