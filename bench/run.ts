/**
 * `npm run bench`: the gateway's benchmark suite, in one run, each figure next to a reference
 * measured in the same run:
 *   1. HTTP overhead: the gateway (in-process store, then Redis) vs the upstream simulator
 *      called directly, plus the idempotent replay path (bench/http-overhead.ts);
 *   2. token single flight across instances sharing one Redis (bench/token-single-flight.ts);
 *   3. validator micro-benchmark vs a plain regex test (bench/validation.ts).
 * Prints tables and writes the same figures to .build/bench-results.json. Everything runs on
 * 127.0.0.1; every server, gateway and redis-server started here is stopped before exit, and
 * a watchdog ends the run if it overstays.
 *
 * Optional environment: BENCH_DURATION (s, default 10), BENCH_WARMUP (s, default 2),
 * BENCH_CONNECTIONS (default 32), BENCH_SECTIONS (e.g. "1,3"; default all).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { RedisServer } from '../test/support/redis-server.js';
import { benchHttpOverhead, formatHttpOverhead, type HttpOverheadResult } from './http-overhead.js';
import { heading, num, ratio, signed } from './lib/format.js';
import { killAllServers } from './lib/servers.js';
import { benchTokenSingleFlight, formatTokenSingleFlight, type SingleFlightResult } from './token-single-flight.js';
import { benchValidation, formatValidation, type ValidationResult } from './validation.js';

const RESULTS_FILE = fileURLToPath(new URL('../bench-results.json', import.meta.url));
const WATCHDOG_MS = 240_000;
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
  },
  singleFlight: { instances: [1, 3, 5], concurrentRequests: [100, 300, 1000] },
  validation: { iterations: 200_000, rounds: 5, warmupIterations: 50_000 },
};
const sections = new Set((process.env.BENCH_SECTIONS ?? '1,2,3').split(',').map((s) => s.trim()));

const log = (line: string) => console.log(line);
let redis: RedisServer | undefined;

function emergencyStop(reason: string, exitCode: number): void {
  console.error(`\nbench: ${reason}; killing every server started by the bench`);
  killAllServers();
  void redis?.kill();
  setTimeout(() => process.exit(exitCode), 200).unref();
}

/** The headline figures, one line each. */
function summary(http?: HttpOverheadResult, flight?: SingleFlightResult, validation?: ValidationResult): string[] {
  const lines: string[] = [];
  if (http) {
    for (const label of ['memory', 'redis'] as const) {
      const r = http.ratios[label];
      lines.push(
        `gateway (${label} store) vs simulator direct: throughput ${ratio(r.throughputVsReference)}, ` +
          `added latency avg ${signed(r.addedAverageMs, 2)} ms, p50 ${signed(r.addedP50Ms, 0)} ms, p99 ${signed(r.addedP99Ms, 0)} ms; ` +
          `idempotent replay ${ratio(r.replayVsFreshThroughput)} the fresh throughput (avg ${num(r.replayAverageMs, 2)} ms)`,
      );
    }
    const replayCalls = http.scenarios
      .filter((s) => s.name.includes('replay'))
      .reduce((sum, s) => sum + s.upstreamInquiryCalls, 0);
    const failures = http.scenarios.reduce((sum, s) => sum + s.non2xx + s.errors, 0);
    lines.push(
      `upstream inquiries during replay runs: ${replayCalls}; non-2xx + errors over all load runs: ${failures}`,
    );
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

  try {
    if (sections.has('1') || sections.has('2')) redis = await RedisServer.start();
    if (sections.has('1')) {
      log('\n[1/3] HTTP overhead ...');
      httpOverhead = await benchHttpOverhead(settings.http, redis!.url, log);
      console.log(formatHttpOverhead(httpOverhead));
    }
    if (sections.has('2')) {
      log('\n[2/3] token single flight ...');
      singleFlight = await benchTokenSingleFlight(
        redis!.url,
        settings.singleFlight.instances,
        settings.singleFlight.concurrentRequests,
        log,
      );
      console.log(formatTokenSingleFlight(singleFlight));
    }
    if (sections.has('3')) {
      log('\n[3/3] validators ...');
      validation = benchValidation(settings.validation, log);
      console.log(formatValidation(validation));
    }
  } finally {
    killAllServers();
    await redis?.stop();
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
  };
  await mkdir(dirname(RESULTS_FILE), { recursive: true });
  await writeFile(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);

  console.log(heading('Summary'));
  for (const line of summary(httpOverhead, singleFlight, validation)) console.log(line);
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
