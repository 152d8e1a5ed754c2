/**
 * Section 1: the gateway against the bare reference proxy (bench/reference-proxy.ts), both in
 * front of the same upstream simulator and the same redis-server, each in its own child
 * process. Per scenario and server: CPU per request (user + system time of that process over
 * the measured run ÷ its requests: robust to other load on the machine, unlike req/s), req/s,
 * p50/p99, RSS and heap, Redis commands and read events (≈ round trips) per inquiry; then the
 * ratios gateway/reference.
 *
 * Scenarios are data (SCENARIOS below): add one with its gateway environment, load shape and
 * upstream failure ratio. Gateways with the same environment are one process, started when first
 * needed and stopped after the last scenario that uses it.
 */
import { nodeFlagsFrom, PRODUCTION_NODE_FLAGS } from './lib/node-flags.js';
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { TEST_CLIENTS } from '../test/support/gateway.js';
import { TRACKING_SHAPES } from '../test/upstream-simulator/tracking-service.js';
import { summariseProfile, type ProfileSummary } from './lib/cpu-profile.js';
import { heading, num, pct, ratio, signed, table } from './lib/format.js';
import type { ProcessStats, SimulatorStats } from './lib/ipc.js';
import { measure, warmUp, type LoadFigures, type LoadSettings, type LoadTarget } from './lib/load.js';
import { monitorSample, perInquiry, readCounters, type MonitorSample, type RedisDelta } from './lib/redis-stats.js';
import { ServerProcess, type StartOptions } from './lib/servers.js';
import { directoryBytes, freshLedgerDataDir, removeLedgerDataDirs } from './lib/ledger-dirs.js';

const NATIONAL_CODE = '0499370899';
const MOBILE = '09121234567';
export const INQUIRY_BODY = JSON.stringify({ nationalCode: NATIONAL_CODE, mobileNumber: MOBILE });
const IBAN_BODY = JSON.stringify({ iban: 'IR820540102680020817909002' });
/**
 * An operation the operator adds (docs/api.md §10) with two fields, as Shahkar has: the same work
 * through the catalog's route and field types instead of the typed route and its DTO.
 */
const ADDED_OPERATION = {
  name: 'card-owner',
  upstreamPath: '/api/v5/KYC/CardOwner',
  fields: { cardNumber: { type: 'cardNumber' }, nationalCode: { type: 'nationalCode' } },
} as const;
const ADDED_BODY = JSON.stringify({ cardNumber: '6037990000000006', nationalCode: NATIONAL_CODE });
/** The inquiry a scenario sends: the gateway path /v1/kyc/<operation> and its body. */
export type Operation = 'shahkar' | 'iban' | typeof ADDED_OPERATION.name;
const BODY: Record<Operation, string> = { shahkar: INQUIRY_BODY, iban: IBAN_BODY, [ADDED_OPERATION.name]: ADDED_BODY };
export const API_KEY = TEST_CLIENTS.basic.key;
const MONITOR_SAMPLE_INQUIRIES = 100;
const MiB = 2 ** 20;
const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** What a scenario's gateway environment may refer to (servers the bench started). */
export interface ScenarioContext {
  /** An HTTP server answering 200 to everything: an OTLP collector stand-in. */
  sinkUrl: string;
}

export interface Scenario {
  name: string;
  /** Gateway environment over the base (Redis, key prefix, LOG_LEVEL info, OTEL_SDK_DISABLED=true). */
  gatewayEnv?: (context: ScenarioContext) => Record<string, string>;
  /** Default: shahkar. */
  operation?: Operation;
  /** Default: the bench's connections (32). */
  connections?: number;
  /** 'fresh': a new Idempotency-Key per request; 'replay': one key, answered from the store. */
  idempotency?: 'none' | 'fresh' | 'replay';
  /** Share of upstream inquiries answered with a supplier failure (502). */
  failRatio?: number;
  /** `Cache-Control` sent with every inquiry (reuse of paid answers, docs/api.md §2). */
  cacheControl?: string;
  /** Measure the reference proxy in this scenario too (else compare with the 'no key' one). */
  reference: boolean;
  /** Count the commands of a short sample with MONITOR (client vs inside scripts). */
  monitor?: boolean;
  /**
   * Gateway and reference loaded at the same time, each at this fixed rate (requests/s): the
   * host's drifts then weigh on both alike, so their CPU ratio is the steadiest figure of a
   * noisy machine (Redis and simulator figures are shared, so not reported for it).
   */
  sideBySideRate?: number;
  /**
   * The embedded ledger on disk: each start of this scenario's gateway gets a new empty
   * LEDGER_DATA_DIR (a temporary directory, removed when the bench ends).
   */
  freshLedgerDataDir?: boolean;
}

/** The environment a gateway of scenario `s` starts with: `env`, and its own LEDGER_DATA_DIR if the scenario asks. */
export async function gatewayStartEnv(s: Scenario, env: Record<string, string>): Promise<Record<string, string>> {
  return s.freshLedgerDataDir ? { ...env, LEDGER_DATA_DIR: await freshLedgerDataDir() } : env;
}
export { removeLedgerDataDirs };

/**
 * How the gateway is started, BENCH_LAUNCH: `image` (default) with the image's NODE_OPTIONS
 * (docs/operations.md, "Memory"), or `start:prod` as `npm run start:prod` does, with Node's
 * defaults. BENCH_GATEWAY_NODE_FLAGS overrides the flags of either ('' for none). The output names
 * the launch and the flags.
 */
const LAUNCHES = { image: PRODUCTION_NODE_FLAGS, 'start:prod': '' } as const;
const LAUNCH = (process.env.BENCH_LAUNCH || 'image') as keyof typeof LAUNCHES;
if (!(LAUNCH in LAUNCHES)) throw new Error(`BENCH_LAUNCH must be one of ${Object.keys(LAUNCHES).join(', ')}`);
const GATEWAY_NODE_FLAGS = nodeFlagsFrom('BENCH_GATEWAY_NODE_FLAGS', LAUNCHES[LAUNCH]);
export const GATEWAY_LAUNCH = `${LAUNCH}${process.env.BENCH_GATEWAY_NODE_FLAGS !== undefined ? ' (flags from BENCH_GATEWAY_NODE_FLAGS)' : ''}`;
/**
 * The reference proxy's Node flags: none (Node's defaults), or BENCH_REFERENCE_NODE_FLAGS, e.g.
 * the gateway's own, to see how much of a flag's gain is the gateway's alone.
 */
const REFERENCE_NODE_FLAGS = nodeFlagsFrom('BENCH_REFERENCE_NODE_FLAGS', '');
/**
 * BENCH_GATEWAY_BUILD: a project directory whose compiled `.build/bench/server-process.js` runs
 * section 1's gateways instead of this tree's (e.g. a worktree of an earlier commit: its long run
 * or event-loop delay under this tree's scenarios). Reference, simulator and load stay this tree's.
 */
const GATEWAY_SCRIPT = process.env.BENCH_GATEWAY_BUILD
  ? resolve(process.env.BENCH_GATEWAY_BUILD, '.build/bench/server-process.js')
  : undefined;

/** Requests per second of each server in the side-by-side scenario (BENCH_SIDE_BY_SIDE_RATE). */
const SIDE_BY_SIDE_RATE = Number(process.env.BENCH_SIDE_BY_SIDE_RATE || 2000);
if (!(SIDE_BY_SIDE_RATE > 0)) throw new Error('BENCH_SIDE_BY_SIDE_RATE must be a positive number');

/** The first entry is the baseline every other scenario without its own reference run is compared with. */
const REUSE_ENV = () => ({
  INQUIRY_REUSE: JSON.stringify({ shahkar: { maxAgeSeconds: 86_400, share: 'client' } }),
  REUSE_HMAC_KEY: 'bench-reuse-hmac-key-0123456789abcdef',
});

/** The webhook scenarios' endpoint: the bench's sink, subscribed to the basic client's inquiry.settled. */
function oneWebhookEndpoint(sinkUrl: string): Record<string, string> {
  const endpoint = {
    id: 'bench',
    clientId: TEST_CLIENTS.basic.clientId,
    url: `${sinkUrl}/hook`,
    secret: `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
    events: ['inquiry.settled'],
  };
  return { WEBHOOKS: JSON.stringify([endpoint]), WEBHOOKS_ALLOW_HTTP: 'true' };
}

export const SCENARIOS: Scenario[] = [
  { name: 'no key', reference: true, monitor: true },
  // Reuse (docs/api.md §2): every request after the first is a stored answer (no upstream call,
  // no budget); and a miss with reuse (max-age=0 from one connection: nothing in flight to join,
  // nothing old enough to reuse), which adds the lookup and the store to a paid inquiry.
  { name: 'reuse hit', gatewayEnv: REUSE_ENV, cacheControl: 'max-age=86400', reference: false, monitor: true },
  {
    name: 'reuse miss',
    gatewayEnv: REUSE_ENV,
    cacheControl: 'max-age=0',
    connections: 1,
    reference: false,
    monitor: true,
  },
  { name: 'IBAN, no key', operation: 'iban', reference: true },
  {
    // Beside 'no key' (Shahkar): the catalog's one route, its guard and its field types.
    name: 'added operation (two fields), no key',
    operation: ADDED_OPERATION.name,
    gatewayEnv: () => ({
      INQUIRY_OPERATIONS: JSON.stringify([ADDED_OPERATION]),
      INQUIRY_PRICES: JSON.stringify({
        shahkar: { standard: 1, advanced: 3 },
        iban: { standard: 1, advanced: 3 },
        [ADDED_OPERATION.name]: { standard: 1, advanced: 3 },
      }),
      // The load's key (app-basic) with the added operation's scope.
      API_KEYS: JSON.stringify([
        {
          clientId: TEST_CLIENTS.basic.clientId,
          keySha256: createHash('sha256').update(API_KEY).digest('hex'),
          scopes: [...TEST_CLIENTS.basic.scopes, `kyc:${ADDED_OPERATION.name}`],
        },
      ]),
    }),
    reference: false,
  },
  {
    // COST_UNIT_PRICE set: the price stamped on every record and ledger entry (decision 0015).
    name: 'unit price recorded',
    gatewayEnv: () => ({ COST_UNIT_PRICE: JSON.stringify({ amount: '25000', currency: 'IRR' }) }),
    reference: false,
    monitor: true,
  },
  {
    // The client's and the all-callers' budgets, never reached: one reservation script per inquiry
    // and its commit in the settlement's write (docs/performance.md, "Budgets").
    name: 'budgets configured (client and *)',
    gatewayEnv: () => ({
      BUDGETS: JSON.stringify([
        { clientId: TEST_CLIENTS.basic.clientId, daily: 1_000_000_000, monthly: 1_000_000_000 },
        { clientId: '*', daily: 1_000_000_000 },
      ]),
    }),
    reference: false,
    monitor: true,
  },
  {
    // The provider's tracking service configured (docs/api.md §8): questions are asked only about
    // unknowns, by a background worker, so an inquiry's path should not change (±3 %, issue 43).
    name: 'tracking configured (UPSTREAM_TRACKING)',
    gatewayEnv: () => ({ UPSTREAM_TRACKING: JSON.stringify({ ...TRACKING_SHAPES.statusInBody, afterSeconds: 60 }) }),
    reference: false,
  },
  {
    // One endpoint subscribed to inquiry.settled (docs/api.md §9): the event rides the ledger
    // entry's insert (a trigger, in PostgreSQL), and this replica's worker signs each and posts
    // it to the bench's sink (200 to all). Against 'no key': `BENCH_SCENARIO_A="no key"
    // BENCH_SCENARIOS=webhook npm run bench:compare -- . .` (docs/performance.md, "Webhooks").
    name: 'webhook: one endpoint on inquiry.settled',
    gatewayEnv: ({ sinkUrl }) => oneWebhookEndpoint(sinkUrl),
    reference: false,
  },
  {
    // The same endpoint on an inquiry replica beside a drainer Deployment (WEBHOOKS_DELIVER=false,
    // as the chart sets it): the event is the trigger's insert in PostgreSQL, and another process
    // delivers. What an inquiry itself costs with webhooks (docs/performance.md, "Webhooks").
    name: 'webhook, delivered apart (WEBHOOKS_DELIVER=false)',
    gatewayEnv: ({ sinkUrl }) => ({ ...oneWebhookEndpoint(sinkUrl), WEBHOOKS_DELIVER: 'false' }),
    reference: false,
  },
  // An inquiry replica beside a drainer Deployment (LEDGER_DRAIN=false): the ledger's duty and
  // entry ride the record's script, and nothing drains here. A key prefix of its own, so that a
  // draining gateway measured beside it never drains its entries (docs/performance.md, "Ledger").
  ...(['shahkar', 'iban'] as const).map((operation): Scenario => ({
    name: `${operation === 'iban' ? 'IBAN, ' : ''}drain apart (LEDGER_DRAIN=false)`,
    operation,
    gatewayEnv: () => ({ LEDGER_DRAIN: 'false', REDIS_KEY_PREFIX: 'bench-apart' }),
    reference: false,
  })),
  {
    // A single-node install as shipped: no LEDGER_DATABASE_URL ('' reads as unset), so the
    // ledger is PGlite on disk (a worker thread's), drained by this process.
    name: 'embedded ledger (default, LEDGER_DATABASE_URL unset)',
    gatewayEnv: () => ({ LEDGER_DATABASE_URL: '' }),
    freshLedgerDataDir: true,
    reference: false,
  },
  { name: 'Idempotency-Key, new per request', idempotency: 'fresh', reference: false, monitor: true },
  { name: 'Idempotency-Key, replayed', idempotency: 'replay', reference: false, monitor: true },
  { name: '1 connection', connections: 1, reference: true },
  {
    name: `side by side, ${SIDE_BY_SIDE_RATE} req/s each`,
    reference: true,
    sideBySideRate: SIDE_BY_SIDE_RATE,
  },
  // At 50 % the breaker (opens above 50 % of >= 10 calls in 10 s) soon opens and refuses at once;
  // at 40 % it stays closed, and every failure goes through the breaker's bookkeeping.
  { name: 'half the upstream calls failing', failRatio: 0.5, reference: true },
  { name: '40 % of upstream calls failing (breaker closed)', failRatio: 0.4, reference: false },
  { name: 'logging off (LOG_LEVEL=silent)', gatewayEnv: () => ({ LOG_LEVEL: 'silent' }), reference: false },
  {
    // Standard OpenTelemetry SDK variables, exporting OTLP/HTTP to a sink in the bench.
    name: 'tracing on (OTEL_*, OTLP to a sink)',
    gatewayEnv: ({ sinkUrl }) => ({
      OTEL_SDK_DISABLED: 'false',
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl,
      OTEL_METRICS_EXPORTER: 'none',
      OTEL_LOGS_EXPORTER: 'none',
    }),
    reference: false,
  },
];

export interface ServerFigures extends LoadFigures {
  /** CPU time of the server process per request, µs (user + system). */
  cpuUsPerRequest: number;
  cpuUserUsPerRequest: number;
  cpuSystemUsPerRequest: number;
  simulatorCpuUsPerRequest: number;
  upstreamInquiryCalls: number;
  upstreamFailedInquiries: number;
  upstreamTokenCalls: number;
  redis: RedisDelta;
  /** Memory of the server process right after the measured run. */
  memory: { rssMiB: number; heapUsedMiB: number; heapTotalMiB: number; externalMiB: number };
  /** CPU per request of the process's threads other than the main one (µs); absent from older builds. */
  cpuOtherThreadsUsPerRequest?: number;
  /** Bytes promoted to the old generation per request, and full collections over the run; absent from older builds. */
  gc?: { promotedBytesPerRequest: number; fullCollections: number };
  /**
   * The gateway's event-loop delay over the measured run (prom-client's monitorEventLoopDelay,
   * 10 ms resolution included, read from /metrics just before and just after: each scrape resets it).
   */
  eventLoopDelayMs?: { p99: number; max: number };
}

export interface ScenarioResult {
  name: string;
  connections: number;
  gateway: ServerFigures;
  reference: ServerFigures;
  /** Whether `reference` was measured in this scenario or taken from the baseline. */
  ownReference: boolean;
  /**
   * Gateway CPU per request ÷ the reference's, round by round (each pair measured back to back):
   * their median resists the host's slow drifts better than the ratio of the two medians.
   */
  cpuRatioByRound?: number[];
  gatewayMonitor?: MonitorSample;
  referenceMonitor?: MonitorSample;
}

export interface LongRunResult {
  inquiries: number;
  /** The scenario whose gateway environment the long run used. */
  scenario: string;
  /** Every entry drained (the queue's depth back to 0) within the wait after the load. */
  drained?: { waitedMs: number; rssMiB: number };
  /** The embedded ledger's files after the run and the drain, MiB (a fresh LEDGER_DATA_DIR). */
  ledgerDiskMiB?: number;
  samples: { requests: number; rssMiB: number; heapUsedMiB: number; heapTotalMiB: number }[];
  afterGc: { rssMiB: number; heapUsedMiB: number; heapTotalMiB: number; externalMiB: number };
  figures: ServerFigures;
}

export interface HttpOverheadResult {
  settings: LoadSettings;
  rounds: number;
  scenarios: ScenarioResult[];
  longRun?: LongRunResult;
  profile?: { file: string; summary: ProfileSummary };
}

export interface HttpOverheadOptions {
  settings: LoadSettings;
  redisUrl: string;
  /** Interleaved gateway/reference measurements per scenario; medians are reported. */
  rounds: number;
  /** Scenario names (case-insensitive substrings) to run; default all. */
  only?: string[];
  /** Inquiries of the long run (0: none). */
  longRunInquiries: number;
  /** Profile the gateway (--cpu-prof) in the baseline scenario instead of measuring everything. */
  profile: boolean;
  log: (line: string) => void;
}

// ---------------------------------------------------------------------------------------------

export function gatewayTarget(
  url: string,
  idempotency: Scenario['idempotency'],
  replayKey?: string,
  operation: Operation = 'shahkar',
  cacheControl?: string,
): LoadTarget {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-api-key': API_KEY };
  if (cacheControl) headers['cache-control'] = cacheControl;
  const target: LoadTarget = { url: `${url}/v1/kyc/${operation}`, method: 'POST', headers, body: BODY[operation] };
  if (idempotency === 'replay' && replayKey) headers['idempotency-key'] = replayKey;
  if (idempotency === 'fresh') {
    const prefix = `bench-${randomUUID()}-`;
    let n = 0;
    target.headersPerRequest = () => ({ 'idempotency-key': `${prefix}${n++}` });
  }
  return target;
}

function referenceTarget(url: string, operation: Operation = 'shahkar'): LoadTarget {
  return {
    url: `${url}/v1/kyc/${operation}`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: BODY[operation],
  };
}

/** One request with the key, so that every measured request replays a settled answer. */
export async function primeIdempotencyKey(url: string, key: string): Promise<void> {
  const target = gatewayTarget(url, 'replay', key);
  for (const expectReplay of [false, true]) {
    const response = await fetch(target.url, { method: 'POST', headers: target.headers, body: target.body });
    await response.text();
    const replayed = response.headers.get('idempotent-replayed') === 'true';
    if (response.status !== 200 || replayed !== expectReplay) {
      throw new Error(`priming the Idempotency-Key: ${response.status}, Idempotent-Replayed: ${replayed}`);
    }
  }
}

/** `count` sequential requests (for the MONITOR sample). */
async function sequential(target: LoadTarget, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const headers = { ...target.headers, ...target.headersPerRequest?.() };
    const response = await fetch(target.url, { method: 'POST', headers, body: target.body });
    await response.arrayBuffer();
  }
}

const cpuUs = (s: ProcessStats) => s.cpuUserUs + s.cpuSystemUs;
/** A server's CPU time between two samples, per request (µs): total, user and system. */
const cpuPerRequest = (before: ProcessStats, after: ProcessStats, requests: number) => ({
  cpuUsPerRequest: (cpuUs(after) - cpuUs(before)) / requests,
  cpuUserUsPerRequest: (after.cpuUserUs - before.cpuUserUs) / requests,
  cpuSystemUsPerRequest: (after.cpuSystemUs - before.cpuSystemUs) / requests,
});
const otherThreadsPerRequest = (before: ProcessStats, after: ProcessStats, requests: number) =>
  before.cpuMainThreadUs === undefined || after.cpuMainThreadUs === undefined
    ? {}
    : {
        cpuOtherThreadsUsPerRequest:
          (cpuUs(after) - after.cpuMainThreadUs - (cpuUs(before) - before.cpuMainThreadUs)) / requests,
      };
const gcPerRequest = (before: ProcessStats, after: ProcessStats, requests: number) =>
  before.promotedBytes === undefined || after.promotedBytes === undefined
    ? {}
    : {
        gc: {
          promotedBytesPerRequest: (after.promotedBytes - before.promotedBytes) / requests,
          fullCollections: (after.fullCollections ?? 0) - (before.fullCollections ?? 0),
        },
      };
const tokenTotal = (s: SimulatorStats) => s.tokenCalls.credentials + s.tokenCalls.refresh;

/** One gauge's value in a Prometheus exposition (its first series), or undefined. */
function gauge(exposition: string, name: string): number | undefined {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(exposition);
  return match ? Number(match[1]) : undefined;
}

/** The gateway's /metrics text, or undefined if it does not answer it (the reference proxy). */
export async function scrapeMetrics(url: string): Promise<string | undefined> {
  const response = await fetch(`${url}/metrics`).catch(() => undefined);
  if (!response) return undefined;
  const text = await response.text();
  return response.status === 200 ? text : undefined;
}

/** The event-loop delay since the previous scrape (prom-client resets the histogram at each), ms. */
async function eventLoopDelaySinceLastScrape(url: string): Promise<{ p99: number; max: number } | undefined> {
  const text = await scrapeMetrics(url);
  if (text === undefined) return undefined;
  const p99 = gauge(text, 'nodejs_eventloop_lag_p99_seconds');
  const max = gauge(text, 'nodejs_eventloop_lag_max_seconds');
  return p99 === undefined || max === undefined ? undefined : { p99: p99 * 1000, max: max * 1000 };
}

/** The ledger queue's depth on a gateway's /metrics (undefined where it has no ledger gauge). */
export async function ledgerQueueDepth(url: string): Promise<number | undefined> {
  const text = await scrapeMetrics(url);
  return text === undefined ? undefined : gauge(text, 'vgw_ledger_queue_depth');
}
const memoryOf = (s: ProcessStats) => ({
  rssMiB: s.rssBytes / MiB,
  heapUsedMiB: s.heapUsedBytes / MiB,
  heapTotalMiB: s.heapTotalBytes / MiB,
  externalMiB: s.externalBytes / MiB,
});

/** Warm-up, then the measured run with the server's, the simulator's and Redis's counters around it. */
export async function measureServer(
  server: ServerProcess,
  sim: ServerProcess,
  redis: Redis,
  target: LoadTarget,
  settings: LoadSettings,
  /** A gateway: read its event-loop delay over the measured run from /metrics. */
  options: { eventLoop?: boolean } = {},
): Promise<ServerFigures & { window: { fromUs: number; toUs: number } }> {
  await warmUp(target, settings);
  // This scrape starts the event-loop window (the warm-up's delays are dropped with it).
  if (options.eventLoop) await eventLoopDelaySinceLastScrape(server.url);
  const [serverBefore, simBefore, redisBefore] = await Promise.all([
    server.stats(),
    sim.simulatorStats(),
    readCounters(redis),
  ]);
  const load = await measure(target, settings);
  const [serverAfter, simAfter, redisAfter, eventLoopDelayMs] = await Promise.all([
    server.stats(),
    sim.simulatorStats(),
    readCounters(redis),
    options.eventLoop ? eventLoopDelaySinceLastScrape(server.url) : undefined,
  ]);
  const n = Math.max(1, load.totalRequests);
  return {
    ...load,
    ...cpuPerRequest(serverBefore, serverAfter, n),
    ...otherThreadsPerRequest(serverBefore, serverAfter, n),
    ...gcPerRequest(serverBefore, serverAfter, n),
    ...(eventLoopDelayMs ? { eventLoopDelayMs } : {}),
    simulatorCpuUsPerRequest: (cpuUs(simAfter) - cpuUs(simBefore)) / n,
    upstreamInquiryCalls: simAfter.inquiryCalls - simBefore.inquiryCalls,
    upstreamFailedInquiries: simAfter.failedInquiries - simBefore.failedInquiries,
    upstreamTokenCalls: tokenTotal(simAfter) - tokenTotal(simBefore),
    redis: perInquiry(redisBefore, redisAfter, n),
    memory: memoryOf(serverAfter),
    window: { fromUs: serverBefore.monotonicUs, toUs: serverAfter.monotonicUs },
  };
}

/**
 * Gateway and reference under the same fixed-rate load at the same time (warm-ups too): CPU
 * per request of each over one window. Redis and simulator counters are shared by both, so
 * they are left empty here.
 */
export async function measurePair(
  servers: [ServerProcess, ServerProcess],
  targets: [LoadTarget, LoadTarget],
  settings: LoadSettings,
  /** Which of the two are gateways (their event-loop delay read from /metrics). */
  eventLoop: [boolean, boolean] = [false, false],
): Promise<[ServerFigures, ServerFigures]> {
  await Promise.all(targets.map((target) => warmUp(target, settings)));
  const delays = () =>
    Promise.all(
      servers.map((server, i) =>
        eventLoop[i] ? eventLoopDelaySinceLastScrape(server.url) : Promise.resolve(undefined),
      ),
    );
  await delays();
  const before = await Promise.all(servers.map((server) => server.stats()));
  const loads = await Promise.all(targets.map((target) => measure(target, settings)));
  const [after, delay] = await Promise.all([Promise.all(servers.map((server) => server.stats())), delays()]);
  const figuresOf = (i: number): ServerFigures => {
    const n = Math.max(1, loads[i].totalRequests);
    return {
      ...loads[i],
      ...cpuPerRequest(before[i], after[i], n),
      ...otherThreadsPerRequest(before[i], after[i], n),
      ...gcPerRequest(before[i], after[i], n),
      ...(delay[i] ? { eventLoopDelayMs: delay[i] } : {}),
      simulatorCpuUsPerRequest: NaN,
      upstreamInquiryCalls: NaN,
      upstreamFailedInquiries: 0,
      upstreamTokenCalls: NaN,
      redis: { commandsPerInquiry: {}, totalCommandsPerInquiry: NaN, readEventsPerInquiry: NaN },
      memory: memoryOf(after[i]),
    };
  };
  return [figuresOf(0), figuresOf(1)];
}

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** Medians of the headline figures over rounds; the rest from the median-CPU round. */
function medianFigures(rounds: ServerFigures[]): ServerFigures {
  if (rounds.length === 1) return rounds[0];
  const byCpu = [...rounds].sort((a, b) => a.cpuUsPerRequest - b.cpuUsPerRequest);
  const base = byCpu[Math.floor(byCpu.length / 2)];
  const others = rounds.map((r) => r.cpuOtherThreadsUsPerRequest);
  const gcs = rounds.map((r) => r.gc);
  const delays = rounds.map((r) => r.eventLoopDelayMs);
  return {
    ...base,
    cpuUsPerRequest: median(rounds.map((r) => r.cpuUsPerRequest)),
    ...(others.every((x) => x !== undefined) ? { cpuOtherThreadsUsPerRequest: median(others) } : {}),
    ...(gcs.every((g) => g !== undefined)
      ? {
          gc: {
            promotedBytesPerRequest: median(gcs.map((g) => g.promotedBytesPerRequest)),
            fullCollections: median(gcs.map((g) => g.fullCollections)),
          },
        }
      : {}),
    // The p99 a median of the rounds', the worst delay the worst of any round.
    ...(delays.every((d) => d !== undefined)
      ? { eventLoopDelayMs: { p99: median(delays.map((d) => d.p99)), max: Math.max(...delays.map((d) => d.max)) } }
      : {}),
    requestsPerSecond: median(rounds.map((r) => r.requestsPerSecond)),
    latencyMs: {
      average: median(rounds.map((r) => r.latencyMs.average)),
      p50: median(rounds.map((r) => r.latencyMs.p50)),
      p97_5: median(rounds.map((r) => r.latencyMs.p97_5)),
      p99: median(rounds.map((r) => r.latencyMs.p99)),
      max: Math.max(...rounds.map((r) => r.latencyMs.max)),
    },
  };
}

export const stripWindow = ({ window: _window, ...figures }: ServerFigures & { window?: unknown }): ServerFigures =>
  figures;

// ---------------------------------------------------------------------------------------------

export async function benchHttpOverhead(options: HttpOverheadOptions): Promise<HttpOverheadResult> {
  const { settings, redisUrl, rounds, log } = options;
  const redis = new Redis(redisUrl);
  const started: ServerProcess[] = [];
  const start = async (name: string, spec: Parameters<typeof ServerProcess.start>[1], opts?: StartOptions) => {
    const server = await ServerProcess.start(name, spec, opts);
    started.push(server);
    return server;
  };

  const result: HttpOverheadResult = { settings, rounds, scenarios: [] };
  try {
    const sim = await start('simulator', { role: 'simulator', latencyMs: 0 });
    const sink = await start('sink', { role: 'sink' });
    const reference = await start(
      'reference proxy',
      { role: 'reference', upstreamUrl: sim.url, redisUrl, probeBody: INQUIRY_BODY },
      { execArgv: REFERENCE_NODE_FLAGS },
    );
    const context: ScenarioContext = { sinkUrl: sink.url };
    const baseEnv: Record<string, string> = {
      UPSTREAM_BASE_URL: sim.url,
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: 'bench',
      LOG_LEVEL: 'info',
      OTEL_SDK_DISABLED: 'true',
    };

    let scenarios = SCENARIOS.filter(
      (s) => !options.only || options.only.some((o) => s.name.toLowerCase().includes(o.toLowerCase())),
    );
    if (options.profile) scenarios = [SCENARIOS[0]];

    // One gateway process per distinct environment, stopped after its last scenario.
    const gateways = new Map<string, ServerProcess>();
    const envOf = (s: Scenario) => ({ ...baseEnv, ...s.gatewayEnv?.(context) });
    const keyOf = (s: Scenario) => JSON.stringify(envOf(s));
    const lastUse = new Map(scenarios.map((s, i) => [keyOf(s), i]));
    const profileDir = join(PROJECT_ROOT, '.build', 'bench-profiles');
    if (options.profile) {
      await rm(profileDir, { recursive: true, force: true });
      await mkdir(profileDir, { recursive: true });
    }
    const gatewayFor = async (s: Scenario): Promise<ServerProcess> => {
      const key = keyOf(s);
      let gateway = gateways.get(key);
      if (!gateway) {
        gateway = await start(
          `gateway (${s.name})`,
          { role: 'gateway', env: await gatewayStartEnv(s, envOf(s)), probeBody: INQUIRY_BODY, probeApiKey: API_KEY },
          {
            script: GATEWAY_SCRIPT,
            execArgv: [
              ...GATEWAY_NODE_FLAGS,
              ...(options.profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
            ],
          },
        );
        gateways.set(key, gateway);
      }
      return gateway;
    };

    let baselineReference: ServerFigures | undefined;
    let profileWindow: { fromUs: number; toUs: number } | undefined;
    for (const [index, s] of scenarios.entries()) {
      // The first scenario run is the later ones' baseline: it measures the reference itself.
      const withReference = s.reference || index === 0;
      const connections = s.connections ?? settings.connections;
      const load = { ...settings, connections };
      const gateway = await gatewayFor(s);
      let replayKey: string | undefined;
      if (s.idempotency === 'replay') {
        replayKey = `bench-replay-${randomUUID()}`;
        await primeIdempotencyKey(gateway.url, replayKey);
      }
      const gatewayLoad = gatewayTarget(gateway.url, s.idempotency, replayKey, s.operation, s.cacheControl);
      const referenceLoad = referenceTarget(reference.url, s.operation);
      if (s.failRatio) await sim.setFailRatio(s.failRatio);
      const gatewayRounds: ServerFigures[] = [];
      const referenceRounds: ServerFigures[] = [];
      try {
        for (let round = 0; round < rounds; round++) {
          const suffix = rounds > 1 ? ` (round ${round + 1}/${rounds})` : '';
          log(
            `  ${s.name}: ${s.sideBySideRate ? 'reference and gateway at once' : withReference ? 'reference, then gateway' : 'gateway'}, ${settings.warmupSeconds} s warm-up + ` +
              `${settings.durationSeconds} s measured each, ${connections} connection(s)` +
              `${settings.rate && !s.sideBySideRate ? ` at ${settings.rate} req/s` : ''}${suffix}`,
          );
          if (s.sideBySideRate) {
            const [g, r] = await measurePair(
              [gateway, reference],
              [gatewayLoad, referenceLoad],
              { ...load, rate: s.sideBySideRate },
              [true, false],
            );
            gatewayRounds.push(g);
            referenceRounds.push(r);
            continue;
          }
          if (withReference)
            referenceRounds.push(stripWindow(await measureServer(reference, sim, redis, referenceLoad, load)));
          const measured = await measureServer(gateway, sim, redis, gatewayLoad, load, { eventLoop: true });
          profileWindow ??= measured.window;
          gatewayRounds.push(stripWindow(measured));
        }
      } finally {
        if (s.failRatio) await sim.setFailRatio(0);
      }
      const scenarioResult: ScenarioResult = {
        name: s.name,
        connections,
        gateway: medianFigures(gatewayRounds),
        reference: withReference ? medianFigures(referenceRounds) : baselineReference!,
        ownReference: withReference,
        ...(withReference && rounds > 1
          ? { cpuRatioByRound: gatewayRounds.map((g, i) => g.cpuUsPerRequest / referenceRounds[i].cpuUsPerRequest) }
          : {}),
      };
      if (!scenarioResult.reference) throw new Error(`scenario ${s.name}: no reference measured before it`);
      if (index === 0) baselineReference = scenarioResult.reference;
      if (s.monitor && !options.profile) {
        scenarioResult.gatewayMonitor = await monitorSample(redisUrl, MONITOR_SAMPLE_INQUIRIES, () =>
          sequential(
            gatewayTarget(gateway.url, s.idempotency, replayKey, s.operation, s.cacheControl),
            MONITOR_SAMPLE_INQUIRIES,
          ),
        );
        if (withReference) {
          scenarioResult.referenceMonitor = await monitorSample(redisUrl, MONITOR_SAMPLE_INQUIRIES, () =>
            sequential(referenceLoad, MONITOR_SAMPLE_INQUIRIES),
          );
        }
      }
      result.scenarios.push(scenarioResult);
      if (lastUse.get(keyOf(s)) === index) {
        await gateway.stop();
        gateways.delete(keyOf(s));
      }
    }

    if (options.profile) {
      const files = (await readdir(profileDir)).filter((f) => f.endsWith('.cpuprofile'));
      if (files.length !== 1) throw new Error(`expected one .cpuprofile in ${profileDir}, found ${files.length}`);
      const file = join(profileDir, files[0]);
      result.profile = { file, summary: await summariseProfile(file, profileWindow) };
    }

    if (options.longRunInquiries > 0 && !options.profile) {
      // In the first selected scenario's environment (BENCH_SCENARIOS="embedded": the default
      // install's ledger on disk; unselected: the baseline's).
      const scenario = scenarios[0] ?? SCENARIOS[0];
      const env = await gatewayStartEnv(scenario, envOf(scenario));
      result.longRun = await longRun(
        await start(
          'gateway (long run)',
          { role: 'gateway', env, probeBody: INQUIRY_BODY, probeApiKey: API_KEY },
          // The production flags too: the long run is the memory figure of the image as shipped.
          { script: GATEWAY_SCRIPT, execArgv: [...GATEWAY_NODE_FLAGS, '--expose-gc'] },
        ),
        sim,
        redis,
        { ...settings, amount: options.longRunInquiries },
        log,
        { scenario: scenario.name, ledgerDataDir: scenario.freshLedgerDataDir ? env.LEDGER_DATA_DIR : undefined },
      );
    }
  } finally {
    await Promise.allSettled(started.map((s) => s.stop()));
    redis.disconnect();
    await removeLedgerDataDirs();
  }
  return result;
}

/** A fixed number of fresh inquiries at full load, RSS sampled every few seconds. */
async function longRun(
  gateway: ServerProcess,
  sim: ServerProcess,
  redis: Redis,
  settings: LoadSettings,
  log: (line: string) => void,
  about: { scenario: string; ledgerDataDir?: string },
): Promise<LongRunResult> {
  const inquiries = settings.amount!;
  log(
    `  long run (${about.scenario}): ${num(inquiries)} inquiries, ${settings.connections} connections, RSS sampled every 5 s`,
  );
  const samples: LongRunResult['samples'] = [];
  const simStart = (await sim.simulatorStats()).inquiryCalls;
  const sampler = setInterval(() => {
    void Promise.all([gateway.stats(), sim.simulatorStats()]).then(
      ([g, s]) => samples.push({ requests: s.inquiryCalls - simStart, ...memoryOf(g) }),
      () => undefined,
    );
  }, 5_000);
  let figures: ServerFigures;
  try {
    figures = stripWindow(
      await measureServer(
        gateway,
        sim,
        redis,
        gatewayTarget(gateway.url, 'none'),
        { ...settings, warmupSeconds: 0 },
        { eventLoop: true },
      ),
    );
  } finally {
    clearInterval(sampler);
  }
  const drained = await untilDrained(gateway);
  const afterGc = memoryOf(await gateway.statsAfterGc());
  await gateway.stop();
  const ledgerDiskMiB = about.ledgerDataDir ? (await directoryBytes(about.ledgerDataDir)) / MiB : undefined;
  return { inquiries, scenario: about.scenario, samples, afterGc, figures, drained, ledgerDiskMiB };
}

const DRAIN_WAIT_MS = 120_000;

/**
 * Polls the gateway's ledger queue depth (once a second: the drainer's own pace) until it reads 0
 * twice in a row (the gauge is set after each batch, so one 0 may predate the load's last
 * entries), so that the ledger's size on disk counts every entry; undefined if it never does.
 */
async function untilDrained(gateway: ServerProcess): Promise<LongRunResult['drained']> {
  const started = Date.now();
  let zeros = 0;
  while (Date.now() - started < DRAIN_WAIT_MS) {
    const depth = await ledgerQueueDepth(gateway.url);
    if (depth === undefined) return undefined;
    zeros = depth === 0 ? zeros + 1 : 0;
    if (zeros === 2) return { waitedMs: Date.now() - started, rssMiB: memoryOf(await gateway.stats()).rssMiB };
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------

const ms = (value: number) => num(value, value < 10 ? 2 : 1);
const mib = (value: number) => num(value, 0);

function statusNote(label: string, f: ServerFigures): string | undefined {
  if (f.non2xx === 0 && f.errors === 0) return undefined;
  return `  ${label}: status codes ${JSON.stringify(f.statusCodes)}, ${f.errors} errors (${f.timeouts} timeouts)`;
}

export function formatHttpOverhead(result: HttpOverheadResult): string {
  const { settings } = result;
  const lines: string[] = [
    heading('1. Gateway vs bare reference proxy (same simulator, same redis-server, loopback)'),
    `${settings.warmupSeconds} s warm-up + ${settings.durationSeconds} s measured per row` +
      (settings.rate ? ` at a fixed ${settings.rate} req/s (side by side: its own rate)` : '') +
      (result.rounds > 1 ? `, ${result.rounds} interleaved rounds (medians)` : '') +
      '; CPU = user + system time of that server process over the measured run / its requests;',
    'latencies in ms over every answer (autocannon response times); RSS and heap right after the run;',
    "other threads = the CPU above spent outside the main thread (the embedded ledger's worker, GC helpers);",
    'promoted B/req / full GCs = bytes young collections moved to the old generation per request (not what V8',
    "allocates there directly), and full collections over the run (what the GC helpers' share follows);",
    "loop p99/max = the gateway's event-loop delay over the measured run (/metrics, 10 ms resolution included;",
    'max over the rounds).',
    `Gateway launched as ${GATEWAY_LAUNCH}: Node flags ${GATEWAY_NODE_FLAGS.join(' ') || '(none)'}; reference ${REFERENCE_NODE_FLAGS.join(' ') || '(none)'}.`,
  ];
  if (result.scenarios.length > 0) {
    const rows: (string | number)[][] = [];
    for (const s of result.scenarios) {
      for (const [who, f] of [
        ['gateway', s.gateway],
        ...(s.ownReference ? [['reference', s.reference] as const] : []),
      ] as const) {
        rows.push([
          who === 'gateway' ? s.name : '',
          who,
          num(s.connections),
          num(f.requestsPerSecond),
          num(f.cpuUsPerRequest),
          `${num(f.cpuUserUsPerRequest)}+${num(f.cpuSystemUsPerRequest)}`,
          num(f.simulatorCpuUsPerRequest),
          ms(f.latencyMs.p50),
          ms(f.latencyMs.p99),
          f.cpuOtherThreadsUsPerRequest === undefined ? '' : num(f.cpuOtherThreadsUsPerRequest),
          f.gc ? `${num(f.gc.promotedBytesPerRequest)}/${num(f.gc.fullCollections)}` : '',
          f.eventLoopDelayMs ? `${ms(f.eventLoopDelayMs.p99)}/${ms(f.eventLoopDelayMs.max)}` : '',
          mib(f.memory.rssMiB),
          `${mib(f.memory.heapUsedMiB)}/${mib(f.memory.heapTotalMiB)}`,
          num(f.totalRequests),
          f.upstreamFailedInquiries ? `${num(f.non2xx)} (${num(f.upstreamFailedInquiries)} upstream)` : num(f.non2xx),
        ]);
      }
    }
    lines.push(
      '',
      table(
        [
          'scenario',
          'server',
          'conns',
          'req/s',
          'CPU us/req',
          'user+sys',
          'sim CPU us/req',
          'p50',
          'p99',
          'other threads us/req',
          'promoted B/req / full GCs',
          'loop p99/max ms',
          'RSS MiB',
          'heap used/total MiB',
          'requests',
          'non-2xx',
        ],
        rows,
        [0, 1],
      ),
    );
    const notes = result.scenarios.flatMap((s) =>
      [
        statusNote(`${s.name} (gateway)`, s.gateway),
        s.ownReference ? statusNote(`${s.name} (reference)`, s.reference) : undefined,
      ].filter((n): n is string => n !== undefined),
    );
    if (notes.length > 0) lines.push('', 'Non-2xx answers and errors:', ...notes);

    lines.push(
      '',
      table(
        [
          'gateway / reference',
          'CPU per request',
          'reference/gateway CPU',
          'CPU ratio by round: median (each)',
          'throughput',
          'p50 added ms',
          'p99 added ms',
          'reference from',
        ],
        result.scenarios.map((s) => [
          s.name,
          ratio(s.gateway.cpuUsPerRequest / s.reference.cpuUsPerRequest),
          num(s.reference.cpuUsPerRequest / s.gateway.cpuUsPerRequest, 2),
          s.cpuRatioByRound
            ? `${ratio(median(s.cpuRatioByRound))} (${s.cpuRatioByRound.map((r) => num(r, 2)).join(' ')})`
            : '',
          ratio(s.gateway.requestsPerSecond / s.reference.requestsPerSecond),
          signed(s.gateway.latencyMs.p50 - s.reference.latencyMs.p50, 2),
          signed(s.gateway.latencyMs.p99 - s.reference.latencyMs.p99, 2),
          s.ownReference ? 'this scenario' : result.scenarios[0].name,
        ]),
      ),
      '(goal of docs: CPU per request at most 2x the reference, i.e. reference/gateway >= 0.5)',
    );

    lines.push(
      '',
      'Redis per inquiry (INFO commandstats over the measured run, commands inside Lua scripts included;',
      'read events = INFO total_reads_processed, one per batch read from a client socket: ~ round trips):',
      '',
      table(
        ['scenario', 'server', 'commands', 'read events', 'by command'],
        result.scenarios
          .filter((s) => !Number.isNaN(s.gateway.redis.totalCommandsPerInquiry))
          .flatMap((s) =>
            [['gateway', s.gateway] as const, ...(s.ownReference ? [['reference', s.reference] as const] : [])].map(
              ([who, f]) => [
                who === 'gateway' ? s.name : '',
                who,
                num(f.redis.totalCommandsPerInquiry, 2),
                num(f.redis.readEventsPerInquiry, 2),
                Object.entries(f.redis.commandsPerInquiry)
                  .sort((a, b) => b[1] - a[1])
                  .map(([name, n]) => `${name} ${num(n, 2)}`)
                  .join(', '),
              ],
            ),
          ),
        [0, 1, 4],
      ),
    );
    const monitored = result.scenarios.filter((s) => s.gatewayMonitor);
    if (monitored.length > 0) {
      const fmt = (counts: Record<string, number>) => {
        const total = Object.values(counts).reduce((a, b) => a + b, 0);
        const parts = Object.entries(counts)
          .sort((a, b) => b[1] - a[1])
          .map(([name, n]) => `${name} ${num(n, 2)}`);
        return `${num(total, 2)}${parts.length ? ` (${parts.join(', ')})` : ''}`;
      };
      lines.push(
        '',
        `MONITOR, ${MONITOR_SAMPLE_INQUIRIES} sequential inquiries: commands sent per inquiry / run inside scripts per inquiry:`,
        '',
        table(
          ['scenario', 'server', 'sent by the client', 'inside scripts'],
          monitored.flatMap((s) => [
            [
              s.name,
              'gateway',
              fmt(s.gatewayMonitor!.clientCommandsPerInquiry),
              fmt(s.gatewayMonitor!.scriptCommandsPerInquiry),
            ],
            ...(s.referenceMonitor
              ? [
                  [
                    '',
                    'reference',
                    fmt(s.referenceMonitor.clientCommandsPerInquiry),
                    fmt(s.referenceMonitor.scriptCommandsPerInquiry),
                  ],
                ]
              : []),
          ]),
          [0, 1, 2, 3],
        ),
      );
    }
  }

  if (result.longRun) {
    const run = result.longRun;
    const first = run.samples[Math.min(1, run.samples.length - 1)];
    const last = run.samples[run.samples.length - 1];
    lines.push(
      '',
      `Long run (${run.scenario}): ${num(run.inquiries)} fresh inquiries, ${num(run.figures.requestsPerSecond)} req/s, ` +
        `CPU ${num(run.figures.cpuUsPerRequest)} us/req, p50 ${ms(run.figures.latencyMs.p50)} ms, p99 ${ms(run.figures.latencyMs.p99)} ms` +
        (run.figures.eventLoopDelayMs
          ? `, event loop p99 ${ms(run.figures.eventLoopDelayMs.p99)} ms, max ${ms(run.figures.eventLoopDelayMs.max)} ms`
          : ''),
      '',
      table(
        ['inquiries', 'RSS MiB', 'heap used MiB', 'heap total MiB'],
        run.samples.map((x) => [num(x.requests), mib(x.rssMiB), mib(x.heapUsedMiB), mib(x.heapTotalMiB)]),
      ),
      `after a full GC at the end: RSS ${mib(run.afterGc.rssMiB)} MiB, heap used ${mib(run.afterGc.heapUsedMiB)} MiB ` +
        `of ${mib(run.afterGc.heapTotalMiB)}, external ${mib(run.afterGc.externalMiB)} MiB`,
      first && last
        ? `RSS from the second sample (${num(first.requests)} inquiries) to the last (${num(last.requests)}): ` +
            `${signed(last.rssMiB - first.rssMiB, 0)} MiB; heap used ${signed(last.heapUsedMiB - first.heapUsedMiB, 0)} MiB`
        : 'too short for RSS samples',
      run.drained
        ? `ledger queue drained ${num(run.drained.waitedMs / 1000, 1)} s after the load (RSS then ${mib(run.drained.rssMiB)} MiB)`
        : 'ledger queue: no depth gauge, or not drained within the wait',
      ...(run.ledgerDiskMiB === undefined
        ? []
        : [`embedded ledger on disk after the run: ${num(run.ledgerDiskMiB, 1)} MiB`]),
    );
  }

  if (result.profile) {
    const { summary, file } = result.profile;
    lines.push(
      '',
      `CPU profile of the gateway (--cpu-prof) over the measured run of "${result.scenarios[0]?.name}" ` +
        `(${num(summary.sampledMs)} ms sampled; ${file}). Self time by package:`,
      '',
      table(
        ['package', 'self ms', 'share'],
        summary.byPackage.slice(0, 20).map((p) => [p.name, num(p.selfMs), pct(p.share)]),
      ),
      '',
      'Charged to the nearest package or gateway folder on the stack (Node internals and native code to their caller):',
      '',
      table(
        ['package', 'ms', 'share'],
        summary.byResponsiblePackage.slice(0, 20).map((p) => [p.name, num(p.selfMs), pct(p.share)]),
      ),
      '',
      'Top functions by self time:',
      '',
      table(
        ['function', 'where', 'self ms', 'share'],
        summary.byFunction.map((f) => [f.name, f.where, num(f.selfMs), pct(f.share)]),
        [0, 1],
      ),
    );
  }
  return lines.join('\n');
}
