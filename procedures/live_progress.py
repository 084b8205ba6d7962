"""The live progress of a run — its waves, or its batches — read from its run folder, and the page.

While a wave copies, the wait records its last poll with :func:`procedures.waves.poll_record.record_poll`
in the run folder's ``live_progress.json`` (one entry per wave: partitions done, bytes remaining of
the planned bytes, what the bytes were judged from, the measured rate, the throttle in force, how
long nothing moved and, when it stalls, the cause). :func:`run_progress` reads that file with
``waves.json`` (statuses and times), the plan's ``plan/waves.json`` (predicted seconds per wave),
``windows.json`` (window pauses, ``outside_window``) and ``wave_failure.json`` (the cause a wait
ended on) into a :class:`RunProgress`, which :func:`render_progress_page` shows as HTML: a bar per
wave, predicted against measured rate, the ETA of the wave and of the run. The reports app serves it
at ``/kafka-runbooks/runs/<dag>/<run>/progress`` (:mod:`operators.reports.app`).

The ETA of the running wave is what remains at the measured rate (else the plan's prediction less
the time spent); the run's ETA adds the pending waves' predictions scaled by how the finished waves
compared with theirs. Without sizes (no ``sizes_file``) bytes are unknown: the page counts
partitions and says so, never "remaining of 0 B".

A batch runbook (``delete_topics``, ``preferred_leader_election``, ``rolling_restart``) has no waves:
:func:`batch_progress` reads its progress file (:data:`BATCH_FILES`) into a :class:`BatchProgress`,
one row per batch (state, items, how long the cluster took, the runbook's own figure) and, for the
roll, each broker batch's steps (stopped, registered, in sync, leaders back) with ZooKeeper's times.
A run that has ended says so ("finished"), whatever it got to.

Failure: a file that is not JSON raises :class:`~kafka_zk.errors.InvalidPayload` naming it (the
page then answers 500 with that text); missing files mean "not yet" (a run before its first wave).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_zk.errors import InvalidPayload
from kafka_zk.files import read_json
from procedures.run_folder import RunFolder
from procedures.waves.book import DONE, SUBMITTED, human_bytes
from procedures.waves.poll_record import FILE
from procedures.reports.locations import TEMPLATES

REFRESH_S = 5


@dataclass(frozen=True)
class WaveRow:
    """One wave on the page."""

    id: int
    status: str
    done: int
    total: int
    bytes_total: int
    bytes_remaining: int | None          # None: unknown (no sizes, or not measured yet)
    predicted_s: float | None
    measured_rate: float | None          # bytes/s over the wave so far (or over all of it when done)
    predicted_rate: float | None
    eta_s: float | None
    throttle_bps: int | None
    source: str = ""
    stall: str = ""

    @property
    def fraction(self) -> float:
        if self.status == DONE:
            return 1.0
        if self.bytes_total and self.bytes_remaining is not None:
            return max(0.0, min(1.0, 1 - self.bytes_remaining / self.bytes_total))
        return self.done / self.total if self.total else 0.0


@dataclass(frozen=True)
class RunProgress:
    """Every wave of a run and the run's figures (see module docstring)."""

    waves: tuple[WaveRow, ...]
    sized: bool
    eta_s: float | None
    factor: float | None                 # measured / predicted duration over the finished waves
    pauses: tuple[dict[str, Any], ...] = ()
    outside_window: bool = False
    failure: str = ""
    updated: float | None = None
    stalls: tuple[str, ...] = field(default=())

    @property
    def started(self) -> bool:
        return bool(self.waves)

    @property
    def partitions(self) -> tuple[int, int]:
        return sum(w.done for w in self.waves), sum(w.total for w in self.waves)


def _predicted(folder: RunFolder) -> dict[int, float]:
    doc = read_json(folder.plan_dir / "waves.json") or {}
    return {int(w.get("index", i)): float(w["predicted_seconds"]) for i, w in enumerate(doc.get("waves") or [])
            if isinstance(w, dict) and w.get("predicted_seconds") is not None}


@dataclass(frozen=True)
class _Wave:
    """What the page needs of one wave of ``waves.json``."""

    id: int
    status: str
    submitted_at: float | None
    done_at: float | None
    moves: int
    bytes_total: int                 # planned bytes: size x new replicas, as WaveSpec.bytes_total


_BOOKS: dict[str, tuple[tuple[int, int], tuple[_Wave, ...]]] = {}   # path -> (mtime_ns, size) and the waves


def _waves(path: Path) -> tuple[_Wave, ...] | None:
    """The waves of ``waves.json``, read straight from its JSON (no per-move objects) and again only
    when the file changed: a page refreshing every few seconds re-reads a file that changes only
    when a wave starts or ends, and a 100k-partition plan is large. Not a wave file:
    :class:`InvalidPayload` naming it."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    key = (st.st_mtime_ns, st.st_size)
    hit = _BOOKS.get(str(path))
    if hit is not None and hit[0] == key:
        return hit[1]
    doc = read_json(path)
    if doc is None:
        return None
    try:
        waves = tuple(_Wave(int(w["id"]), str(w["status"]), w.get("submitted_at"), w.get("done_at"), len(w["moves"]),
                            sum(int(m.get("size", 0)) * sum(1 for b in m["target"] if b not in m["current"])
                                for m in w["moves"]))
                      for w in doc["waves"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidPayload(f"{path}: not a wave progress file ({type(exc).__name__}: {exc})") from None
    if len(_BOOKS) >= 64:
        _BOOKS.pop(next(iter(_BOOKS)))
    _BOOKS[str(path)] = (key, waves)
    return waves


#: The batch runbooks' progress files (:mod:`operators.batches`, :mod:`operators.restart`): file -> what a
#: batch's items are and the key they are listed under.
BATCH_FILES = {"deletion_progress.json": ("topic", "topics"), "election_progress.json": ("partition", "partitions"),
               "restart_progress.json": ("broker", "brokers")}
#: The roll's steps per batch as the page shows them: label -> the progress file's time of it.
ROLL_STEPS = (("stopped", "down_at"), ("registered", "registered_at"), ("in sync", "in_sync_at"),
              ("leaders back", "leaders_back_at"))


@dataclass(frozen=True)
class BatchRow:
    """One batch of a batch runbook (a deletion, an election, a roll) on the page."""

    number: int                          # 1-based, as messages name it ("batch 2/5")
    state: str                           # pending, planned, submitted, done, failed
    items: tuple[str, ...]
    took_s: float | None
    message: str = ""
    detail: str = ""                     # the runbook's own figure (topics marked, leaders elected)
    steps: tuple[tuple[str, float | None], ...] = ()      # the roll: stopped, registered, in sync, leaders back

    @property
    def names(self) -> str:
        shown = ", ".join(self.items[:6])
        return shown + (f" and {len(self.items) - 6} more" if len(self.items) > 6 else "")


@dataclass(frozen=True)
class BatchProgress:
    """A batch runbook's batches (see :func:`batch_progress`)."""

    noun: str                            # "topic", "partition", "broker"
    rows: tuple[BatchRow, ...]
    pauses: tuple[dict[str, Any], ...] = ()
    outside_window: bool = False

    @property
    def done(self) -> int:
        return sum(1 for r in self.rows if r.state == "done")

    @property
    def items(self) -> int:
        return sum(len(r.items) for r in self.rows)

    @property
    def failed(self) -> tuple[BatchRow, ...]:
        return tuple(r for r in self.rows if r.state == "failed")


def batch_progress(folder: RunFolder) -> BatchProgress | None:
    """The batches of a deletion, an election or a roll from the run folder's progress file (``None``:
    no such file, the run is before its first batch or runs waves)."""
    for name, (noun, key) in BATCH_FILES.items():
        doc = folder.read_json(folder.root / name)
        if doc is None:
            continue
        rows = []
        try:
            for i, b in enumerate(doc["batches"]):
                took = (float(b["done_at"]) - float(b["submitted_at"])
                        if b.get("done_at") is not None and b.get("submitted_at") is not None else None)
                detail = (f"{len(b.get('marked') or ())} marked for deletion" if "marked" in b else
                          f"{len(b.get('elected') or ())} leader(s) elected, {len(b.get('not_elected') or ())} not"
                          if "elected" in b else "")
                steps = tuple((label, b.get(at)) for label, at in ROLL_STEPS) if noun == "broker" else ()
                rows.append(BatchRow(int(b.get("index", i)) + 1, str(b["state"]), tuple(str(x) for x in b[key]),
                                     took, str(b.get("message") or ""), detail, steps))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidPayload(f"{folder.root / name}: not a batch progress file ({type(exc).__name__}: {exc})") \
                from None
        windows = folder.read_json(folder.root / "windows.json") or {}
        return BatchProgress(noun, tuple(rows), tuple(windows.get("pauses") or ()), bool(windows.get("outside_window")))
    return None


def run_progress(folder: RunFolder, now: float | None = None) -> RunProgress:
    """The run's progress from its folder (see module docstring); ``now`` defaults to the clock."""
    now = time.time() if now is None else now
    waves = _waves(folder.wave_progress)
    if waves is None:
        return RunProgress((), False, None, None)
    predicted = _predicted(folder)
    live = (read_json(folder.root / FILE) or {}).get("waves") or {}
    sized = any(w.bytes_total for w in waves)
    finished = [(float(w.done_at) - float(w.submitted_at), predicted.get(w.id)) for w in waves
                if w.status == DONE and w.submitted_at and w.done_at]
    factor = (sum(m for m, _ in finished) / sum(p for _, p in finished)
              if finished and all(p for _, p in finished) and sum(p for _, p in finished) > 0 else None)
    rows, eta_run, stalls = [], 0.0, []
    for w in waves:
        poll = live.get(str(w.id)) or {}
        pred = predicted.get(w.id)
        pred_rate = w.bytes_total / pred if pred and w.bytes_total else None
        throttle = poll.get("throttle_bps")
        if w.status == DONE:
            took = float(w.done_at) - float(w.submitted_at) if w.submitted_at and w.done_at else None
            rate = w.bytes_total / took if took and w.bytes_total else None
            rows.append(WaveRow(w.id, "done", w.moves, w.moves, w.bytes_total, 0, pred, rate, pred_rate,
                                0.0, throttle, poll.get("source", "")))
            continue
        if w.status == SUBMITTED:
            elapsed = now - float(w.submitted_at) if w.submitted_at else 0.0
            remaining = poll.get("bytes_remaining") if poll else None
            rate = float(poll.get("rate_bps") or 0.0) or None
            if rate and remaining:
                eta = remaining / rate
            elif pred is not None:
                eta = max(0.0, pred * (factor or 1.0) - elapsed)
            else:
                eta = None
            stall = ""
            if poll.get("stalled"):
                stall = f"no progress for {poll.get('quiet_s', 0):.0f}s: {poll.get('causes') or 'cause not read'}"
                stalls.append(f"wave {w.id}: {stall}")
            rows.append(WaveRow(w.id, "copying", int(poll.get("done", 0)), w.moves, w.bytes_total,
                                remaining if sized else None, pred, rate, pred_rate, eta, throttle,
                                poll.get("source", ""), stall))
            eta_run = None if eta is None or eta_run is None else eta_run + eta
            continue
        eta = pred * (factor or 1.0) if pred is not None else None
        eta_run = None if eta is None or eta_run is None else eta_run + eta
        rows.append(WaveRow(w.id, "pending", 0, w.moves, w.bytes_total, w.bytes_total if sized else None,
                            pred, None, pred_rate, eta, None))
    windows = folder.read_json(folder.root / "windows.json") or {}
    failure = (folder.read_json(folder.wave_failure) or {}).get("message", "")
    updated = max((float(p.get("at") or 0) for p in live.values()), default=None) or None
    return RunProgress(tuple(rows), sized, eta_run, factor, tuple(windows.get("pauses") or ()),
                       bool(windows.get("outside_window")), str(failure), updated, tuple(stalls))


def duration_text(s: float | None) -> str:
    """``2 h 05 min``, ``4 min 10 s``, ``12 s``; ``unknown`` for None."""
    if s is None:
        return "unknown"
    s = max(0.0, float(s))
    if s >= 3600:
        return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"
    if s >= 60:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    return f"{s:.0f} s"


def rate_text(bps: float | None) -> str:
    return "unknown" if not bps else f"{human_bytes(bps)}/s"


@functools.lru_cache(maxsize=1)
def _template() -> "jinja2.Template":
    import jinja2      # here: the executor records polls without rendering the page (start-up CPU)

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    return env.get_template("progress.html.j2")


def at_text(epoch: float | None) -> str:
    """``03:41:07 UTC`` for a step's time; ``—`` when it was not seen."""
    if epoch is None:
        return "—"
    return time.strftime("%H:%M:%S UTC", time.gmtime(float(epoch)))


def render_progress_page(folder: RunFolder, dag_id: str, run_id: str, active: bool, now: float | None = None,
                         links: dict[str, str] | None = None, state: str = "") -> str:
    """The progress page's HTML: the waves of a reassignment, or the batches of a deletion, an
    election or a roll; ``active`` adds a refresh every :data:`REFRESH_S` seconds; ``state`` is the
    run's (a finished run says so)."""
    progress = run_progress(folder, now)
    batches = None if progress.started else batch_progress(folder)
    return _template().render(p=progress, b=batches, dag_id=dag_id, run_id=run_id, active=active,
                              refresh_s=REFRESH_S, state=state, finished=state in ("success", "failed"),
                              links=links or {}, bytes=human_bytes, duration=duration_text, rate=rate_text,
                              at=at_text, roll_steps=[label for label, _ in ROLL_STEPS],
                              now=time.time() if now is None else now)
