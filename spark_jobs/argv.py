"""An argparse parser that reads an option's value as it was typed.

Python 3.11's argparse drops a ``--`` from option values (fixed upstream in 3.12), so
``--brokers=--`` or ``--topic-regex=--`` arrived as an empty list: refused for the wrong reason
by the CLI, and read differently by the plan job than the same text typed as a runbook's Param.
The CLI (``cli/main.py``) and the plan job (``spark_jobs/plan_job.py``) both parse with this class.
"""

from __future__ import annotations

import argparse
from typing import Any


class ArgvParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` keeping ``--opt=--`` as the text ``--``."""

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        if action.option_strings and action.nargs is None and arg_strings == ["--"]:
            # only reachable as ``--opt=--``: a separate ``--`` ends the options instead
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value
        return super()._get_values(action, arg_strings)
