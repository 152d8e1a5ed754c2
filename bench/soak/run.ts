/**
 * The soak: a compressed day of traffic (bench/soak/traffic.ts) through 3 gateway replicas on one
 * Redis and one PostgreSQL, against the upstream simulator, with faults on a schedule, then the
 * books checked (bench/soak/books.ts). Run by `npm run soak` (bench/soak/soak.ts, its variables)
 * and, for 60 s, by test/soak.e2e.spec.ts. Loopback only; every loop is bounded by the run's end.
 * docs/soak.md says what it does and why.
 *
 * runSoak reads as the run's steps: start the world (world.ts), play the faults (faults.ts) while
 * the client sends the day's traffic (client.ts), settle and check the books (settle.ts), then
 * print the report and write run.json (below). What the steps share is the run (run-state.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SoakClient } from './client.js';
import { describe, explain } from './explain.js';
import { FaultSchedule, faultsOf } from './faults.js';
import { buildReport, formatReport, type ReplicaRss, type UnitPrice } from './report.js';
import { SoakRun, type SoakPlan } from './run-state.js';
import { settleAndCheckBooks, type SettledBooks } from './settle.js';
import { SoakWorld, type Running } from './world.js';

export interface SoakOptions {
  /** How long the traffic runs, clamped to 30 s – 120 min. */
  minutes: number;
  seed: number;
  /** Requests per second at the morning peak, clamped to 1–200. */
  peakRps: number;
  /** The gateway compiled as production runs it (test/support/gateway-process.ts, buildGateway). */
  build: string;
  /** Where run.json is written. */
  reportDir: string;
  /** Money in the report (what reuse saved) at this price. */
  unitPrice: UnitPrice;
  /**
   * Redis without its append-only file, to show what a Redis that restarts empty loses (an entry
   * not yet drained: chargedNotInLedger). Default: with it, written before each answer
   * (`always`: `everysec` may answer before writing, docs/soak.md, "Redis"), as a deployment
   * keeping money in it should run it: a restart keeps the ledger's queue and the budgets.
   */
  redisEmpty?: boolean;
  /** A Redis Cluster of 3 masters with a replica each; the Redis fault fails over the accounting slot's master. */
  cluster?: boolean;
  /** Where the run's lines go (the CLI: stdout). */
  print: (line: string) => void;
}

export interface SoakOutcome {
  /** Broken rules of the books and of the report (5xx no fault explains …): 0 when the books balance. */
  imbalances: number;
  /** The run as data (bench/soak/chart.ts draws it). */
  runFile: string;
}

/** What a run started and must stop, also when it fails midway (stopEverything). */
const running: Running = new Set();

/** Ends whatever a run started: nothing is left running on the machine (the CLI's last resort). */
export async function stopEverything(): Promise<void> {
  await Promise.allSettled([...running].map((stop) => Promise.resolve().then(stop)));
  running.clear();
}

export async function runSoak(options: SoakOptions): Promise<SoakOutcome> {
  const plan = planOf(options);
  const world = await SoakWorld.start(plan, running);
  const rss: ReplicaRss[] = await Promise.all(
    world.replicas.map(async (replica, index) => ({ replica: index, startBytes: await world.residentBytes(replica) })),
  );
  // The day starts now that everything is up, so that setup time is not traffic time.
  const run = new SoakRun(plan, options.print);
  run.log(
    `3 replicas, Redis, PostgreSQL and the simulator up; ${plan.minutes} min, seed ${plan.seed}, peak ${plan.peakRps}/s`,
  );

  world.sim.on('token', ({ ok, status }) => run.tokenCalls.push({ at: Date.now(), ok, status }));
  const schedule = new FaultSchedule(faultsOf(world, run), world, run);
  const client = new SoakClient(world, run);
  const faultsPlayed = schedule.play();
  await client.sendTheDay();
  await faultsPlayed;
  world.sim.clearFaults();
  run.log(`traffic over: ${client.sent} requests`);
  schedule.closeCountedWindows();

  const settled = await settleAndCheckBooks(world, run);
  printBooks(run, world, settled);
  // RSS at the end, before stopping: the process then in each slot (the faults restarted them).
  for (const [index, replica] of world.replicas.entries()) rss[index].endBytes = await world.residentBytes(replica);
  const { imbalances, runFile } = reportAndWriteRun(run, world, settled, rss, options.reportDir);

  await world.stop();
  running.clear();
  return { imbalances, runFile };
}

/** The options clamped, and the budget that follows from the day's length. */
function planOf(options: SoakOptions): SoakPlan {
  // NaN passes Math.min/max untouched (a day of no traffic with every fault at once): refused.
  for (const [name, value] of [
    ['minutes', options.minutes],
    ['peakRps', options.peakRps],
    ['seed', options.seed],
  ] as const) {
    if (!Number.isFinite(value)) throw new RangeError(`soak: ${name} must be a number, got ${String(value)}`);
  }
  const minutes = Math.min(Math.max(options.minutes, 0.5), 120);
  return {
    minutes,
    durationMs: minutes * 60_000,
    seed: options.seed,
    peakRps: Math.min(Math.max(options.peakRps, 1), 200),
    build: options.build,
    unitPrice: options.unitPrice,
    redisEmpty: options.redisEmpty === true,
    cluster: options.cluster === true,
    // Small enough that svc-budgeted runs out during the day (~8 % of requests ask on its account).
    budgetDailyUnits: Math.max(5, Math.round(minutes * 10)),
  };
}

/** The requests, the reconciliation and the books, then what the run knows about each imbalanced trackId. */
function printBooks(run: SoakRun, world: SoakWorld, { reconciled, books }: SettledBooks): void {
  const { print } = run;
  const { sim } = world;
  print('\n== Requests (kind status: count)');
  for (const [key, count] of [...run.statuses].sort()) print(`  ${key}: ${count}`);
  print("\n== Reconciliation with the simulator's list");
  for (const [key, value] of Object.entries(reconciled))
    if (value && typeof value === 'object' && 'count' in value)
      print(`  ${key}: ${(value as { count: number }).count}`);
  print('\n== Books');
  print(`  simulator charges (trackIds): ${sim.chargesByTrackId.size}`);
  print(
    `  inquiries in the ledger: ${books.inquiries} (charged ${books.charged}, possibly ${books.unknown}, not charged ${books.notCharged})`,
  );
  print(`  reuse: ${books.reused} inquiries answered without buying, ${books.unitsSaved} units saved`);
  for (const imbalance of books.imbalances)
    print(
      `  IMBALANCE: ${imbalance.rule}${imbalance.detail ? `: ${imbalance.detail}` : ''} ${imbalance.trackIds.slice(0, 20).join(' ')}`,
    );
  const explained = new Set(books.imbalances.flatMap((imbalance) => imbalance.trackIds).slice(0, 20));
  if (explained.size > 0) {
    print('\n== What the run knows about each imbalanced trackId');
    const logs = world.everyReplica.flatMap(({ index, process }) =>
      process
        .output()
        .split('\n')
        .map((line) => `replica ${index}: ${line}`),
    );
    const { started, attempts, faultWindows } = run;
    for (const trackId of explained)
      for (const line of describe(
        explain(trackId, { started, upstreamCalls: sim.requests, attempts, faults: faultWindows, logs }),
        started,
      ))
        print(line);
  }
}

/**
 * The report of the run (bench/soak/report.ts: faults, their failures and healing, latency per
 * phase, the saving, RSS) with its imbalances, and the run as data in run.json.
 */
function reportAndWriteRun(
  run: SoakRun,
  world: SoakWorld,
  settled: SettledBooks,
  rss: ReplicaRss[],
  reportDir: string,
): SoakOutcome {
  const { print } = run;
  const data = runData(run, world, settled, rss);
  const soakReport = buildReport(data);
  for (const line of formatReport(soakReport)) print(line);
  for (const imbalance of soakReport.imbalances)
    print(`  IMBALANCE: ${imbalance.rule}${imbalance.detail ? `: ${imbalance.detail}` : ''}`);
  const imbalances = settled.books.imbalances.length + soakReport.imbalances.length;
  print(imbalances === 0 ? '\nThe books balance.' : `\n${imbalances} imbalance(s).`);

  // The run as data (the chart, bench/soak/chart.ts, is drawn from it): outside src/ and docs/.
  mkdirSync(reportDir, { recursive: true });
  const runFile = join(reportDir, 'run.json');
  writeFileSync(runFile, JSON.stringify({ ...data, report: soakReport }));
  print(`run written to ${runFile}`);
  return { imbalances, runFile };
}

/** run.json but its report: what the run saw, the simulator's calls and charges, the ledger and the books. */
function runData(run: SoakRun, world: SoakWorld, { entries, reconciled, books }: SettledBooks, rss: ReplicaRss[]) {
  const { plan, started } = run;
  const { sim } = world;
  return {
    minutes: plan.minutes,
    seed: plan.seed,
    peakRps: plan.peakRps,
    started,
    ended: Date.now(),
    faults: run.faultWindows,
    attempts: run.attempts,
    upstreamCalls: sim.requests.map((r) => ({ at: r.at, trackId: r.trackId, path: r.path })),
    charges: Object.fromEntries(sim.chargesByTrackId),
    chargedAt: Object.fromEntries(sim.chargedAt),
    faultsTaken: run.faultsTaken,
    tokenCalls: run.tokenCalls,
    entries,
    statuses: Object.fromEntries(run.statuses),
    reconciliation: Object.fromEntries(
      Object.entries(reconciled).map(([key, value]) => [
        key,
        value && typeof value === 'object' && 'count' in value ? (value as { count: number }).count : value,
      ]),
    ),
    books,
    unitPrice: plan.unitPrice,
    rss,
  };
}
