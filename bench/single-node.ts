/**
 * `npm run bench:single-node -- <baseline project dir> [<other build dir> …]`: the single-node
 * default (no Redis, no LEDGER_DATABASE_URL) of this tree, whose records, Idempotency-Keys and
 * reuse answers live in the embedded ledger's PGlite (docs/decisions/0018), against a baseline
 * build whose records are in the process's memory (main before it: a `git archive` with
 * `npm run bench`'s `.build/`), and any other builds named (an earlier PGlite build: before and
 * after in the same rounds), CPU given as a ratio to the baseline's too.
 *
 * 1. Rounds (BENCH_ROUNDS, default 3), the builds side by side, each round fresh gateway processes
 *    on fresh LEDGER_DATA_DIRs, keyed inquiries (a new Idempotency-Key each) at BENCH_RATE (default
 *    500/s) each for BENCH_DURATION s (default 20): CPU per inquiry (every thread: the worker's
 *    statements count; on Linux also split by thread: the event loop, the PGlite worker, V8's
 *    helpers), p50/p99, the event loop's p99 and max delay (its /metrics).
 * 2. This tree alone for BENCH_LONG_SECONDS (default 120; 0: not run) at BENCH_LONG_RATE (default 500/s): RSS
 *    every 10 s (after a collection), CPU per inquiry and the event loop's max delay per window, the data dir's size.
 */
import { resolve } from 'node:path';
import { existsSync } from 'node:fs';
import { API_KEY, gatewayTarget, INQUIRY_BODY, median, scrapeMetrics } from './http-overhead.js';
import { directoryBytes, freshLedgerDataDir, removeLedgerDataDirs } from './lib/ledger-dirs.js';
import { measure, warmUp } from './lib/load.js';
import { nodeFlagsFrom, PRODUCTION_NODE_FLAGS } from './lib/node-flags.js';
import { killAllServers, ServerProcess } from './lib/servers.js';
import { threadCpuSince, threadCpuUs } from './lib/thread-cpu.js';
import type { ProcessStats } from './lib/ipc.js';

const env = (name: string, fallback: number, zero = false) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value < 0 || (value === 0 && !zero)) {
    throw new Error(`${name} must be a ${zero ? 'non-negative' : 'positive'} number`);
  }
  return value;
};
const ROUNDS = env('BENCH_ROUNDS', 3);
const RATE = env('BENCH_RATE', 500);
const DURATION = env('BENCH_DURATION', 20);
const LONG_SECONDS = env('BENCH_LONG_SECONDS', 120, true);
const LONG_RATE = env('BENCH_LONG_RATE', 500);
const MiB = 1024 * 1024;
const cpuUs = (s: ProcessStats) => s.cpuUserUs + s.cpuSystemUs;
const gauge = (text: string, name: string) => {
  const match = new RegExp(`^${name} ([0-9.eE+-]+)$`, 'm').exec(text);
  return match ? Number(match[1]) : NaN;
};

/** The event loop's delay (ms) since the last scrape (the gateway's histogram resets on each). */
async function loopDelay(url: string): Promise<{ p99: number; max: number }> {
  const text = (await scrapeMetrics(url)) ?? '';
  return {
    p99: gauge(text, 'nodejs_eventloop_lag_p99_seconds') * 1000,
    max: gauge(text, 'nodejs_eventloop_lag_max_seconds') * 1000,
  };
}

async function startGateway(name: string, simUrl: string, script?: string) {
  const dataDir = await freshLedgerDataDir();
  const gateway = await ServerProcess.start(
    name,
    {
      role: 'gateway',
      env: {
        UPSTREAM_BASE_URL: simUrl,
        LEDGER_DATABASE_URL: '',
        LEDGER_DATA_DIR: dataDir,
        LOG_LEVEL: 'info',
        OTEL_SDK_DISABLED: 'true',
      },
      probeBody: INQUIRY_BODY,
      probeApiKey: API_KEY,
    },
    { script, execArgv: nodeFlagsFrom('BENCH_NODE_FLAGS', PRODUCTION_NODE_FLAGS) },
  );
  return { gateway, dataDir };
}

interface Round {
  cpuUs: number;
  /** CPU µs per inquiry by thread kind (Linux): main, WorkerThread (PGlite), V8Worker (GC helpers). */
  threads: Record<string, number>;
  p50: number;
  p99: number;
  loopP99: number;
  loopMax: number;
  non2xx: number;
}

/**
 * One round: every build's gateway under the same fixed-rate keyed load at the same time, so
 * that whatever else loads the machine loads them alike (their ratio holds when figures drift).
 */
async function round(gateways: ServerProcess[]): Promise<Round[]> {
  const settings = { connections: 64, durationSeconds: DURATION, warmupSeconds: 3, rate: RATE };
  const targets = gateways.map((g) => gatewayTarget(g.url, 'fresh'));
  await Promise.all(targets.map((t) => warmUp(t, settings)));
  await Promise.all(gateways.map((g) => loopDelay(g.url)));
  const threadsBefore = await Promise.all(gateways.map((g) => threadCpuUs(g.pid)));
  const before = await Promise.all(gateways.map((g) => g.stats()));
  const loads = await Promise.all(targets.map((t) => measure(t, settings)));
  const after = await Promise.all(gateways.map((g) => g.stats()));
  const threadsAfter = await Promise.all(gateways.map((g) => threadCpuUs(g.pid)));
  const loops = await Promise.all(gateways.map((g) => loopDelay(g.url)));
  return gateways.map((_, i) => ({
    cpuUs: (cpuUs(after[i]) - cpuUs(before[i])) / Math.max(1, loads[i].totalRequests),
    threads: Object.fromEntries(
      Object.entries(threadCpuSince(threadsBefore[i], threadsAfter[i])).map(([kind, us]) => [
        kind,
        Math.round(us / Math.max(1, loads[i].totalRequests)),
      ]),
    ),
    p50: loads[i].latencyMs.p50,
    p99: loads[i].latencyMs.p99,
    loopP99: loops[i].p99,
    loopMax: loops[i].max,
    non2xx: loads[i].non2xx + loads[i].errors,
  }));
}

/** Stops a gateway; one that does not stop cleanly under load is killed (not a measurement failure). */
const stopQuietly = (g: ServerProcess) => g.stop().catch(() => g.kill());

async function main(): Promise<void> {
  const scripts = process.argv.slice(2).map((dir) => resolve(dir, '.build/bench/server-process.js'));
  const missing = scripts.find((script) => !existsSync(script));
  if (missing) throw new Error(`${missing} missing: build it first`);
  const sim = await ServerProcess.start('simulator', { role: 'simulator', latencyMs: 0 });
  try {
    const builds: Array<[string, string | undefined]> = scripts.map((script, i) => [
      i === 0 ? 'A (baseline: memory)' : `${String.fromCharCode(65 + i)} (${process.argv[2 + i]})`,
      script,
    ]);
    builds.push([`${String.fromCharCode(65 + builds.length)} (this tree: PGlite)`, undefined]);
    const rounds: Round[][] = builds.map(() => []);
    for (let r = 0; r < ROUNDS; r++) {
      // One after the other (two starts at once on a loaded machine take long), the first alternating.
      const order = r % 2 ? [...builds.keys()].reverse() : [...builds.keys()];
      const gateways: ServerProcess[] = [];
      for (const i of order) gateways[i] = (await startGateway(builds[i][0], sim.url, builds[i][1])).gateway;
      try {
        const figures = await round(gateways);
        figures.forEach((f, i) => {
          rounds[i].push(f);
          console.log(`round ${r + 1}, ${builds[i][0]}: ${JSON.stringify(f)}`);
        });
      } finally {
        await Promise.all(gateways.map(stopQuietly));
      }
    }
    console.log(`\nkeyed inquiries at ${RATE}/s, ${DURATION} s per round, medians of ${ROUNDS} rounds:`);
    builds.forEach(([name], i) => {
      const m = (pick: (r: Round) => number) => median(rounds[i].map(pick)).toFixed(1);
      const worst = Math.max(...rounds[i].map((r) => r.loopMax)).toFixed(1);
      // Each round's ratio to the baseline's CPU in that round (both under the same load), their median.
      const ratio =
        scripts.length > 0 && i > 0
          ? `, ${median(rounds[i].map((r, k) => r.cpuUs / rounds[0][k].cpuUs)).toFixed(2)}× A`
          : '';
      console.log(
        `  ${name}: CPU ${m((r) => r.cpuUs)} us/inquiry${ratio}, p50 ${m((r) => r.p50)} ms, p99 ${m((r) => r.p99)} ms, ` +
          `loop p99 ${m((r) => r.loopP99)} ms, loop max ${worst} ms, non-2xx ${rounds[i].reduce((s, r) => s + r.non2xx, 0)}`,
      );
      const kinds = [...new Set(rounds[i].flatMap((r) => Object.keys(r.threads)))];
      const byThread = kinds.map((kind) => `${kind} ${median(rounds[i].map((r) => r.threads[kind] ?? 0)).toFixed(0)}`);
      if (kinds.length > 0) console.log(`    by thread, us/inquiry (medians): ${byThread.join(', ')}`);
    });
    if (LONG_SECONDS > 0) await longRun(sim.url);
  } finally {
    await sim.stop();
    await removeLedgerDataDirs();
  }
}

/** This tree alone, as long as asked: RSS, the loop's worst delay and the directory's size per 10 s window. */
async function longRun(simUrl: string): Promise<void> {
  const { gateway, dataDir } = await startGateway('long run', simUrl);
  try {
    const target = gatewayTarget(gateway.url, 'fresh');
    console.log(`\nlong run: ${LONG_SECONDS} s at ${LONG_RATE}/s, keyed; every 10 s:`);
    await loopDelay(gateway.url);
    let total = 0;
    for (let t = 0; t < LONG_SECONDS; t += 10) {
      const cpuBefore = cpuUs(await gateway.stats());
      const load = await measure(target, { connections: 64, durationSeconds: 10, warmupSeconds: 0, rate: LONG_RATE });
      // Read before the collection statsAfterGc forces: the window's own CPU per inquiry, which
      // tells a cost growing with the data from a machine loaded by something else.
      const cpuPerInquiry = (cpuUs(await gateway.stats()) - cpuBefore) / Math.max(1, load.totalRequests);
      total += load.totalRequests;
      const [stats, loop, bytes] = await Promise.all([
        gateway.statsAfterGc(),
        loopDelay(gateway.url),
        directoryBytes(dataDir),
      ]);
      console.log(
        `  ${total} inquiries: RSS ${(stats.rssBytes / MiB).toFixed(0)} MiB, heap ${(stats.heapUsedBytes / MiB).toFixed(0)} MiB, ` +
          `CPU ${cpuPerInquiry.toFixed(0)} us/inquiry, loop max ${loop.max.toFixed(1)} ms, p99 ${load.latencyMs.p99.toFixed(0)} ms, ` +
          `non-2xx ${load.non2xx + load.errors}, ` +
          `data dir ${(bytes / MiB).toFixed(0)} MiB`,
      );
    }
  } finally {
    await stopQuietly(gateway);
  }
}

await main().catch((error: unknown) => {
  console.error(error);
  killAllServers();
  process.exitCode = 1;
});
