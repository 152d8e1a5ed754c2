/**
 * `npm run bench:compare -- <buildA> <buildB>`: two builds of the gateway (each a project
 * directory whose `.build/` holds `npm run bench`'s compiled output, e.g. a `git archive` of
 * main and this tree) measured alternately A, B, A, B … in front of one simulator and one
 * redis-server, per scenario of section 1; prints medians of CPU per request, req/s, p50 and
 * p99 and the change B − A. One change at a time, interleaved, medians: the way every gain in
 * the README's Performance section was measured.
 *
 * Environment: BENCH_ROUNDS (default 5), BENCH_SCENARIOS (default "no key"), BENCH_DURATION,
 * BENCH_WARMUP, BENCH_CONNECTIONS as for `npm run bench`; BENCH_NODE_FLAGS_A and
 * BENCH_NODE_FLAGS_B, the Node flags of each build's gateway (default: the production image's,
 * bench/lib/node-flags.ts), so that one build under two sets of flags can be compared too;
 * BENCH_COMPARE_RATE (requests/s): run A and B at the same time, each at this fixed rate,
 * instead of one after the other, so that drift in the machine's speed loads both alike.
 * BENCH_FRESH_PROCESSES=0: keep one pair of gateway processes for all rounds of a scenario
 * (default: a new pair every round, which starts first alternating, since one process pair's
 * figures are not independent samples; docs/performance.md, "How to measure").
 * BENCH_SCENARIO_A: the scenario whose gateway settings build A runs with instead (e.g.
 * `BENCH_SCENARIO_A="no key" BENCH_SCENARIOS="budgets configured" npm run bench:compare -- . .`:
 * one build, without and with budgets, under the same load).
 * The ledger's PostgreSQL is one the bench starts (as a deployment has it: a server of its own,
 * not PGlite in the gateway's process) unless LEDGER_DATABASE_URL names one; the embedded
 * scenario ('' for it) gets a fresh LEDGER_DATA_DIR per gateway start instead. Both builds'
 * event-loop delay over each measured run is read from their /metrics.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { Redis } from 'ioredis';
import { PostgresServer } from '../test/support/postgres-server.js';
import { RedisServer } from '../test/support/redis-server.js';
import {
  API_KEY,
  gatewayStartEnv,
  gatewayTarget,
  INQUIRY_BODY,
  measureServer,
  measurePair,
  median,
  primeIdempotencyKey,
  removeLedgerDataDirs,
  SCENARIOS,
  stripWindow,
  type ServerFigures,
} from './http-overhead.js';
import { heading, num, signed, table } from './lib/format.js';
import { nodeFlagsFrom, PRODUCTION_NODE_FLAGS } from './lib/node-flags.js';
import { killAllServers, ServerProcess } from './lib/servers.js';

const number = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
  return value;
};

/**
 * A gateway's webhook deliveries so far and its oldest pending one, from its /metrics ('' without
 * webhooks): whether its worker kept up with the inquiries whose CPU was measured.
 */
async function webhookBacklog(url: string): Promise<string> {
  const metrics = await (await fetch(`${url}/metrics`)).text();
  const value = (pattern: RegExp) => Number(pattern.exec(metrics)?.[1] ?? NaN);
  const delivered = value(/^vgw_webhook_deliveries_total\{[^}]*result="delivered"[^}]*\} (\S+)$/m);
  if (Number.isNaN(delivered)) return '';
  return `, webhooks delivered ${num(delivered)}, oldest pending ${num(value(/^vgw_webhook_oldest_pending_seconds\{[^}]*\} (\S+)$/m))} s`;
}

async function main(): Promise<void> {
  const builds = process.argv.slice(2, 4).map((dir) => resolve(dir));
  if (builds.length !== 2) throw new Error('usage: npm run bench:compare -- <project dir A> <project dir B>');
  const scripts = builds.map((dir) => resolve(dir, '.build/bench/server-process.js'));
  const nodeFlags = ['A', 'B'].map((build) => nodeFlagsFrom(`BENCH_NODE_FLAGS_${build}`, PRODUCTION_NODE_FLAGS));
  for (const script of scripts) if (!existsSync(script)) throw new Error(`${script} missing: build it first`);
  const rounds = number('BENCH_ROUNDS', 5);
  const sideBySideRate = process.env.BENCH_COMPARE_RATE ? number('BENCH_COMPARE_RATE', 1) : undefined;
  const freshProcesses = process.env.BENCH_FRESH_PROCESSES !== '0';
  const settings = {
    connections: number('BENCH_CONNECTIONS', 32),
    durationSeconds: number('BENCH_DURATION', 10),
    warmupSeconds: number('BENCH_WARMUP', 2),
  };
  const wanted = (process.env.BENCH_SCENARIOS ?? 'no key').split(',').map((s) => s.trim().toLowerCase());
  const scenarios = SCENARIOS.filter((s) => wanted.some((w) => s.name.toLowerCase().includes(w)));
  if (scenarios.length === 0) throw new Error(`no scenario matches ${wanted.join(', ')}`);

  const redisServer = await RedisServer.start();
  const redis = new Redis(redisServer.url);
  // Inherited by the gateways' processes (bench/server-process.ts reads it).
  const ledgerServer = process.env.LEDGER_DATABASE_URL ? undefined : await PostgresServer.start();
  if (ledgerServer) process.env.LEDGER_DATABASE_URL = ledgerServer.url;
  const lines: string[] = [];
  try {
    const sim = await ServerProcess.start('simulator', { role: 'simulator', latencyMs: 0 });
    // A real sink (200 to all) for the scenarios that send to one: the OTLP exporter, webhooks.
    const sink = await ServerProcess.start('sink', { role: 'sink' });
    const baseEnv = {
      UPSTREAM_BASE_URL: sim.url,
      REDIS_URL: redisServer.url,
      REDIS_KEY_PREFIX: 'bench',
      LOG_LEVEL: 'info',
      OTEL_SDK_DISABLED: 'true',
    };
    const scenarioA = process.env.BENCH_SCENARIO_A?.trim().toLowerCase();
    const settingsOfA = scenarioA ? SCENARIOS.find((s) => s.name.toLowerCase().includes(scenarioA)) : undefined;
    if (scenarioA && !settingsOfA) throw new Error(`no scenario matches BENCH_SCENARIO_A=${scenarioA}`);
    for (const s of scenarios) {
      const envOf = (scenario: (typeof SCENARIOS)[number]) => ({
        ...baseEnv,
        ...scenario.gatewayEnv?.({ sinkUrl: sink.url }),
      });
      // One after the other: two Nest start-ups at once on a loaded machine take long. `order`:
      // which build starts first (fresh pairs alternate it).
      const startPair = async (order: number[]) => {
        const gateways: ServerProcess[] = [];
        for (const i of order) {
          const scenario = i === 0 && settingsOfA ? settingsOfA : s;
          gateways[i] = await ServerProcess.start(
            `gateway ${'AB'[i]}`,
            {
              role: 'gateway',
              // A fresh LEDGER_DATA_DIR per start where the scenario has the embedded ledger.
              env: await gatewayStartEnv(scenario, envOf(scenario)),
              probeBody: INQUIRY_BODY,
              probeApiKey: API_KEY,
            },
            { script: scripts[i], execArgv: nodeFlags[i] },
          );
        }
        const targets = await Promise.all(
          gateways.map(async (g) => {
            let key: string | undefined;
            if (s.idempotency === 'replay') {
              key = `bench-replay-${randomUUID()}`;
              await primeIdempotencyKey(g.url, key);
            }
            return gatewayTarget(g.url, s.idempotency, key, s.operation);
          }),
        );
        return { gateways, targets };
      };
      let { gateways, targets } = await startPair([0, 1]);
      const figures: ServerFigures[][] = [[], []];
      if (s.failRatio) await sim.setFailRatio(s.failRatio);
      try {
        const load = { ...settings, connections: s.connections ?? settings.connections };
        const report = async (round: number, i: number, f: ServerFigures) =>
          console.log(
            `  ${s.name}, round ${round + 1}/${rounds}, ${'AB'[i]}: ${num(f.cpuUsPerRequest)} us/req, ` +
              `${num(f.requestsPerSecond)} req/s, p50 ${num(f.latencyMs.p50, 2)} ms${await webhookBacklog(gateways[i].url)}`,
          );
        for (let round = 0; round < rounds; round++) {
          if (freshProcesses && round > 0) {
            // A new pair each round, the first to start alternating: one process's luck (its
            // JIT's choices, its heap's layout, where it was scheduled) held all rounds of a
            // pair alike; the same build against itself read up to ±25 % in one pair.
            await Promise.all(gateways.map((g) => g.stop()));
            ({ gateways, targets } = await startPair(round % 2 ? [1, 0] : [0, 1]));
          }
          if (sideBySideRate) {
            // Both builds at once, at the same fixed rate: whatever else loads the machine
            // loads both alike, so the ratio of each round holds even when absolute figures drift.
            const pair = await measurePair(
              [gateways[0], gateways[1]],
              [targets[0], targets[1]],
              { ...load, rate: sideBySideRate },
              [true, true],
            );
            for (const [i, f] of pair.entries()) {
              figures[i].push(f);
              await report(round, i, f);
            }
            continue;
          }
          // A first in even rounds, B first in odd ones: neither always follows the other.
          for (const i of round % 2 ? [1, 0] : [0, 1]) {
            const f = stripWindow(await measureServer(gateways[i], sim, redis, targets[i], load, { eventLoop: true }));
            figures[i].push(f);
            await report(round, i, f);
          }
        }
      } finally {
        if (s.failRatio) await sim.setFailRatio(0);
        await Promise.all(gateways.map((g) => g.stop()));
      }
      const m = figures.map((runs) => ({
        cpu: median(runs.map((r) => r.cpuUsPerRequest)),
        rps: median(runs.map((r) => r.requestsPerSecond)),
        p50: median(runs.map((r) => r.latencyMs.p50)),
        p99: median(runs.map((r) => r.latencyMs.p99)),
        rss: median(runs.map((r) => r.memory.rssMiB)),
        all: runs.map((r) => num(r.cpuUsPerRequest)).join(' '),
        // The event loop's delay over each measured run (p99 median of the rounds, max the worst).
        loop: runs.every((r) => r.eventLoopDelayMs)
          ? `${num(median(runs.map((r) => r.eventLoopDelayMs!.p99)), 1)}/${num(Math.max(...runs.map((r) => r.eventLoopDelayMs!.max)), 1)}`
          : '',
        others: runs.every((r) => r.cpuOtherThreadsUsPerRequest !== undefined)
          ? num(median(runs.map((r) => r.cpuOtherThreadsUsPerRequest!)))
          : '',
        // Promoted bytes per request (median) and full collections per round (median): what the
        // other threads' CPU follows; '' for a build older than the figure.
        gc: runs.every((r) => r.gc)
          ? `${num(median(runs.map((r) => r.gc!.promotedBytesPerRequest)))}/${num(median(runs.map((r) => r.gc!.fullCollections)))}`
          : '',
      }));
      const roundRatios = figures[1].map((b, round) => b.cpuUsPerRequest / figures[0][round].cpuUsPerRequest);
      lines.push(
        '',
        `${s.name} (${rounds} ${sideBySideRate ? `side-by-side rounds at ${sideBySideRate} req/s each` : 'interleaved rounds'}, medians)`,
        table(
          [
            'build',
            'CPU us/req',
            'other threads',
            'promoted B/req / full GCs',
            'req/s',
            'p50 ms',
            'p99 ms',
            'loop p99/max ms',
            'RSS MiB',
            'CPU us/req per round',
          ],
          [
            ...m.map((x, i) => [
              `${'AB'[i]} ${builds[i]}${nodeFlags[i].length ? ` (${nodeFlags[i].join(' ')})` : ''}`,
              num(x.cpu),
              x.others,
              x.gc,
              num(x.rps),
              num(x.p50, 2),
              num(x.p99, 2),
              x.loop,
              num(x.rss),
              x.all,
            ]),
            [
              'B - A',
              `${signed(m[1].cpu - m[0].cpu, 0)} (${signed(((m[1].cpu - m[0].cpu) / m[0].cpu) * 100, 1)}%)`,
              '',
              '',
              signed(m[1].rps - m[0].rps, 0),
              signed(m[1].p50 - m[0].p50, 2),
              signed(m[1].p99 - m[0].p99, 2),
              '',
              signed(m[1].rss - m[0].rss, 0),
              '',
            ],
          ],
          [0, 9],
        ),
        // Round by round, B's CPU per request over A's measured in the same round (side by
        // side: at the same moment), and their median: the figure that drift affects least.
        `B / A CPU per round: median ${num(median(roundRatios), 3)} (${roundRatios.map((r) => num(r, 3)).join(' ')})`,
      );
    }
    await sim.stop();
  } finally {
    killAllServers();
    redis.disconnect();
    await redisServer.stop();
    await ledgerServer?.stop();
    await removeLedgerDataDirs();
  }
  console.log(heading('A/B comparison'));
  for (const line of lines) console.log(line);
}

main().catch((error: Error) => {
  console.error(`bench:compare failed: ${error.stack ?? error.message}`);
  killAllServers();
  process.exitCode = 1;
});
