/**
 * `npm run bench`: the gateway's benchmark suite, in one run, each figure next to a reference
 * measured in the same run:
 *   1. the gateway vs a bare reference proxy (node:http + ioredis) on the same simulator and
 *      redis-server: CPU per request, req/s, latency, memory, Redis commands per inquiry, in
 *      several scenarios (bench/http-overhead.ts);
 *   2. token single flight across instances sharing one Redis (bench/token-single-flight.ts);
 *   3. validator micro-benchmark vs a plain regex test (bench/validation.ts);
 *   4. held long-polls: memory above as many idle connections, Redis connections, wake-up
 *      fan-out (bench/long-polls.ts).
 * Prints tables and writes the same figures to .build/bench-results.json. Everything runs on
 * 127.0.0.1; every server, gateway and redis-server started here is stopped before exit, and
 * a watchdog ends the run if it overstays.
 *
 * Optional environment: BENCH_DURATION (s, default 10), BENCH_WARMUP (s, default 2),
 * BENCH_CONNECTIONS (default 32), BENCH_RATE (section 1 at this fixed rate, requests/s), BENCH_SECTIONS (e.g. "1,3"; default all),
 * BENCH_SCENARIOS (comma-separated substrings of section 1's scenario names; default all),
 * BENCH_ROUNDS (interleaved gateway/reference rounds per scenario, medians; default 1),
 * BENCH_LONG=1 (adds a long run: BENCH_LONG_INQUIRIES, default 500 000, RSS sampled, in the
 * first selected scenario's gateway environment), BENCH_GATEWAY_BUILD (another build's gateway,
 * e.g. a worktree of an earlier commit, run by this tree's section 1: bench/http-overhead.ts),
 * BENCH_PROFILE=1 (section 1 only: the baseline scenario with the gateway under --cpu-prof,
 * then self time by package and function), BENCH_RESULTS (where to write the JSON figures).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { PostgresServer } from '../test/support/postgres-server.js';
import { RedisServer } from '../test/support/redis-server.js';
import { benchHttpOverhead, formatHttpOverhead, median, SCENARIOS, type HttpOverheadResult } from './http-overhead.js';
import { heading, num, ratio } from './lib/format.js';
import { killAllServers } from './lib/servers.js';
import { benchTokenSingleFlight, formatTokenSingleFlight, type SingleFlightResult } from './token-single-flight.js';
import { benchValidation, formatValidation, type ValidationResult } from './validation.js';
import { benchLongPolls, formatLongPolls, type LongPollResult } from './long-polls.js';

const RESULTS_FILE = process.env.BENCH_RESULTS || fileURLToPath(new URL('../bench-results.json', import.meta.url));
const EXIT_GRACE_MS = 5_000;

function positiveNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
  return value;
}

const settings = {
  http: {
    connections: positiveNumber('BENCH_CONNECTIONS', 32),
    durationSeconds: positiveNumber('BENCH_DURATION', 10),
    warmupSeconds: positiveNumber('BENCH_WARMUP', 2),
    // A fixed arrival rate (requests/s) for section 1's runs instead of as fast as answered: the
    // event-loop delay of a load the machine holds, apart from a saturated machine's scheduling.
    ...(process.env.BENCH_RATE ? { rate: positiveNumber('BENCH_RATE', 1) } : {}),
  },
  rounds: positiveNumber('BENCH_ROUNDS', 1),
  scenarios: process.env.BENCH_SCENARIOS ? process.env.BENCH_SCENARIOS.split(',').map((s) => s.trim()) : undefined,
  longRunInquiries: process.env.BENCH_LONG === '1' ? positiveNumber('BENCH_LONG_INQUIRIES', 500_000) : 0,
  profile: process.env.BENCH_PROFILE === '1',
  singleFlight: { instances: [1, 3, 5], concurrentRequests: [100, 300, 1000] },
  validation: { iterations: 200_000, rounds: 5, warmupIterations: 50_000 },
  longPolls: { sizes: [500, 2000] },
};
const sections = new Set(
  (process.env.BENCH_SECTIONS ?? (settings.profile ? '1' : '1,2,3,4')).split(',').map((s) => s.trim()),
);
/** Ends a run that overstays: generous for the scenarios, rounds and long run asked for. */
const WATCHDOG_MS =
  240_000 +
  SCENARIOS.length * 2 * settings.rounds * (settings.http.durationSeconds + settings.http.warmupSeconds + 10) * 1000 +
  settings.longRunInquiries * 2;

const log = (line: string) => console.log(line);
let redis: RedisServer | undefined;
let ledgerServer: PostgresServer | undefined;

function emergencyStop(reason: string, exitCode: number): void {
  console.error(`\nbench: ${reason}; killing every server started by the bench`);
  killAllServers();
  void redis?.kill();
  void ledgerServer?.kill();
  setTimeout(() => process.exit(exitCode), 200).unref();
}

/** The headline figures, one line each. */
function summary(
  http?: HttpOverheadResult,
  flight?: SingleFlightResult,
  validation?: ValidationResult,
  longPolls?: LongPollResult,
): string[] {
  const lines: string[] = [];
  if (http) {
    for (const s of http.scenarios) {
      lines.push(
        `${s.name}: gateway ${num(s.gateway.cpuUsPerRequest)} us CPU/request vs reference ${num(s.reference.cpuUsPerRequest)} ` +
          `(${ratio(s.gateway.cpuUsPerRequest / s.reference.cpuUsPerRequest)}), throughput ${ratio(s.gateway.requestsPerSecond / s.reference.requestsPerSecond)}, ` +
          `p50 ${num(s.gateway.latencyMs.p50, 2)} vs ${num(s.reference.latencyMs.p50, 2)} ms, p99 ${num(s.gateway.latencyMs.p99, 2)} vs ${num(s.reference.latencyMs.p99, 2)} ms, ` +
          `RSS ${num(s.gateway.memory.rssMiB)} MiB` +
          (s.gateway.eventLoopDelayMs
            ? `, event loop p99 ${num(s.gateway.eventLoopDelayMs.p99, 1)} ms, max ${num(s.gateway.eventLoopDelayMs.max, 1)} ms`
            : '') +
          // Shared by both servers in the side-by-side scenario: not counted there.
          (Number.isNaN(s.gateway.redis.totalCommandsPerInquiry)
            ? ''
            : `, Redis ${num(s.gateway.redis.totalCommandsPerInquiry, 1)} commands/inquiry`) +
          (s.cpuRatioByRound ? `; CPU ratio by round, median ${ratio(median(s.cpuRatioByRound))}` : ''),
      );
    }
    if (http.longRun) {
      const samples = http.longRun.samples;
      const rss = samples.map((x) => x.rssMiB);
      lines.push(
        `long run (${http.longRun.scenario}, ${num(http.longRun.inquiries)} inquiries): RSS ${num(Math.min(...rss))}..${num(Math.max(...rss))} MiB, ` +
          `${num(http.longRun.afterGc.rssMiB)} MiB after a full GC (heap used ${num(http.longRun.afterGc.heapUsedMiB)} MiB)` +
          (http.longRun.ledgerDiskMiB === undefined
            ? ''
            : `, ledger on disk ${num(http.longRun.ledgerDiskMiB, 1)} MiB`),
      );
    }
  }
  if (flight) {
    const cold = Math.max(...flight.cases.map((c) => c.coldGetTokenCalls));
    const forced = Math.max(...flight.cases.map((c) => c.forcedGetTokenCalls));
    const lastToken = Math.max(...flight.cases.map((c) => c.lastInstanceTokenMs));
    lines.push(
      `token single flight over ${flight.cases.length} cases: max GetToken calls per renewal cold ${cold}, forced ${forced} ` +
        `(${flight.allSingleFlight ? 'OK' : 'FAIL'}); every instance held a token within ${num(lastToken)} ms of booting`,
    );
  }
  if (validation) {
    const slowdowns = validation.cases.map((c) => `${c.name} ${ratio(1 / c.ratio, 1)} (${num(c.validatorNsPerOp)} ns)`);
    lines.push(`validator slowdown vs a plain regex: ${slowdowns.join('; ')}`);
  }
  if (longPolls) {
    for (const c of longPolls.cases) {
      lines.push(
        `${num(c.held)} held long-polls: ${num(c.heapKiBPerPoll, 1)} KiB heap each above an idle connection ` +
          `(RSS +${num(c.waiting.rssMiB - c.idle.rssMiB, 1)} MiB in all), Redis connections ${c.redisConnectionsBefore} → ` +
          `${c.redisConnectionsHeld}, all woken ${num(c.wakeAllMs, 1)} ms after one notice`,
      );
    }
  }
  return lines;
}

async function main(): Promise<void> {
  const started = performance.now();
  const watchdog = setTimeout(() => emergencyStop(`still running after ${WATCHDOG_MS / 1000} s`, 2), WATCHDOG_MS);
  watchdog.unref();
  process.once('SIGINT', () => emergencyStop('interrupted', 130));
  process.once('SIGTERM', () => emergencyStop('terminated', 143));

  const cpus = os.cpus();
  console.log(
    `Verification gateway benchmarks: node ${process.version}, ${os.platform()}/${os.arch()}, ` +
      `${cpus.length} x ${cpus[0]?.model.trim() ?? 'unknown CPU'}, ${new Date().toISOString()}`,
  );

  let httpOverhead: HttpOverheadResult | undefined;
  let singleFlight: SingleFlightResult | undefined;
  let validation: ValidationResult | undefined;
  let longPolls: LongPollResult | undefined;

  try {
    if (sections.has('1') || sections.has('2') || sections.has('4')) redis = await RedisServer.start();
    // The ledger on a PostgreSQL server of its own, as deployed (not PGlite inside the measured
    // process), unless LEDGER_DATABASE_URL names one; the gateways' processes inherit it.
    if (sections.has('1') && !process.env.LEDGER_DATABASE_URL) {
      ledgerServer = await PostgresServer.start();
      process.env.LEDGER_DATABASE_URL = ledgerServer.url;
    }
    if (sections.has('1')) {
      log('\n[1/4] gateway vs reference proxy ...');
      httpOverhead = await benchHttpOverhead({
        settings: settings.http,
        redisUrl: redis!.url,
        rounds: settings.rounds,
        only: settings.scenarios,
        longRunInquiries: settings.longRunInquiries,
        profile: settings.profile,
        log,
      });
      console.log(formatHttpOverhead(httpOverhead));
    }
    if (sections.has('2')) {
      log('\n[2/4] token single flight ...');
      singleFlight = await benchTokenSingleFlight(
        redis!.url,
        settings.singleFlight.instances,
        settings.singleFlight.concurrentRequests,
        log,
      );
      console.log(formatTokenSingleFlight(singleFlight));
    }
    if (sections.has('3')) {
      log('\n[3/4] validators ...');
      validation = benchValidation(settings.validation, log);
      console.log(formatValidation(validation));
    }
    if (sections.has('4')) {
      log('\n[4/4] held long-polls ...');
      longPolls = await benchLongPolls({ redis: redis!, sizes: settings.longPolls.sizes });
      console.log(formatLongPolls(longPolls));
    }
  } finally {
    killAllServers();
    await redis?.stop();
    await ledgerServer?.stop();
  }

  const totalSeconds = (performance.now() - started) / 1000;
  const results = {
    finishedAt: new Date().toISOString(),
    node: process.version,
    platform: `${os.platform()}/${os.arch()}`,
    cpus: { count: cpus.length, model: cpus[0]?.model.trim() ?? null },
    settings,
    totalSeconds,
    httpOverhead: httpOverhead ?? null,
    tokenSingleFlight: singleFlight ?? null,
    validation: validation ?? null,
    longPolls: longPolls ?? null,
  };
  await mkdir(dirname(RESULTS_FILE), { recursive: true });
  await writeFile(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);

  console.log(heading('Summary'));
  for (const line of summary(httpOverhead, singleFlight, validation, longPolls)) console.log(line);
  console.log(`\nFigures written to ${RESULTS_FILE}`);
  console.log(`Total bench time: ${num(totalSeconds, 1)} s`);
  if (singleFlight && !singleFlight.allSingleFlight) process.exitCode = 1;

  clearTimeout(watchdog);
  // Everything was closed above; if a handle still keeps the process alive, say which and go.
  setTimeout(() => {
    console.error(
      `bench: still alive ${EXIT_GRACE_MS} ms after finishing; open resources: ${process.getActiveResourcesInfo().join(', ')}`,
    );
    process.exit(3);
  }, EXIT_GRACE_MS).unref();
}

main().catch((error: Error) => {
  console.error(`bench failed: ${error.stack ?? error.message}`);
  process.exitCode = 1;
  emergencyStop('failed', 1);
});
