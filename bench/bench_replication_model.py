"""CPU seconds of the emulator's replication model alone, driven through a plan's waves as the
emulated controller drives it — no ZooKeeper, no engine (the part of a rehearsal that grows with
the moves copying at once; BENCHMARKS.md "Rehearsals").

It builds the cluster ``bench/bench_rehearsal.py`` builds (same seeds, same plan job), demotes the
removed brokers' leadership as the decommission's demote step does, then for each wave makes the
model calls a 2.4 controller's reassignment makes (kafka_sim/reassign.py): every partition's
replica set widened to old + new (the new replicas fetch ``fetch_start_s`` later, throttled on both
sides at 100 MiB/s), each caught-up follower joined to the ISR, and once a partition's new
replicas are all in sync, ``reassign_completion_s`` later, its replica set and ISR cut to the
target. It prints the waves' simulated hours, the catch-ups and re-plans, and the model's CPU
seconds. Nothing is asserted. ``python -m bench.bench_replication_model --partitions 20000 --brokers 48``.
"""

from __future__ import annotations

import heapq
import time

from bench.bench_wave_fluid import bench_args, planned_cluster
from kafka_sim.replication import ReplicationModel
from kafka_sim.spec import FETCH_START, REASSIGN_COMPLETION

THROTTLE = 100 * 1024 ** 2          # bench_rehearsal's plan throttle (the emulator's network rate too)


def drive(plan, snap, sizes, removed: set[int]) -> tuple[float, int]:
    """(simulated seconds, catch-ups) of every wave, one after another."""
    m = ReplicationModel(THROTTLE, 0.0, fetch_start=FETCH_START)
    for b in snap.brokers:
        m.broker_up(b)
        m.set_throttle_rates(b, float(THROTTLE), float(THROTTLE))
    parts = {part.tp: part for part in snap.partitions()}
    for topic in sorted({tp.topic for wave in plan.waves for tp in wave.target}):
        m.set_throttle_lists(topic, "*", "*")
    caught = 0
    for wave in plan.waves:
        for tp in sorted(wave.target):
            current = tuple(wave.current[tp])
            leader = parts[tp].leader
            if leader in removed:
                leader = next(b for b in current if b not in removed)
            m.set_size(tp, float(sizes[tp]))
            m.set_view(tp, replicas=current, leader=leader, isr=current)
        for tp in sorted(wave.target):       # the controller's phase A: RS := target + old
            m.set_view(tp, replicas=tuple(dict.fromkeys((*wave.target[tp], *wave.current[tp]))))
        pending = {tp: {r for r in wave.target[tp] if r not in wave.current[tp]} for tp in wave.target}
        done: list[tuple[float, tuple]] = []
        left = len(pending)
        while left:
            nxt = m.next_event_time()
            at = min(nxt if nxt is not None else float("inf"), done[0][0] if done else float("inf"))
            for c in m.advance(at):
                pd = m.parts[c.tp]
                m.set_view(c.tp, isr=(*pd.isr, c.broker))       # the leader's ISR join
                caught += 1
                pending[c.tp].discard(c.broker)
                if not pending[c.tp]:
                    heapq.heappush(done, (m.now + REASSIGN_COMPLETION, c.tp))
            while done and done[0][0] <= m.now:
                _, tp = heapq.heappop(done)                      # phase B: RS := target
                target = tuple(wave.target[tp])
                pd = m.parts[tp]
                leader = pd.leader if pd.leader in target else target[0]
                m.set_view(tp, replicas=target, leader=leader, isr=tuple(r for r in pd.isr if r in target))
                left -= 1
    return m.now, caught


def main(argv: list[str] | None = None) -> int:
    args = bench_args(__doc__, argv)
    info, plan, snap, sizes, removed = planned_cluster(args)
    cpu = time.process_time()
    simulated, caught = drive(plan, snap, sizes, removed)
    cpu = time.process_time() - cpu
    with open("/proc/loadavg", encoding="ascii") as f:
        load = f.read().split()[0]
    print(f"{info['partitions']:,} partitions, {args.brokers} brokers: {info['moves']:,} moves in {info['waves']} "
          f"waves, {caught:,} catch-ups, {simulated / 3600:.2f} h simulated (planner {info['predicted_h']:.2f} h); "
          f"replication model CPU {cpu:.1f} s; load {load}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
