"""The rolling restart's report: each broker's timeline (stop, registered, in sync, leaders back) and outcome.

:func:`timeline_rows` reads a :class:`~procedures.restart.roll.RestartBook` into one row per batch
(times in UTC and seconds since the action); :func:`report_md` renders the whole report in Markdown
(the plan's order, the rows, what stopped the roll and how to resume, replica orders a stopped
roll left demoted). Both the DAG's report step and ``kafka-runbook restart`` print it.

Failure: none; a batch without a time shows ``-``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from procedures.batches.book import BatchState
from procedures.restart.plan import RestartPlan
from procedures.restart.roll import RestartBook


@dataclass(frozen=True)
class TimelineRow:
    """One batch's timeline: when its action ran and how long each step took after it (seconds)."""

    brokers: tuple[int, ...]
    state: str
    action_at: float | None
    down_s: float | None
    registered_s: float | None
    in_sync_s: float | None
    leaders_back_s: float | None
    message: str


def _after(t: float | None, start: float | None) -> float | None:
    return None if t is None or start is None else max(0.0, t - start)


def timeline_rows(book: RestartBook) -> list[TimelineRow]:
    return [TimelineRow(b.brokers, b.state.value, b.submitted_at, _after(b.down_at, b.submitted_at),
                        _after(b.registered_at, b.submitted_at), _after(b.in_sync_at, b.submitted_at),
                        _after(b.leaders_back_at, b.submitted_at), b.message) for b in book.batches]


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f} s"


def _utc(t: float | None) -> str:
    return "-" if t is None else datetime.fromtimestamp(t, timezone.utc).strftime("%H:%M:%S")


def outcome(book: RestartBook) -> str:
    done = sum(1 for b in book.batches if b.state is BatchState.DONE)
    if all(b.state is BatchState.PLANNED for b in book.batches):
        return "dry run: planned only, nothing restarted"
    if book.all_done:
        return f"every broker restarted ({done} batch(es))"
    return f"STOPPED: {done} of {len(book.batches)} batch(es) done"


def report_md(plan: RestartPlan, book: RestartBook) -> str:
    lines = ["# Rolling restart", "", f"**Outcome**: {outcome(book)}", "", plan.text(), "",
             "## Timeline per batch", "",
             "Seconds after the restart action started, from ZooKeeper's record: stopped = the old registration "
             "removed, registered = the new one created, in sync / leaders back = the partition state write that "
             "made the broker an ISR member / the leader again, the last of its partitions (- : not seen, e.g. "
             "a roll resumed after it).", "",
             "| # | broker(s) | state | action at (UTC) | stopped | registered | in sync | leaders back |",
             "|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(timeline_rows(book), 1):
        lines.append(f"| {i} | {', '.join(map(str, r.brokers))} | {r.state} | {_utc(r.action_at)} | {_s(r.down_s)} | "
                     f"{_s(r.registered_s)} | {_s(r.in_sync_s)} | {_s(r.leaders_back_s)} |")
    stopped = [b for b in book.batches if b.message and b.state is not BatchState.PLANNED]
    if stopped:
        lines += ["", "## Why the roll stopped", ""] + [
            f"- broker(s) {', '.join(b.items)}, batch {b.index + 1}, "
            f"{f'at the {b.stopped_at}' if b.stopped_at else f'at the {b.gate}'} ({b.state.value}): {b.message}"
            for b in stopped]
        held = [p for b in stopped for p in b.gate_problems]
        if held:
            lines += ["", "Partitions that held the stop gate:", ""] + [f"- {p}" for p in held[:50]]
    left = [b for b in book.batches if b.demoted and b.state is not BatchState.DONE]
    for b in left:
        lines += ["", f"Brokers {', '.join(b.items)}: {len(b.demoted)} partition(s) still list them last (demoted); "
                      "resuming the roll restores the original orders once they are back."]
    rode = [b for b in book.batches if b.outages]
    for b in rode:
        lines += ["", f"Brokers {', '.join(b.items)}: {b.outages} ZooKeeper outage(s) waited out; the roll went on "
                      "from the gate it was at."]
    planned = [b for b in book.batches if b.state is BatchState.PLANNED and b.gate_problems]
    for b in planned:
        lines += ["", f"Dry run: the stop gate of brokers {', '.join(b.items)} would hold now:"] + \
                 [f"- {p}" for p in b.gate_problems[:20]]
    return "\n".join(lines) + "\n"
