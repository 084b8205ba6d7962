"""Which limits shaped a plan's waves: bytes, the predicted time, or a person's per-broker cap.

By default no broker is capped at a number of moves per wave (:class:`WaveLimits`): the packer
(:mod:`planning.kernels.waves`) opens a wave only when a move fits no open one, and its search
keeps moves apart only where that lowers the predicted total. What the person approving reads is
why there are as many waves as there are. :func:`waves_shaped_by` computes the fewest waves each
limit forces on these moves —

* ``cap``: the busiest broker's slot uses ÷ the person's ``max_moves_per_broker`` (set only by a person);
* ``payload``: the moves' ``/admin/reassign_partitions`` entries ÷ the room in one node (bytes);
* ``wave_bytes``: the new-replica bytes ÷ ``max_wave_bytes``, when one is given (bytes);

names the limits that force the most, counts the waves beyond that as kept apart by the
predicted time (``time``: joining them would lengthen a wave by more than a wave's fixed
overhead), and those the disk check added (``disk``: a wave split so a broker stays under its
disk limit). The ``text`` is the sentence the CLI, the plan report and the approval print.

Pure and linear in the moves; raises nothing.
"""

from __future__ import annotations

from typing import Any, Sequence

from planning.model import Wave
from planning.kernels.wave_items import ZNODE_WRAPPER, WaveLimits, slot_brokers

KINDS = ("cap", "payload", "wave_bytes")


def _ceil(a: int, b: int) -> int:
    return -(-a // b) if b > 0 else 0


def fewest_waves(packed: Sequence[Wave], limits: WaveLimits) -> dict[str, int]:
    """The fewest waves each limit allows for the moves of ``packed`` (a limit not set is left out).

    ``packed`` as :func:`planning.kernels.waves.pack_waves` made them: a wave's ``znode_bytes`` is the
    wrapper plus its entries and the commas between them, so the moves' payload (each entry with
    its comma, :func:`~planning.kernels.wave_items.entry_bytes`) is read off the waves rather than encoded again (10⁶ partitions:
    ~0.5 s of CPU), and their new-replica bytes are the waves' ``bytes``."""
    out = {"payload": _ceil(sum(w.znode_bytes + 1 - ZNODE_WRAPPER for w in packed if w.moves),
                            limits.max_znode_bytes - ZNODE_WRAPPER)}
    if limits.max_moves_per_broker is not None:
        uses: dict[int, int] = {}
        for w in packed:
            for m in w.moves:
                for b in slot_brokers(m):
                    uses[b] = uses.get(b, 0) + 1
        out["cap"] = _ceil(max(uses.values(), default=0), limits.max_moves_per_broker)
    if limits.max_wave_bytes is not None:
        out["wave_bytes"] = _ceil(sum(w.bytes for w in packed), limits.max_wave_bytes)
    return out


def waves_shaped_by(packed: Sequence[Wave], final: Sequence[Wave], limits: WaveLimits) -> dict[str, Any]:
    """What shaped the waves: the fewest each limit forces, the limits forcing most, the waves the
    predicted time kept apart beyond them, and the waves the disk check added."""
    fewest = fewest_waves(packed, limits)
    most = max(fewest.values(), default=0)
    binding = [k for k in KINDS if k in fewest and fewest[k] == most and most > 1]
    time = max(0, len(packed) - max(most, 1)) if packed else 0
    disk = max(0, len(final) - len(packed))
    return {"max_moves_per_broker": limits.max_moves_per_broker, "fewest_waves": fewest, "binding": binding,
            "time_waves": time, "disk_waves": disk,
            "text": shaped_text(len(final), fewest, binding, time, disk, limits)}


def shaped_text(waves: int, fewest: dict[str, int], binding: Sequence[str], time: int, disk: int,
                limits: WaveLimits) -> str:
    """``12 waves, shaped by bytes: the /admin/reassign_partitions limit (524,288 B) needs 12; ...``."""
    cap = limits.max_moves_per_broker
    uncapped = "no cap on moves per broker (none set)"
    if waves <= 1:
        return f"1 wave: every move fits in one; {uncapped if cap is None else f'cap of {cap} per broker'}" \
            if waves else "no wave"
    kinds, parts = [], []
    for k in binding:
        if k == "cap":
            kinds.append("the person's cap")
            parts.append(f"the cap of {cap} move(s) per broker per wave needs {fewest[k]:,}")
        else:
            if "bytes" not in kinds:
                kinds.append("bytes")
            parts.append(f"the /admin/reassign_partitions limit ({limits.max_znode_bytes:,} B) needs {fewest[k]:,}"
                         if k == "payload" else f"the wave byte limit ({limits.max_wave_bytes:,} B) needs {fewest[k]:,}")
    if time:
        kinds.append("time")
        parts.append(f"{time:,} {'more ' if binding else ''}kept apart by the predicted time (joining would lengthen "
                     f"a wave by more than its {limits.wave_overhead_s:g} s overhead)")
    if disk:
        kinds.append("disk")
        parts.append(f"{disk:,} added to keep every disk under its limit")
    text = f"{waves:,} waves, shaped by {' and '.join(kinds) or 'nothing'}: {'; '.join(parts)}"
    return text + (f"; {uncapped}" if cap is None else "")
