"""``kafka-runbook``: one subcommand per module, flags mirroring Kafka's own tools.

Each command module exposes ``add_parser(subparsers)`` (which registers its parser and sets
``func``) and is imported lazily, so ``kafka-runbook topics`` does not import Spark or Airflow.
Errors of this project (:class:`kafka_zk.errors.KafkaZkError`) print one line on stderr and
exit 1; usage errors print one line too (``Error: <command>: <problem>; see --help``) and exit
2. Any other exception is a bug: it still prints one ``Error:`` line (saying it is an internal
error) and exits 3, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from typing import NoReturn

COMMANDS: dict[str, str] = {
    "topics": "cli.topics",          # kafka-topics.sh --zookeeper
    "configs": "cli.configs",        # kafka-configs.sh --zookeeper
    "reassign": "cli.reassign",      # kafka-reassign-partitions.sh (generate/execute/verify)
    "elect": "cli.elect",            # kafka-preferred-replica-election.sh
    "throttle": "cli.throttle",      # set/remove replication throttles
    "plan": "cli.plan",              # Spark plans (decommission, add-brokers, ...)
    "sim": "cli.sim",                # the controller emulator
    "state-change-logs": "cli.state_change_logs",  # kafka.tools.StateChangeLogMerger
    "verify-replicas": "cli.verify_replicas",   # kafka-replica-verification.sh (Kafka protocol)
}


class OneLineParser(argparse.ArgumentParser):
    """argparse with usage errors on one line (the usage is in ``--help``)."""

    def error(self, message: str) -> "NoReturn":  # type: ignore[override]
        text = " ".join(message.split())
        self.exit(2, f"Error: {self.prog}: {text}; see {self.prog} --help\n")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


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
    from kafka_zk.errors import KafkaZkError

    # kazoo logs every reconnect attempt as a warning; the command reports one clear error instead
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    argv = list(sys.argv[1:] if argv is None else argv)
    only = argv[0] if argv and argv[0] in COMMANDS else None
    args = build_parser(only).parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KafkaZkError as exc:
        print(f"Error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - a bug; still one line, no traceback
        print(f"Error: internal error {type(exc).__name__}: {_one_line(exc)[:300]} (a bug in kafka-runbook; "
              "please report it with the command line)", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
