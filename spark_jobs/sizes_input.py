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
``kafka-runbook plan --zookeeper`` needs the checked sizes themselves, early: :func:`start` forks
a child that hands them back as soon as they are checked and only then writes the staged
``sizes.jsonl`` (0.6 s at 10⁶ partitions, off the plan's critical path); :func:`finish` waits for
that write before it keeps or removes the file.

Failure: a file in neither form, or a bad line, raises :class:`kafka_zk.errors.InvalidPayload`
naming the file and the fix; nothing is left behind.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Callable

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
    written: Callable[[], None] | None = field(default=None, compare=False, repr=False)  # waits for a staged write

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
    got = _checked(sizes, out)
    if got.staged:
        try:
            write_sizes_file(got.columns, got.path)
        except BaseException:
            _remove(got.path, got.created_out)
            raise
    return got if keep_columns else replace(got, columns=None)


def _checked(sizes: str, out: str) -> SizesInput:
    """:func:`prepare` with the columns kept, a raw output's conversion not written yet (``path``
    names where it goes, ``partitions`` is its count)."""
    started = time.monotonic()
    if sizes_form(sizes) == "partition_sizes":
        columns = read_sizes_columns(sizes)
        return SizesInput(sizes, "partition_sizes", len(columns), time.monotonic() - started, columns=columns)
    columns = log_dirs_file_columns(sizes)     # refuses anything that is not log-dirs output
    created = None if os.path.isdir(out) else out
    os.makedirs(out, exist_ok=True)
    staged = os.path.join(out, f"{CONVERTED_NAME}.staged-{os.getpid()}")
    return SizesInput(os.path.abspath(staged), "log_dirs", len(columns), time.monotonic() - started, True,
                      None if created is None else os.path.abspath(created), columns)


class SizesLater:
    """:func:`prepare` of ``--sizes`` (columns kept) under way in a forked child: :meth:`result`
    is its record once the sizes are checked, while the child may still be writing the staged
    ``sizes.jsonl``; the record's ``written`` waits for that. Whatever the child could not do
    (it raised, it died, no fork here) is done again in this process, so an error raised is the
    one :func:`prepare` raises and a file kept is complete."""

    def __init__(self, sizes: str, out: str, pid: int | None, fd: int | None) -> None:
        self.sizes, self.out, self.pid, self.fd = sizes, out, pid, fd
        self._result: SizesInput | None = None
        self._error: BaseException | None = None

    def _read(self, n: int) -> bytes:
        chunks, got = [], 0
        while got < n:
            chunk = os.read(self.fd, min(n - got, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
            os.waitpid(self.pid, 0)

    def result(self) -> SizesInput:
        if self._error is not None:
            raise self._error
        if self._result is not None:
            return self._result
        got = None
        if self.fd is not None:
            head = self._read(8)
            size = struct.unpack("<Q", head)[0] if len(head) == 8 else -1
            body = self._read(size) if size > 0 else b""
            got = pickle.loads(body) if len(body) == size else None
            if got is None:               # the child raised or died before handing the sizes back
                self._close()
        try:
            if got is None:       # here: its exception is this process's (or the child was lost)
                got = prepare(self.sizes, self.out, keep_columns=True)
            elif got.staged:
                got = replace(got, written=self._written_by_child(got))
        except BaseException as exc:
            self._error = exc
            raise
        self._result = got
        return got

    def exception(self) -> BaseException | None:
        try:
            self.result()
        except BaseException as exc:  # noqa: BLE001 - the Future-like answer
            return exc
        return None

    def _written_by_child(self, got: SizesInput) -> Callable[[], None]:
        done: list[bool] = []

        def written() -> None:
            if done:
                return
            ok = self._read(1) == b"1"
            self._close()
            if not ok:            # the child's write failed or it died: written here (its error raised)
                write_sizes_file(got.columns, got.path)
            done.append(True)
        return written


def start(sizes: str, out: str) -> SizesLater:
    """:class:`SizesLater` for ``sizes`` planned into ``out``: forked now (the process must have no
    threads yet), checked in the child; without fork, all of it when :meth:`SizesLater.result`
    is called."""
    if not (hasattr(os, "fork") and sys.platform.startswith("linux")):
        return SizesLater(sizes, out, None, None)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                        # the child: check, hand back, write, leave without cleanup
        code = 0
        try:
            os.close(r)
            try:
                got = _checked(sizes, out)
                body = pickle.dumps(replace(got, written=None), protocol=pickle.HIGHEST_PROTOCOL)
                _write_all(w, struct.pack("<Q", len(body)) + body)
                if got.staged:
                    write_sizes_file(got.columns, got.path)
                _write_all(w, b"1")
            except BaseException:       # noqa: BLE001 - the parent does it again and raises
                code = 1
        finally:
            os._exit(code)
    os.close(w)
    return SizesLater(sizes, out, pid, r)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _remove(path: str, created_dir: str | None) -> None:
    if os.path.exists(path):
        os.unlink(path)
    if created_dir and os.path.isdir(created_dir) and not os.listdir(created_dir):
        os.rmdir(created_dir)


def finish(sizes: SizesInput, succeeded: bool) -> None:
    """Keep a staged conversion as ``<out>/sizes.jsonl`` after a plan, or remove it after a failure
    (a write still under way in a child is waited for first)."""
    if not sizes.staged or not sizes.path:
        return
    if sizes.written is not None:
        try:
            sizes.written()
        except BaseException:
            if succeeded:
                _remove(sizes.path, None)
                raise
    if succeeded:
        os.replace(sizes.path, sizes.kept_path)
    else:
        _remove(sizes.path, sizes.created_out)
