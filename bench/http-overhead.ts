/**
 * Section 1: HTTP overhead of the gateway. autocannon (in the bench process) loads, in turn:
 *   (a) reference: the upstream simulator called directly (CheckShahkar with a Bearer token),
 *   (b) the gateway with the in-process store, then the idempotent replay path on it,
 *   (c) the gateway with a real Redis, then the replay path on it.
 * Each server runs in its own child process; each gateway gets a fresh simulator of its own,
 * so that every simulator starts as empty as the reference one.
 */
import { randomUUID } from 'node:crypto';
import { TEST_CLIENTS } from '../test/support/gateway.js';
import { CHECK_SHAHKAR_PATH, GET_TOKEN_PATH } from '../test/upstream-simulator/upstream-simulator.js';
import { heading, num, ratio, signed, table } from './lib/format.js';
import type { SimulatorStats } from './lib/ipc.js';
import { measure, warmUp, type LoadFigures, type LoadSettings, type LoadTarget } from './lib/load.js';
import { ServerProcess } from './lib/servers.js';

const NATIONAL_CODE = '0499370899';
const MOBILE = '09121234567';
const GATEWAY_BODY = JSON.stringify({ nationalCode: NATIONAL_CODE, mobileNumber: MOBILE });
const API_KEY = TEST_CLIENTS.basic.key;

export interface ScenarioResult extends LoadFigures {
  name: string;
  /** CheckShahkar calls the simulator received during the measured run (warm-up excluded). */
  upstreamInquiryCalls: number;
  /** GetToken calls during the measured run. */
  upstreamTokenCalls: number;
}

export interface HttpOverheadResult {
  settings: LoadSettings;
  scenarios: ScenarioResult[];
  ratios: {
    memory: GatewayRatios;
    redis: GatewayRatios;
  };
}

export interface GatewayRatios {
  throughputVsReference: number;
  addedAverageMs: number;
  addedP50Ms: number;
  addedP97_5Ms: number;
  addedP99Ms: number;
  replayVsFreshThroughput: number;
  replayP50Ms: number;
  replayAverageMs: number;
}

const tokenTotal = (s: SimulatorStats) => s.tokenCalls.credentials + s.tokenCalls.refresh;

async function obtainUpstreamToken(simUrl: string): Promise<string> {
  const response = await fetch(`${simUrl}${GET_TOKEN_PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'sandbox-user', password: 'sandbox-password' }),
  });
  const envelope = (await response.json()) as { data?: { accessToken?: string } };
  const token = envelope.data?.accessToken;
  if (response.status !== 200 || !token) throw new Error(`GetToken answered ${response.status}`);
  return token;
}

/** Warms up, then measures one target and counts what the simulator received meanwhile. */
async function scenario(
  name: string,
  sim: ServerProcess,
  target: LoadTarget,
  settings: LoadSettings,
  log: (line: string) => void,
): Promise<ScenarioResult> {
  log(
    `  ${name}: ${settings.warmupSeconds} s warm-up + ${settings.durationSeconds} s measured, ${settings.connections} connections`,
  );
  await warmUp(target, settings);
  const before = await sim.simulatorStats();
  const figures = await measure(target, settings);
  const after = await sim.simulatorStats();
  return {
    name,
    ...figures,
    upstreamInquiryCalls: after.inquiryCalls - before.inquiryCalls,
    upstreamTokenCalls: tokenTotal(after) - tokenTotal(before),
  };
}

function gatewayTarget(url: string, idempotencyKey?: string): LoadTarget {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-api-key': API_KEY };
  if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
  return { url: `${url}/v1/kyc/shahkar`, method: 'POST', headers, body: GATEWAY_BODY };
}

/** One request with the key, so that every measured request replays a settled answer. */
async function primeIdempotencyKey(url: string, key: string): Promise<void> {
  const target = gatewayTarget(url, key);
  const response = await fetch(target.url, { method: 'POST', headers: target.headers, body: target.body });
  await response.text();
  if (response.status !== 200) throw new Error(`priming the Idempotency-Key answered ${response.status}`);
  const again = await fetch(target.url, { method: 'POST', headers: target.headers, body: target.body });
  await again.text();
  if (again.status !== 200 || again.headers.get('idempotent-replayed') !== 'true') {
    throw new Error(
      `a repeat with the Idempotency-Key was not replayed (${again.status}, Idempotent-Replayed: ${again.headers.get('idempotent-replayed')})`,
    );
  }
}

/** A gateway (fresh inquiries, then replays) in front of its own fresh simulator. */
async function gatewayScenarios(
  label: string,
  env: Record<string, string>,
  settings: LoadSettings,
  log: (line: string) => void,
): Promise<[ScenarioResult, ScenarioResult]> {
  const sim = await ServerProcess.start(`simulator for gateway (${label})`, { role: 'simulator', latencyMs: 0 });
  try {
    const gateway = await ServerProcess.start(`gateway (${label})`, {
      role: 'gateway',
      env: { ...env, UPSTREAM_BASE_URL: sim.url },
      probeBody: GATEWAY_BODY,
      probeApiKey: API_KEY,
    });
    try {
      const fresh = await scenario(
        `gateway, ${label}: fresh inquiries`,
        sim,
        gatewayTarget(gateway.url),
        settings,
        log,
      );
      const key = `bench-replay-${label}-${randomUUID()}`;
      await primeIdempotencyKey(gateway.url, key);
      const replay = await scenario(
        `gateway, ${label}: idempotent replay`,
        sim,
        gatewayTarget(gateway.url, key),
        settings,
        log,
      );
      return [fresh, replay];
    } finally {
      await gateway.stop();
    }
  } finally {
    await sim.stop();
  }
}

function ratios(reference: ScenarioResult, fresh: ScenarioResult, replay: ScenarioResult): GatewayRatios {
  return {
    throughputVsReference: fresh.requestsPerSecond / reference.requestsPerSecond,
    addedAverageMs: fresh.latencyMs.average - reference.latencyMs.average,
    addedP50Ms: fresh.latencyMs.p50 - reference.latencyMs.p50,
    addedP97_5Ms: fresh.latencyMs.p97_5 - reference.latencyMs.p97_5,
    addedP99Ms: fresh.latencyMs.p99 - reference.latencyMs.p99,
    replayVsFreshThroughput: replay.requestsPerSecond / fresh.requestsPerSecond,
    replayP50Ms: replay.latencyMs.p50,
    replayAverageMs: replay.latencyMs.average,
  };
}

export async function benchHttpOverhead(
  settings: LoadSettings,
  redisUrl: string,
  log: (line: string) => void,
): Promise<HttpOverheadResult> {
  // (a) Reference: the simulator alone, with the body the gateway would send it.
  const sim = await ServerProcess.start('simulator (reference)', { role: 'simulator', latencyMs: 0 });
  let reference: ScenarioResult;
  try {
    const token = await obtainUpstreamToken(sim.url);
    const body = () =>
      JSON.stringify({
        nationalCode: NATIONAL_CODE,
        mobileNumber: MOBILE,
        requestHandlingType: 'standard',
        trackId: randomUUID(),
      });
    reference = await scenario(
      'reference: simulator direct',
      sim,
      {
        url: `${sim.url}${CHECK_SHAHKAR_PATH}`,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: body(),
        bodyPerRequest: body,
      },
      settings,
      log,
    );
  } finally {
    await sim.stop();
  }

  // (b) In-process store, (c) real Redis.
  const [memoryFresh, memoryReplay] = await gatewayScenarios('memory', {}, settings, log);
  const [redisFresh, redisReplay] = await gatewayScenarios(
    'redis',
    { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: 'bench-http' },
    settings,
    log,
  );

  return {
    settings,
    scenarios: [reference, memoryFresh, memoryReplay, redisFresh, redisReplay],
    ratios: { memory: ratios(reference, memoryFresh, memoryReplay), redis: ratios(reference, redisFresh, redisReplay) },
  };
}

export function formatHttpOverhead(result: HttpOverheadResult): string {
  const [reference] = result.scenarios;
  const { settings } = result;
  const rows = result.scenarios.map((s) => [
    s.name,
    num(s.requestsPerSecond),
    num(s.latencyMs.average, 2),
    num(s.latencyMs.p50),
    num(s.latencyMs.p97_5),
    num(s.latencyMs.p99),
    num(s.totalRequests),
    num(s.non2xx),
    num(s.errors),
    num(s.upstreamInquiryCalls),
    ratio(s.requestsPerSecond / reference.requestsPerSecond),
  ]);
  const ratioRows = (['memory', 'redis'] as const).map((label) => {
    const r = result.ratios[label];
    return [
      `gateway (${label})`,
      ratio(r.throughputVsReference),
      signed(r.addedAverageMs, 2),
      signed(r.addedP50Ms, 0),
      signed(r.addedP97_5Ms, 0),
      signed(r.addedP99Ms, 0),
      ratio(r.replayVsFreshThroughput),
    ];
  });
  const statusNotes = result.scenarios
    .filter((s) => s.non2xx > 0 || s.errors > 0)
    .map(
      (s) =>
        `  ! ${s.name}: status codes ${JSON.stringify(s.statusCodes)}, ${s.errors} errors (${s.timeouts} timeouts)`,
    );
  return [
    heading('1. HTTP overhead (POST, autocannon, loopback)'),
    `${settings.connections} connections, ${settings.warmupSeconds} s warm-up + ${settings.durationSeconds} s measured per row; latencies in ms`,
    '(autocannon records percentiles at 1 ms resolution; the average is exact).',
    'Servers in child processes; the gateway rows include the gateway -> simulator hop.',
    '',
    table(
      [
        'scenario',
        'req/s',
        'avg',
        'p50',
        'p97.5',
        'p99',
        'requests',
        'non-2xx',
        'errors',
        'upstream calls',
        'vs reference',
      ],
      rows,
    ),
    ...(statusNotes.length > 0 ? ['', ...statusNotes] : []),
    '',
    table(
      [
        'ratios',
        'throughput gateway/reference',
        'added avg ms',
        'added p50 ms',
        'added p97.5 ms',
        'added p99 ms',
        'replay/fresh throughput',
      ],
      ratioRows,
    ),
    '',
    'Replay rows: one Idempotency-Key repeated; "upstream calls" 0 means no request reached the simulator.',
  ].join('\n');
}
