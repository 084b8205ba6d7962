"""How the plan job gets its ``--sizes``: checked in the driver, then a ``sizes.jsonl`` for Spark.

``--sizes`` takes either form, told by content (:func:`formats.sizes_file.sizes_form`):

* a ``sizes.jsonl`` (what the snapshot step writes into the run folder): checked line by line
  in the driver (every line well formed, no partition twice) and read by Spark as it is;
* raw ``kafka-log-dirs.sh --describe`` output: one JSON document (one ~240 MB line at 10⁶
  partitions × RF 3) that Spark could only parse in one task. The driver reduces it to
  per-partition sizes (:mod:`kafka_zk.log_dirs`) and stages them as ``sizes.jsonl.staged-<pid>``
  in ``--out``, the folder the artifacts go to; Spark reads that. When the plan succeeds it
  becomes ``<out>/sizes.jsonl`` (the exact sizes the plan was made from, reusable as
  ``--sizes``); when anything fails it is removed (with ``--out`` itself if this created it).

So Spark reads sizes one way only, split across tasks. :func:`prepare` needs no Spark: the plan
job runs it in a child process while the session starts (it returns only this small record).

Failure: a file in neither form, or a bad line, raises :class:`kafka_zk.errors.InvalidPayload`
naming the file and the fix; nothing is left behind.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from kafka_zk.log_dirs import PartitionSizes
from formats.sizes_file import log_dirs_file_columns, read_sizes_columns, sizes_form, write_sizes_file

CONVERTED_NAME = "sizes.jsonl"


@dataclass(frozen=True)
class SizesInput:
    """The ``sizes.jsonl`` Spark reads for ``--sizes`` (``path`` None without sizes)."""

    path: str | None
    form: str | None            # "partition_sizes" or "log_dirs", as the given file was
    partitions: int
    seconds: float              # time spent in the driver telling, checking, converting
    staged: bool = False        # converted into --out by this job: kept or removed at the end
    created_out: str | None = None
    columns: PartitionSizes | None = None    # the checked sizes, kept when the driver reads the input

    @property
    def kept_path(self) -> str | None:
        """Where a staged conversion ends up when the plan succeeds."""
        return os.path.join(os.path.dirname(self.path), CONVERTED_NAME) if self.staged and self.path else None


NO_SIZES = SizesInput(None, None, 0, 0.0)


def prepare(sizes: str | None, out: str, keep_columns: bool = False) -> SizesInput:
    """Tell, check and (for raw output) convert ``sizes`` for a plan written to ``out``; with
    ``keep_columns`` the checked sizes come back too (the in-driver reader joins them)."""
    if not sizes:
        return NO_SIZES
    started = time.monotonic()
    form = sizes_form(sizes)
    if form == "partition_sizes":
        columns = read_sizes_columns(sizes)
        return SizesInput(sizes, form, len(columns), time.monotonic() - started,
                          columns=columns if keep_columns else None)
    columns = log_dirs_file_columns(sizes)     # refuses anything that is not log-dirs output
    created = None if os.path.isdir(out) else out
    staged = os.path.join(out, f"{CONVERTED_NAME}.staged-{os.getpid()}")
    try:
        os.makedirs(out, exist_ok=True)
        n = write_sizes_file(columns, staged)
    except BaseException:
        _remove(staged, created)
        raise
    return SizesInput(os.path.abspath(staged), form, n, time.monotonic() - started, True,
                      None if created is None else os.path.abspath(created), columns if keep_columns else None)


def _remove(path: str, created_dir: str | None) -> None:
    if os.path.exists(path):
        os.unlink(path)
    if created_dir and os.path.isdir(created_dir) and not os.listdir(created_dir):
        os.rmdir(created_dir)


def finish(sizes: SizesInput, succeeded: bool) -> None:
    """Keep a staged conversion as ``<out>/sizes.jsonl`` after a plan, or remove it after a failure."""
    if not sizes.staged or not sizes.path:
        return
    if succeeded:
        os.replace(sizes.path, sizes.kept_path)
    else:
        _remove(sizes.path, sizes.created_out)
