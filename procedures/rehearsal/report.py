"""The rehearsal report: what the exact plan did to the emulated copy, for the approver.

:class:`RehearsalReport` holds the timeline per wave (start and end in simulated time from the
moment the run would start executing, bytes, busiest broker, the planner's prediction beside it),
each broker's disk peak against its capacity, the window guard's pauses and the waves that ran
past a window's close, the leaderships the final election has to move, and every problem found
(a wave that stalled, timed out or was refused; a disk past the plan's threshold). Its
:meth:`~RehearsalReport.headline` is the one line the approval body shows::

    rehearsed: 8 waves, 4.2 h, no window pause, peak disk broker 2 at 81 %, 0 problems

``rehearsal.json`` (:meth:`save`; :func:`read_report` types it again, :func:`load_report` reads it
as written) and ``rehearsal.md`` (:func:`render_markdown`) live in the rehearsal folder. :func:`passed_hashes` lists the plan hashes whose rehearsal passed
under a run root (what ``require_rehearsal`` in a windows policy asks for).

Failure: :func:`load_report` returns ``None`` for a missing or unreadable file (no rehearsal);
:func:`read_report` raises :class:`RehearsalReportError` for it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from kafka_zk.errors import InvalidPayload
from procedures.waves.book import human_bytes

FILE, MARKDOWN = "rehearsal.json", "rehearsal.md"


class RehearsalReportError(InvalidPayload):
    """A rehearsal folder holds no readable report."""


@dataclass(frozen=True)
class WaveLine:
    """One wave in the rehearsal: simulated seconds from the start of execution (None: not run)."""

    id: int
    partitions: int
    bytes: int
    busiest_broker: int | None
    busiest_bytes: int
    predicted_s: float | None
    start_s: float | None
    end_s: float | None

    @property
    def seconds(self) -> float | None:
        return None if self.start_s is None or self.end_s is None else self.end_s - self.start_s


@dataclass(frozen=True)
class DiskPeak:
    """The most bytes a broker held during the rehearsal, and when (simulated s from the start)."""

    broker: int
    peak_bytes: int
    at_s: float
    capacity: int | None
    limit_pct: float | None

    @property
    def pct(self) -> float | None:
        return None if not self.capacity else 100.0 * self.peak_bytes / self.capacity


@dataclass(frozen=True)
class RehearsalReport:
    """See the module docstring."""

    plan_hash: str
    runbook: str
    cluster: str
    start_at: str                              # ISO time the timeline starts at
    throttle_bytes_per_s: int | None
    waves: tuple[WaveLine, ...]
    elapsed_s: float                           # simulated, first write to last wave done, waits included
    copying_s: float                           # sum of the waves' spans
    pauses: tuple[dict, ...]                   # the window guard's pauses (windows.json)
    overran: tuple[dict, ...]                  # waves in flight when their window closed
    disks: tuple[DiskPeak, ...]
    disk_samples: int
    elections: dict                            # what the final preferred election did on the copy
    problems: tuple[str, ...]
    seeded: str                                # what the emulator was seeded with
    not_copied: tuple[str, ...]
    speed: float
    wall_s: float
    finished: bool
    notes: tuple[str, ...] = field(default=())
    timings_s: dict = field(default_factory=dict)   # wall seconds per phase (inputs, seed, drive)

    @property
    def passed(self) -> bool:
        return self.finished and not self.problems

    def peak(self) -> DiskPeak | None:
        with_cap = [d for d in self.disks if d.pct is not None]
        if with_cap:
            return max(with_cap, key=lambda d: (d.pct, -d.broker))
        return max(self.disks, key=lambda d: (d.peak_bytes, -d.broker), default=None)

    def headline(self) -> str:
        """``rehearsed: 8 waves, 4.2 h, no window pause, peak disk broker 2 at 81 %, 0 problems``."""
        done = sum(1 for w in self.waves if w.end_s is not None)
        waves = f"{len(self.waves)} waves" if done == len(self.waves) else f"{done} of {len(self.waves)} waves done"
        pauses = ("no window pause" if not self.pauses else
                  f"{len(self.pauses)} window pause{'s' if len(self.pauses) > 1 else ''} (before wave "
                  f"{', '.join(str(p['before_wave']) for p in self.pauses)})")
        peak = self.peak()
        if peak is None or peak.peak_bytes == 0:      # no sizes given: the copy held no bytes to measure
            disk = "disk not measured"
        elif peak.pct is not None:
            disk = f"peak disk broker {peak.broker} at {peak.pct:.0f} %"
        else:
            disk = f"peak disk broker {peak.broker} {human_bytes(peak.peak_bytes)} (capacity unknown)"
        n = len(self.problems)
        took = f"{self.elapsed_s / 3600:.1f} h" if self.elapsed_s >= 360 else f"{self.elapsed_s / 60:.1f} min"
        return (f"rehearsed: {waves}, {took}, {pauses}, {disk}, "
                f"{n} problem{'' if n == 1 else 's'}")

    def to_json(self) -> dict:
        doc = asdict(self)
        doc.update(passed=self.passed, headline=self.headline())
        return doc

    def save(self, folder: str | Path) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"{FILE}.tmp"
        tmp.write_text(json.dumps(self.to_json(), indent=1, sort_keys=True), encoding="utf-8")
        tmp.replace(folder / FILE)
        (folder / MARKDOWN).write_text(render_markdown(self), encoding="utf-8")
        return folder / FILE


def read_report(folder: str | Path) -> RehearsalReport:
    """The :class:`RehearsalReport` a rehearsal saved in ``folder`` (``rehearsal.json``), typed again.

    What the runbooks' ``rehearse`` step reads after launching the rehearsal as a child process.
    Raises :class:`RehearsalReportError` naming the file when it is missing or not a report."""
    doc = load_report(folder)
    if doc is None:
        raise RehearsalReportError(f"{Path(folder) / FILE} is missing or unreadable: the rehearsal wrote no report")
    try:
        return RehearsalReport(**{
            **{k: v for k, v in doc.items() if k not in ("passed", "headline")},
            "waves": tuple(WaveLine(**w) for w in doc["waves"]),
            "disks": tuple(DiskPeak(**d) for d in doc["disks"]),
            **{k: tuple(doc.get(k) or ()) for k in ("pauses", "overran", "problems", "not_copied", "notes")}})
    except (KeyError, TypeError) as exc:
        raise RehearsalReportError(f"{Path(folder) / FILE} is not a rehearsal report ({type(exc).__name__}: {exc}); "
                                   "rehearse again") from None


def load_report(folder: str | Path) -> dict | None:
    """The saved ``rehearsal.json`` of a rehearsal folder as written (None when absent/unreadable)."""
    try:
        doc = json.loads((Path(folder) / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def passed_hashes(run_root: str | Path, dag_id: str) -> frozenset[str]:
    """Plan hashes of ``dag_id`` whose rehearsal passed (``<run_root>/<dag>/<run>/rehearsal/``)."""
    found = set()
    for path in Path(run_root, dag_id).glob(f"*/rehearsal/{FILE}"):
        doc = load_report(path.parent)
        if doc and doc.get("passed") is True and isinstance(doc.get("plan_hash"), str):
            found.add(doc["plan_hash"])
    return frozenset(found)


def _at(start: datetime, s: float | None) -> str:
    if s is None:
        return "—"
    return datetime.fromtimestamp(start.timestamp() + s, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


def _dur(s: float | None) -> str:
    if s is None:
        return "—"
    return f"{s / 3600:.2f} h" if s >= 3600 else f"{s / 60:.1f} min"


def _elections_text(e: dict) -> str:
    if "elected" in e:
        text = (f"The final preferred election moved {e['elected']} leadership(s) back to their preferred replica in "
                f"{e['batches']} batch(es), {_dur(e.get('seconds'))} simulated.")
        if e.get("not_eligible"):
            text += " Not elected: " + "; ".join(e["not_eligible"]) + "."
        return text
    return f"Not rehearsed: {e.get('not_run') or e.get('error')}."


def render_markdown(r: RehearsalReport) -> str:
    """``rehearsal.md``: the headline, then each section of the report."""
    start = datetime.fromisoformat(r.start_at)
    lines = [f"# Rehearsal of plan `{r.plan_hash[:12]}…` ({r.runbook} on {r.cluster})", "",
             f"**{r.headline()}**", "",
             f"Result: {'passed' if r.passed else 'NOT passed'}. The executor's own code ran this exact plan "
             f"on an emulated copy of the cluster ({r.seeded}) at ×{r.speed:g}, as if execution started at "
             f"{r.start_at}; the real cluster was not touched. Wall time {r.wall_s:.0f} s.", ""]
    if r.not_copied:
        lines += ["Not copied into the emulator: " + "; ".join(r.not_copied) + ".", ""]
    lines += ["## Timeline per wave", "",
              "| wave | partitions | bytes | busiest broker | start | end | duration | planner |",
              "| ---: | ---: | ---: | --- | --- | --- | ---: | ---: |"]
    for w in r.waves:
        busiest = "—" if w.busiest_broker is None else f"{w.busiest_broker} ({human_bytes(w.busiest_bytes)})"
        lines.append(f"| {w.id} | {w.partitions} | {human_bytes(w.bytes)} | {busiest} | {_at(start, w.start_s)} | "
                     f"{_at(start, w.end_s)} | {_dur(w.seconds)} | {_dur(w.predicted_s)} |")
    lines += ["", f"Copying {_dur(r.copying_s)} (sum of wave spans); first write to last wave done "
              f"{_dur(r.elapsed_s)}, waits included ({_dur(max(0.0, r.elapsed_s - r.copying_s))} outside the waves: "
              "the run's executor seeing each wave done at its polls and writing the next, "
              "planning/wave_time.py, and any window pause).", "", "## Disks", ""]
    if r.disks:
        lines += ["| broker | peak | at | capacity | peak % | plan limit |", "| ---: | ---: | --- | ---: | ---: | ---: |"]
        for d in sorted(r.disks, key=lambda d: d.broker):
            lines.append(f"| {d.broker} | {human_bytes(d.peak_bytes)} | {_at(start, d.at_s)} | "
                         f"{'unknown' if d.capacity is None else human_bytes(d.capacity)} | "
                         f"{'—' if d.pct is None else f'{d.pct:.1f} %'} | "
                         f"{'—' if d.limit_pct is None else f'{d.limit_pct:g} %'} |")
        lines += ["", f"Sampled at each of {r.disk_samples} polls of the wave trigger."]
    else:
        lines.append("Not measured.")
    lines += ["", "## Maintenance windows", ""]
    if not r.pauses and not r.overran:
        lines.append("No wave would wait for a window, and none would run past a window's close.")
    for p in r.pauses:
        lines.append(f"- wave {p['before_wave']} would not start at {p['at']}: {p['reason']}; it would wait until "
                     f"{p.get('resume_window')} opens at {p.get('resumes_at')} (throttles {p.get('throttles')}).")
    for o in r.overran:
        lines.append(f"- wave {o['wave']} would still be copying when window {o['window']} closes at {o['closed']} "
                     f"(finished {o['finished']}).")
    lines += ["", "## Elections at the end", "", _elections_text(r.elections), "", "## Problems", ""]
    lines += [f"- {p}" for p in r.problems] or ["None."]
    if r.notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in r.notes]
    return "\n".join(lines) + "\n"
