/**
 * The soak: a compressed day of traffic (bench/soak/traffic.ts) through 3 gateway replicas on one
 * Redis and one PostgreSQL, against the upstream simulator, with faults on a schedule, then the
 * books checked (bench/soak/books.ts). Run by `npm run soak` (bench/soak/soak.ts, its variables)
 * and, for 60 s, by test/soak.e2e.spec.ts. Loopback only; every loop is bounded by the run's end.
 * docs/soak.md says what it does and why.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { startGatewayProcess, type GatewayProcess } from '../../test/support/gateway-process.js';
import { apiKeysWith, TEST_CLIENTS } from '../../test/support/gateway.js';
import { PostgresServer } from '../../test/support/postgres-server.js';
import { RedisCluster } from '../../test/support/redis-cluster.js';
import { RedisServer } from '../../test/support/redis-server.js';
import { TRACKING_SHAPES } from '../../test/upstream-simulator/tracking-service.js';
import { UpstreamSimulator } from '../../test/upstream-simulator/upstream-simulator.js';
import { checkBooks, type BookBudget, type BookEntry } from './books.js';
import { describe, explain, type ClientAttempt, type FaultWindow } from './explain.js';
import { buildReport, countedFaultEnd, formatReport, rssOf, type ReplicaRss, type UnitPrice } from './report.js';
import { ratePerSecond, TrafficModel, type PlannedRequest } from './traffic.js';

const REQUEST_TIMEOUT_MS = 5_000;

const BUDGETED = { clientId: 'svc-budgeted', key: 'key-budgeted-0123456789', scopes: ['kyc:iban', 'inquiries:read'] };
const ADDED = { clientId: 'app-added', key: 'key-added-0123456789', scopes: ['kyc:card-to-iban', 'inquiries:read'] };
const OPERATOR = { clientId: 'ops-soak', key: 'key-ops-soak-0123456789', scopes: ['ledger:read', 'ledger:reconcile'] };
const ACCOUNTING_KEY = '{vgw:acct}:soak'; // the hash tag of every ledger-queue and budget key

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
const running = new Set<() => unknown>();

/** Ends whatever a run started: nothing is left running on the machine (the CLI's last resort). */
export async function stopEverything(): Promise<void> {
  await Promise.allSettled([...running].map((stop) => Promise.resolve().then(stop)));
  running.clear();
}

export async function runSoak(options: SoakOptions): Promise<SoakOutcome> {
  const minutes = Math.min(Math.max(options.minutes, 0.5), 120);
  const peakRps = Math.min(Math.max(options.peakRps, 1), 200);
  const durationMs = minutes * 60_000;
  const { seed, unitPrice, build, print } = options;
  const redisEmpty = options.redisEmpty === true;
  // Small enough that svc-budgeted runs out during the day (~8 % of requests ask on its account).
  const budgetDailyUnits = Math.max(5, Math.round(minutes * 10));
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });

  /** The start of the day: reset once everything is up, so that setup time is not traffic time. */
  let started = Date.now();
  const at = () => `${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s`;
  const log = (line: string) => print(`[${at()}] ${line}`);

  const [redis, cluster, postgres] = await Promise.all([
    options.cluster
      ? undefined
      : RedisServer.start({ args: redisEmpty ? [] : ['--appendonly', 'yes', '--appendfsync', 'always'] }),
    options.cluster ? RedisCluster.start(3, undefined, 1) : undefined,
    PostgresServer.start(),
  ]);
  running.add(() => Promise.all([redis?.kill(), cluster?.stop(), postgres.kill()]));
  const sim = new UpstreamSimulator();
  await sim.start(0);
  running.add(() => sim.stop());
  const replicas: GatewayProcess[] = [];
  /** Every replica process the run started, killed ones too: their logs explain an imbalance. */
  const everyReplica: { index: number; process: GatewayProcess }[] = [];
  const attempts: ClientAttempt[] = [];
  const faultWindows: FaultWindow[] = [];
  running.add(() => {
    for (const replica of replicas) replica.process.kill('SIGKILL');
  });
  const env: Record<string, string> = {
    UPSTREAM_BASE_URL: sim.baseUrl,
    ...(cluster ? { REDIS_CLUSTER_NODES: cluster.nodes } : { REDIS_URL: redis!.url }),
    LEDGER_DATABASE_URL: postgres.url,
    LOG_LEVEL: 'info', // startGatewayProcess waits for the 'listening on port' line
    UPSTREAM_TIMEOUT_MS: '1500',
    UPSTREAM_ADVANCED_TIMEOUT_MS: '1500',
    API_KEYS: apiKeysWith(BUDGETED, ADDED, OPERATOR),
    COST_UNIT_PRICE: JSON.stringify(unitPrice),
    BUDGETS: JSON.stringify([{ clientId: BUDGETED.clientId, daily: budgetDailyUnits }]),
    INQUIRY_OPERATIONS: JSON.stringify([
      {
        name: 'card-to-iban',
        upstreamPath: '/api/v5/KYC/CardToIban',
        advanced: false,
        fields: { cardNumber: { type: 'cardNumber' } },
      },
    ]),
    INQUIRY_PRICES: JSON.stringify({
      shahkar: { standard: 1, advanced: 3 },
      iban: { standard: 1, advanced: 3 },
      'card-to-iban': { standard: 2 },
    }),
    INQUIRY_REUSE: JSON.stringify({
      shahkar: { maxAgeSeconds: 3600, share: 'client' },
      iban: { maxAgeSeconds: 86400, share: 'client' },
    }),
    REUSE_HMAC_KEY: 'soak-reuse-hmac-key-0123456789abcdef0123',
    UPSTREAM_TRACKING: JSON.stringify({ ...TRACKING_SHAPES.statusInBody, afterSeconds: 1, perMinute: 60 }),
    JWT_PUBLIC_KEY: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    JWT_ISSUER: 'soak',
    JWT_AUDIENCE: 'verification-gateway',
  };
  replicas.push(...(await Promise.all([0, 1, 2].map(() => startGatewayProcess(build, env)))));
  replicas.forEach((process, index) => everyReplica.push({ index, process }));
  /** A replica's resident memory from its /metrics; undefined when it cannot be read. */
  async function rss(replica: GatewayProcess): Promise<number | undefined> {
    try {
      return rssOf(await (await fetch(`${replica.url}/metrics`, { signal: AbortSignal.timeout(5_000) })).text());
    } catch {
      return undefined;
    }
  }
  const rssPerReplica: ReplicaRss[] = await Promise.all(
    replicas.map(async (replica, index) => ({ replica: index, startBytes: await rss(replica) })),
  );
  started = Date.now();
  log(`3 replicas, Redis, PostgreSQL and the simulator up; ${minutes} min, seed ${seed}, peak ${peakRps}/s`);

  const statuses = new Map<string, number>();
  let budgetCountsFrom = new Date(0).toISOString();
  let sent = 0;

  async function jwt(subject: string): Promise<string> {
    return new SignJWT({ scope: 'kyc:shahkar inquiries:read', azp: 'mobile-app' })
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuer('soak')
      .setAudience('verification-gateway')
      .setSubject(subject)
      .setIssuedAt()
      .setExpirationTime('10m')
      .sign(privateKey);
  }

  async function authFor(request: PlannedRequest): Promise<Record<string, string>> {
    if (request.kind === 'jwtUser') return { authorization: `Bearer ${await jwt(`user-${sent % 50}`)}` };
    if (request.kind === 'budgeted') return { 'x-api-key': BUDGETED.key };
    if (request.kind === 'added') return { 'x-api-key': ADDED.key };
    if (request.kind === 'bad' && request.body.includes('advanced')) return { 'x-api-key': TEST_CLIENTS.basic.key };
    return { 'x-api-key': TEST_CLIENTS.full.key };
  }

  async function send(request: PlannedRequest): Promise<void> {
    const number = sent;
    const index = sent++ % replicas.length;
    const replica = replicas[index];
    const headers = { ...request.headers, ...(await authFor(request)) };
    for (let attempt = 0; attempt < (request.twice ? 2 : 1); attempt++) {
      let outcome: string;
      let trackId: string | undefined;
      let cacheStatus: string | undefined;
      let problem: string | undefined;
      // Ours, so that an attempt the connection dropped is named too (the gateway echoes it).
      const requestId = `soak-${number}-${attempt}`;
      const sentAt = Date.now();
      try {
        const response = await fetch(`${replica.url}${request.path}`, {
          method: 'POST',
          headers: { ...headers, 'x-request-id': requestId },
          body: request.body,
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const text = await response.text();
        outcome = String(response.status);
        if (response.status >= 400)
          try {
            problem = (JSON.parse(text) as { code?: string }).code;
          } catch {
            // not a problem+json body
          }
        trackId = response.headers.get('x-track-id') ?? undefined;
        cacheStatus = response.headers.get('cache-status') ?? undefined;
      } catch (error) {
        outcome = (error as Error).name === 'TimeoutError' ? 'timeout' : 'connection';
      }
      attempts.push({
        kind: request.kind,
        replica: index,
        requestId,
        sentAt,
        answeredAt: Date.now(),
        outcome,
        trackId,
        ...(cacheStatus ? { cacheStatus } : {}),
        ...(problem ? { problem } : {}),
      });
      const key = `${request.kind} ${outcome}`;
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
    }
  }

  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  async function restartReplica(index: number, signal: 'SIGKILL' | 'SIGTERM'): Promise<void> {
    const old = replicas[index];
    old.process.kill(signal);
    await old.exited;
    replicas[index] = await startGatewayProcess(build, env);
    everyReplica.push({ index, process: replicas[index] });
  }

  /** The faults, at fractions of the run (docs/soak.md, "Faults"). */
  const FAULTS: {
    at: number;
    name: string;
    run: () => Promise<void> | void;
    untilNext?: true;
    /** A fault of the upstream's next calls: its window lasts until they are taken (countedFaultEnd). */
    takes?: { kind: 'http500' | 'hang-after-processing'; times: number };
  }[] = [
    { at: 0.1, name: 'replica 0 SIGKILLed and restarted', run: () => restartReplica(0, 'SIGKILL') },
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
            if (redisEmpty) budgetCountsFrom = new Date().toISOString();
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
        for (const index of [0, 1, 2]) await restartReplica(index, 'SIGTERM');
      },
    },
  ];

  // When the simulator took the last call of each counted fault (one injection of each kind).
  const taken = new Map<string, number>();
  const lastTakenAt = new Map<string, number>();
  /** Every fault the simulator took and every token call it answered, kept in run.json to explain a 5xx. */
  const faultsTaken: { at: number; path: string; kind: string }[] = [];
  const tokenCalls: { at: number; ok: boolean; status: number }[] = [];
  sim.on('token', ({ ok, status }) => tokenCalls.push({ at: Date.now(), ok, status }));
  sim.on('fault', ({ kind, path }) => {
    faultsTaken.push({ at: Date.now(), path, kind });
    taken.set(kind, (taken.get(kind) ?? 0) + 1);
    if (FAULTS.some((f) => f.takes?.kind === kind && f.takes.times === taken.get(kind)))
      lastTakenAt.set(kind, Date.now());
  });
  const counted: { window: FaultWindow; kind: string }[] = [];

  const traffic = new TrafficModel(seed);
  const inFlight = new Set<Promise<void>>();
  const faultsDone = (async () => {
    for (const [i, fault] of FAULTS.entries()) {
      await sleep(Math.max(0, started + fault.at * durationMs - Date.now()));
      log(`fault: ${fault.name}`);
      const from = Date.now();
      try {
        await fault.run();
        // A state the upstream is left in (slow, failing the next calls) lasts until the next fault.
        const next = FAULTS[i + 1];
        const to = fault.untilNext && next ? started + next.at * durationMs : Date.now();
        faultWindows.push({ name: fault.name, from, to });
        if (fault.takes) counted.push({ window: faultWindows.at(-1)!, kind: fault.takes.kind });
        log(`fault over: ${fault.name}`);
      } catch (error) {
        log(`fault FAILED: ${fault.name}: ${(error as Error).message}`);
      }
    }
  })();
  while (Date.now() - started < durationMs) {
    const phase = (Date.now() - started) / durationMs;
    const request = send(traffic.nextRequest()).finally(() => inFlight.delete(request));
    inFlight.add(request);
    await sleep(1000 / ratePerSecond(phase, peakRps));
  }
  await Promise.all(inFlight);
  await faultsDone;
  sim.clearFaults();
  log(`traffic over: ${sent} requests`);
  for (const { window, kind } of counted) {
    window.to = countedFaultEnd(window.to, lastTakenAt.get(kind), sim.requests, Date.now());
    log(`fault lasted until ${((window.to - started) / 1000).toFixed(1)} s: ${window.name}`);
  }

  const admin = { 'x-api-key': OPERATOR.key };
  const window = `from=${new Date(started - 3_600_000).toISOString()}&to=${new Date(Date.now() + 3_600_000).toISOString()}`;
  async function readLedger(): Promise<BookEntry[]> {
    const response = await fetch(`${replicas[0].url}/admin/ledger?${window}`, { headers: admin });
    if (!response.ok) throw new Error(`GET /admin/ledger: ${response.status} ${await response.text()}`);
    return (await response.text())
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as BookEntry);
  }
  // The queue drained: the ledger stops growing (two reads 2 s apart agree), within 60 s.
  let entries = await readLedger();
  for (let i = 0; i < 30; i++) {
    await sleep(2_000);
    const again = await readLedger();
    if (again.length === entries.length) break;
    entries = again;
  }
  const csv = ['trackId', ...sim.chargesByTrackId.keys()].join('\n');
  const reconciliation = await fetch(`${replicas[0].url}/admin/reconciliations?${window}`, {
    method: 'POST',
    headers: { ...admin, 'content-type': 'text/csv' },
    body: csv,
  });
  const reconciled = (await reconciliation.json()) as Record<string, unknown>;
  log(`reconciliation: ${reconciliation.status}`);
  entries = await readLedger();
  const budgets = (await (await fetch(`${replicas[0].url}/admin/budgets`, { headers: admin })).json()) as {
    budgets: (BookBudget & { window?: string })[];
  };
  const report = checkBooks({
    charges: sim.chargesByTrackId,
    chargedAt: sim.chargedAt,
    entries,
    budgets: budgets.budgets,
    budgetsCountFrom: budgetCountsFrom,
  });

  print('\n== Requests (kind status: count)');
  for (const [key, count] of [...statuses].sort()) print(`  ${key}: ${count}`);
  print("\n== Reconciliation with the simulator's list");
  for (const [key, value] of Object.entries(reconciled))
    if (value && typeof value === 'object' && 'count' in value)
      print(`  ${key}: ${(value as { count: number }).count}`);
  print('\n== Books');
  print(`  simulator charges (trackIds): ${sim.chargesByTrackId.size}`);
  print(
    `  inquiries in the ledger: ${report.inquiries} (charged ${report.charged}, possibly ${report.unknown}, not charged ${report.notCharged})`,
  );
  print(`  reuse: ${report.reused} inquiries answered without buying, ${report.unitsSaved} units saved`);
  for (const imbalance of report.imbalances)
    print(
      `  IMBALANCE: ${imbalance.rule}${imbalance.detail ? `: ${imbalance.detail}` : ''} ${imbalance.trackIds.slice(0, 20).join(' ')}`,
    );
  const explained = new Set(report.imbalances.flatMap((imbalance) => imbalance.trackIds).slice(0, 20));
  if (explained.size > 0) {
    print('\n== What the run knows about each imbalanced trackId');
    const logs = everyReplica.flatMap(({ index, process }) =>
      process
        .output()
        .split('\n')
        .map((line) => `replica ${index}: ${line}`),
    );
    for (const trackId of explained)
      for (const line of describe(
        explain(trackId, { started, upstreamCalls: sim.requests, attempts, faults: faultWindows, logs }),
        started,
      ))
        print(line);
  }

  // RSS at the end, before stopping: the process then in each slot (the faults restarted them).
  for (const [index, replica] of replicas.entries()) rssPerReplica[index].endBytes = await rss(replica);
  const run = {
    minutes,
    seed,
    peakRps,
    started,
    ended: Date.now(),
    faults: faultWindows,
    attempts,
    upstreamCalls: sim.requests.map((r) => ({ at: r.at, trackId: r.trackId, path: r.path })),
    charges: Object.fromEntries(sim.chargesByTrackId),
    chargedAt: Object.fromEntries(sim.chargedAt),
    faultsTaken,
    tokenCalls,
    entries,
    statuses: Object.fromEntries(statuses),
    reconciliation: Object.fromEntries(
      Object.entries(reconciled).map(([key, value]) => [
        key,
        value && typeof value === 'object' && 'count' in value ? (value as { count: number }).count : value,
      ]),
    ),
    books: report,
    unitPrice,
    rss: rssPerReplica,
  };
  // Faults, their failures and healing, latency per phase, the saving, RSS (bench/soak/report.ts).
  const soakReport = buildReport(run);
  for (const line of formatReport(soakReport)) print(line);
  for (const imbalance of soakReport.imbalances)
    print(`  IMBALANCE: ${imbalance.rule}${imbalance.detail ? `: ${imbalance.detail}` : ''}`);
  const imbalances = report.imbalances.length + soakReport.imbalances.length;
  print(imbalances === 0 ? '\nThe books balance.' : `\n${imbalances} imbalance(s).`);

  // The run as data (the chart, bench/soak/chart.ts, is drawn from it): outside src/ and docs/.
  mkdirSync(options.reportDir, { recursive: true });
  const runFile = join(options.reportDir, 'run.json');
  writeFileSync(runFile, JSON.stringify({ ...run, report: soakReport }));
  print(`run written to ${runFile}`);

  for (const replica of replicas) replica.process.kill('SIGTERM');
  await Promise.all(replicas.map((r) => r.exited));
  await sim.stop();
  await Promise.all([redis?.stop(), cluster?.stop(), postgres.stop()]);
  running.clear();
  return { imbalances, runFile };
}
