/**
 * The soak's faults (docs/soak.md, "Faults"): what breaks at which fraction of the day, run on that
 * schedule beside the traffic, each logged and kept as a window of time that explains the failures
 * in it (bench/soak/report.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { FaultWindow } from './explain.js';
import { countedFaultEnd } from './report.js';
import type { SoakRun } from './run-state.js';
import type { SoakWorld } from './world.js';

const ACCOUNTING_KEY = '{vgw:acct}:soak'; // the hash tag of every ledger-queue and budget key

/** A fault of the upstream's next calls, counted by the simulator as it takes them. */
type CountedKind = 'http500' | 'hang-after-processing';

export interface Fault {
  /** The fraction of the day at which it starts. */
  at: number;
  name: string;
  run: () => Promise<void> | void;
  /** It leaves the upstream in a state (slow, failing) that lasts until the next fault starts. */
  untilNext?: true;
  /** A fault of the upstream's next calls: its window lasts until they are taken (countedFaultEnd). */
  takes?: { kind: CountedKind; times: number };
}

/** The faults of a day, at fractions of it. */
export function faultsOf(world: SoakWorld, run: SoakRun): Fault[] {
  const { redis, cluster, postgres, sim } = world;
  const { redisEmpty } = run.plan;
  return [
    { at: 0.1, name: 'replica 0 SIGKILLed and restarted', run: () => world.restartReplica(0, 'SIGKILL') },
    cluster
      ? {
          at: 0.2,
          name: "Redis Cluster: the accounting slot's master SIGKILLed, its replica promoted",
          run: async () => void (await cluster.failOver(ACCOUNTING_KEY)),
        }
      : {
          at: 0.2,
          name: redisEmpty ? 'Redis SIGKILLed and restarted (empty)' : 'Redis SIGKILLed and restarted (AOF)',
          run: async () => {
            await redis!.restart();
            // What the budgets spent before is gone with it: the books count them from here.
            if (redisEmpty) run.budgetCountsFrom = new Date().toISOString();
          },
        },
    { at: 0.3, name: 'PostgreSQL restarted', run: () => postgres.restart() },
    { at: 0.4, name: 'upstream slow (800 ms)', run: () => sim.setLatency(800), untilNext: true },
    {
      at: 0.45,
      name: 'upstream failing with 5xx (20 calls)',
      run: () => {
        sim.setLatency(0);
        sim.injectFault({ kind: 'http500', times: 20 });
      },
      untilNext: true,
      takes: { kind: 'http500', times: 20 },
    },
    {
      at: 0.5,
      name: 'upstream timing out after it charged (10 calls)',
      run: () => sim.injectFault({ kind: 'hang-after-processing', times: 10 }),
      untilNext: true,
      takes: { kind: 'hang-after-processing', times: 10 },
    },
    { at: 0.6, name: 'access token revoked upstream', run: () => sim.expireAllAccessTokens(), untilNext: true },
    {
      at: 0.75,
      name: 'rolling restart (SIGTERM) of every replica',
      run: async () => {
        for (const index of world.replicas.keys()) await world.restartReplica(index, 'SIGTERM');
      },
    },
  ];
}

/** Runs the faults on their schedule and keeps each one's window in the run. */
export class FaultSchedule {
  /** How many of each counted kind the simulator took, and when it took the last of its injection. */
  private readonly taken = new Map<string, number>();
  private readonly lastTakenAt = new Map<string, number>();
  /** The windows of the counted faults, closed only once the traffic is over (closeCountedWindows). */
  private readonly counted: { window: FaultWindow; kind: string }[] = [];

  constructor(
    private readonly faults: readonly Fault[],
    private readonly world: SoakWorld,
    private readonly run: SoakRun,
  ) {
    world.sim.on('fault', ({ kind, path }) => {
      run.faultsTaken.push({ at: Date.now(), path, kind });
      this.taken.set(kind, (this.taken.get(kind) ?? 0) + 1);
      if (faults.some((f) => f.takes?.kind === kind && f.takes.times === this.taken.get(kind)))
        this.lastTakenAt.set(kind, Date.now());
    });
  }

  /** Each fault at its time of the day; one that fails is logged and has no window. */
  async play(): Promise<void> {
    const { run } = this;
    for (const [i, fault] of this.faults.entries()) {
      await sleep(Math.max(0, run.timeAt(fault.at) - Date.now()));
      run.log(`fault: ${fault.name}`);
      const from = Date.now();
      try {
        await fault.run();
        // A state the upstream is left in (slow, failing the next calls) lasts until the next fault.
        const next = this.faults[i + 1];
        const to = fault.untilNext && next ? run.timeAt(next.at) : Date.now();
        run.faultWindows.push({ name: fault.name, from, to });
        if (fault.takes) this.counted.push({ window: run.faultWindows.at(-1)!, kind: fault.takes.kind });
        run.log(`fault over: ${fault.name}`);
      } catch (error) {
        run.log(`fault FAILED: ${fault.name}: ${(error as Error).message}`);
      }
    }
  }

  /** Once the traffic is over: a counted fault's window lasts until the simulator took its last call. */
  closeCountedWindows(): void {
    const { sim } = this.world;
    for (const { window, kind } of this.counted) {
      window.to = countedFaultEnd(window.to, this.lastTakenAt.get(kind), sim.requests, Date.now());
      this.run.log(`fault lasted until ${((window.to - this.run.started) / 1000).toFixed(1)} s: ${window.name}`);
    }
  }
}
