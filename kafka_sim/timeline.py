"""When each wave of a run copied, read from the emulator's history (simulated seconds).

A partition's move opens with its first ``reassign_update`` (phase U; later updates of phase B
do not reopen it) and closes with its ``reassign_done``. An update with nothing to add or remove
(a no-op entry, or the controller finishing a completed move's node entry again after a lost
connection) opens nothing. A wave's span is its earliest opening
to its latest closing: what the controller took, whatever the tool's polling added around it.
The demo compares the sum of these spans with the physical lower bound; a rehearsal reports
them as its timeline, and a test compares a rehearsal's with the real (emulated) run's.

Failure: none; a wave none of whose moves is seen in the history has no span (``None``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

if TYPE_CHECKING:                    # the controller imports this module: no cycle at run time
    from kafka_sim.engine import SimEvent


def update_detail(rs, ars, rrs) -> str:
    """The detail of a ``reassign_update`` event (kafka_sim/reassign.py writes it, :func:`move_spans` reads it)."""
    return f"RS={list(rs)} ARS={list(ars)} RRS={list(rrs)}"


NO_OP_TAIL = " ARS=[] RRS=[]"      # an update with nothing to add or remove


@dataclass(frozen=True)
class WaveSpan:
    """Simulated seconds (since the emulator started) a wave's first move opened and its last closed."""

    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


def move_spans(events: Iterable[SimEvent], wall: bool = False) -> dict[tuple[str, int], tuple[float, float]]:
    """(topic, partition) → (opened, closed) of every move the history shows finished (``wall``: in
    wall-clock epoch seconds, as the events were recorded, rather than simulated seconds)."""
    started: dict[tuple[str, int], float] = {}
    span: dict[tuple[str, int], tuple[float, float]] = {}
    for ev in events:
        key = (ev.topic, ev.partition)
        at = ev.wall if wall else ev.time
        if ev.kind == "reassign_update":
            if not ev.detail.endswith(NO_OP_TAIL):     # a no-op (nothing to add or remove) is no move
                started.setdefault(key, at)
        elif ev.kind == "reassign_done" and key in started:
            span[key] = (started.pop(key), at)
    return span


def wave_spans(events: Iterable[SimEvent], waves: Sequence[Iterable[tuple[str, int]]],
               wall: bool = False) -> list[WaveSpan | None]:
    """The span of each wave (given as its partitions' (topic, partition) keys); ``wall``: see :func:`move_spans`."""
    span = move_spans(events, wall)
    out: list[WaveSpan | None] = []
    for wave in waves:
        seen = [span[k] for k in wave if k in span]
        out.append(WaveSpan(min(s for s, _ in seen), max(e for _, e in seen)) if seen else None)
    return out
