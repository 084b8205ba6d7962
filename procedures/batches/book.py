"""Batches as a batch runbook's executor sees them: their states, the allowed transitions, the progress file.

A batch runbook (``delete_topics``, ``preferred_leader_election``; ``rolling_restart`` builds on it)
works through approved batches one at a time: write one batch, wait until the cluster has acted on
it, pause, next. :class:`BatchBook` is the content of the run folder's progress file (e.g.
``deletion_progress.json``): every batch, its :class:`BatchState`, when it was submitted and done,
and the runbook's own details. It plays for batches the part :class:`procedures.waves.book.WaveBook`
plays for waves: a retried or cleared task, and the report, read the same facts from disk.

API (for a new batch runbook):

* subclass :class:`Batch` (a frozen dataclass) with the runbook's own fields (all with defaults) and
  set ``ITEMS_KEY``, the name the progress file gives the batch's items (``"topics"``);
* ``BatchBook.load(path, MyBatch, item_lists)`` — the book on disk when it holds exactly these
  batches (same items, same order), else a fresh one, every batch ``pending``;
* ``book.advance(index, to, now, **changes)`` — the one place a state changes: checked against
  :data:`ALLOWED`, the time taken from the caller's clock (never read here); ``changes`` sets the
  runbook's own fields at the same time; ``book.update(index, **changes)`` sets them without a
  state change;
* ``book.save(path)`` (atomic), ``book.next_open()``, ``book.all_done``, ``book.seconds_per_item()``
  (the slowest finished batch's seconds per item: what the window check predicts from).

States::

    PENDING ──write──▶ SUBMITTED ──acted on──▶ DONE
       │  └──── found done already ───────────▲
       └──dry run──▶ PLANNED (──found done──▶ DONE)
    SUBMITTED ──failed──▶ FAILED ──cleared task──▶ SUBMITTED / DONE

Failure: a transition :data:`ALLOWED` does not list raises :class:`IllegalBatchTransition` naming the
batch, the states and the allowed ones; a progress file that does not parse raises
:class:`~kafka_zk.errors.InvalidPayload` naming the file and the fix.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, ClassVar, Generic, Mapping, Sequence, TypeVar

from kafka_zk.errors import InvalidPayload
from kafka_zk.files import read_json, write_json_atomic


class BatchState(enum.StrEnum):
    """Where a batch stands (a ``str``: the progress file holds its value)."""

    PENDING = "pending"
    PLANNED = "planned"        # a dry run planned (and audited) its writes; nothing was written
    SUBMITTED = "submitted"    # written; the cluster is acting on it
    DONE = "done"
    FAILED = "failed"          # the cluster did not act on it in time (the message says why)


#: Every state change goes through :meth:`BatchBook.advance`, which checks this table. A retry that
#: finds its batch already written re-records ``submitted``; a cleared task resumes a failed batch.
ALLOWED: dict[BatchState, frozenset[BatchState]] = {
    BatchState.PENDING: frozenset({BatchState.PLANNED, BatchState.SUBMITTED, BatchState.DONE}),
    BatchState.PLANNED: frozenset({BatchState.PLANNED, BatchState.DONE}),   # a retried dry run finds it done
    BatchState.SUBMITTED: frozenset({BatchState.SUBMITTED, BatchState.DONE, BatchState.FAILED}),
    BatchState.FAILED: frozenset({BatchState.SUBMITTED, BatchState.DONE, BatchState.FAILED}),
    BatchState.DONE: frozenset(),
}


class IllegalBatchTransition(InvalidPayload):
    """A batch state change :data:`ALLOWED` does not list (e.g. a done batch submitted again)."""


@dataclass(frozen=True)
class Batch:
    """One batch: its items (topic names, partition keys, broker ids as text) and where it stands."""

    #: the key of the items in the progress file (a runbook's subclass names them: "topics", ...)
    ITEMS_KEY: ClassVar[str] = "items"

    index: int
    items: tuple[str, ...]
    state: BatchState = BatchState.PENDING
    submitted_at: float | None = None
    done_at: float | None = None
    message: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.state, BatchState):        # a value from a file or a caller
            object.__setattr__(self, "state", BatchState(self.state))
        object.__setattr__(self, "items", tuple(self.items))

    def advance(self, to: BatchState, now: float, **changes: Any) -> "Batch":
        """This batch in state ``to`` at epoch time ``now`` (passed in), with ``changes`` applied.

        ``submitted`` keeps the first submission time (a retry re-records it); ``done`` keeps a
        time already recorded only when the caller passes none other in ``changes``."""
        to = BatchState(to)
        allowed = ALLOWED[self.state]
        if to not in allowed:
            raise IllegalBatchTransition(
                f"batch {self.index + 1}: state {self.state.value} -> {to.value} is not allowed; allowed from "
                f"{self.state.value}: {sorted(a.value for a in allowed) or 'none (final)'}")
        stamp: dict[str, Any] = {}
        if to is BatchState.SUBMITTED:
            stamp["submitted_at"] = self.submitted_at if self.submitted_at is not None else now
        elif to is BatchState.DONE:
            stamp["done_at"] = now
        return replace(self, state=to, **{**stamp, **changes})

    @property
    def seconds(self) -> float | None:
        """How long the cluster took to act on it (``None`` until done after a submission)."""
        if self.state is not BatchState.DONE or self.submitted_at is None or self.done_at is None:
            return None
        return max(0.0, self.done_at - self.submitted_at)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            key = self.ITEMS_KEY if f.name == "items" else f.name
            doc[key] = value.value if isinstance(value, BatchState) else \
                list(value) if isinstance(value, tuple) else value
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "Batch":
        known = {f.name for f in fields(cls)}
        values = {("items" if k == cls.ITEMS_KEY else k): v for k, v in doc.items()}
        unknown = sorted(set(values) - known)
        if unknown:
            raise KeyError(f"unknown field(s) {unknown}")
        for f in fields(cls):
            if isinstance(values.get(f.name), list):
                values[f.name] = tuple(values[f.name])
        return cls(**values)


B = TypeVar("B", bound=Batch)


@dataclass(frozen=True)
class BatchBook(Generic[B]):
    """Every batch of a run and its state: the content of the run's progress file."""

    batches: tuple[B, ...]

    @classmethod
    def fresh(cls, kind: type[B], item_lists: Sequence[Sequence[str]]) -> "BatchBook[B]":
        return cls(tuple(kind(i, tuple(items)) for i, items in enumerate(item_lists)))

    def batch(self, index: int) -> B:
        if not 0 <= index < len(self.batches):
            raise InvalidPayload(f"batch {index + 1} is not in the plan (batches 1..{len(self.batches)})")
        return self.batches[index]

    def advance(self, index: int, to: BatchState, now: float, **changes: Any) -> "BatchBook[B]":
        """The book with batch ``index`` moved to ``to`` at ``now`` (:class:`IllegalBatchTransition`
        on an arrow :data:`ALLOWED` lacks)."""
        return self._with(self.batch(index).advance(to, now, **changes))

    def update(self, index: int, **changes: Any) -> "BatchBook[B]":
        """The book with the runbook's own fields of batch ``index`` changed (never its state)."""
        if "state" in changes:
            raise IllegalBatchTransition("a batch's state changes only through advance()")
        return self._with(replace(self.batch(index), **changes))

    def _with(self, b: B) -> "BatchBook[B]":
        return replace(self, batches=tuple(b if x.index == b.index else x for x in self.batches))

    def next_open(self) -> B | None:
        """The first batch not done (``None`` when every batch is)."""
        return next((b for b in self.batches if b.state is not BatchState.DONE), None)

    @property
    def all_done(self) -> bool:
        return all(b.state is BatchState.DONE for b in self.batches)

    def seconds_per_item(self) -> float | None:
        """The slowest finished batch's seconds per item (``None`` before any batch was timed)."""
        rates = [b.seconds / max(1, len(b.items)) for b in self.batches if b.seconds is not None]
        return max(rates) if rates else None

    def to_json(self) -> dict[str, Any]:
        return {"batches": [b.to_json() for b in self.batches]}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], kind: type[B], where: str = "progress file") -> "BatchBook[B]":
        try:
            return cls(tuple(kind.from_json(b) for b in doc["batches"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidPayload(f"{where}: not a batch progress file ({type(exc).__name__}: {exc}); delete it to "
                                 "start the batches from the approved plan (batches done in ZooKeeper are found "
                                 "done again)") from None

    def save(self, path: str | Path) -> None:
        write_json_atomic(path, self.to_json())

    @classmethod
    def load(cls, path: str | Path, kind: type[B], item_lists: Sequence[Sequence[str]]) -> "BatchBook[B]":
        """The book in ``path`` when it holds exactly ``item_lists`` (the approved batches), else a fresh one."""
        doc = read_json(path)
        if doc is not None:
            book = cls.from_json(doc, kind, str(path))
            if [list(b.items) for b in book.batches] == [list(items) for items in item_lists]:
                return book
        return cls.fresh(kind, item_lists)
