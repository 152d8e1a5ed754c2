/**
 * Faults under load, with invariants: two gateway replicas share one Redis (AOF, fsync always,
 * so a killed Redis restarts with its data) and one upstream simulator, while workers send
 * inquiries, each with its own Idempotency-Key, retried once with the same key when the answer
 * invites it. Faults, one phase each: upstream 5xx / hung / dropped calls, every token revoked,
 * Redis killed and restarted, app.close() of one replica. After each phase:
 *  - no 500, ever;
 *  - no Idempotency-Key charged under two trackIds, no trackId charged twice;
 *  - every charge's trackId was handed to a caller;
 *  - every trackId the gateway handed out has a record, unless its answer was a refusal
 *    (503 store_unavailable: nothing recorded, nothing sent).
 * The figures are printed at the end (requests, answers by code, charges).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import {
  callGateway,
  startGateway,
  TEST_CLIENTS,
  untilStoreReady,
  type Exchange,
  type RunningGateway,
} from './support/gateway.js';
import { expectEveryChargeTraceable } from './support/invariants.js';
import { RedisServer } from './support/redis-server.js';
import { SHAHKAR } from './support/fixtures.js';
import { CHECK_SHAHKAR_PATH, UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const WORKERS = 6;
const PHASE_MS = 2500;

let redis: RedisServer;
let sim: UpstreamSimulator;
let replicas: RunningGateway[];
let alive: RunningGateway[];
let dataDir: string;

interface Sent {
  key: string;
  exchange: Exchange | null;
  phase: string;
}
const sent: Sent[] = [];
const byCode = new Map<string, number>();

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'vgw-faults-'));
  redis = await RedisServer.start({ args: ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dataDir] });
  sim = new UpstreamSimulator({ credit: 10_000_000 });
  await sim.start(0);
  const env = { UPSTREAM_BASE_URL: sim.baseUrl, REDIS_URL: redis.url, UPSTREAM_TIMEOUT_MS: '3000' };
  replicas = await Promise.all([startGateway(env), startGateway(env)]);
  alive = [...replicas];
  await Promise.all(replicas.map((g) => untilStoreReady(g, 15_000)));
});

afterAll(async () => {
  await Promise.all(replicas.map((g) => g.close().catch(() => undefined)));
  await sim?.stop();
  await redis?.stop();
  rmSync(dataDir, { recursive: true, force: true });
  const codes = Object.fromEntries([...byCode].sort());
  console.log(
    `faults under load: ${sent.length} requests, answers ${JSON.stringify(codes)}, ` +
      `${sim.chargesByTrackId.size} charges, ${sim.inquiryCalls} upstream inquiry calls`,
  );
});

/** Statuses after which the same request is sent again with the same key. */
const RETRY = new Set([502, 503, 504]);

async function send(key: string, phase: string, attempt: number): Promise<void> {
  const gateway = alive[(key.length + attempt + sent.length) % alive.length];
  let exchange: Exchange | null;
  try {
    exchange = await callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
      apiKey: TEST_CLIENTS.full.key,
      json: SHAHKAR,
      headers: { 'idempotency-key': key },
    });
  } catch {
    exchange = null; // connection refused or reset: a replica going away
  }
  sent.push({ key, exchange, phase });
  const code = exchange
    ? `${exchange.status}${typeof exchange.body.code === 'string' ? ` ${exchange.body.code}` : ''}`
    : 'network';
  byCode.set(code, (byCode.get(code) ?? 0) + 1);
  if (attempt === 0 && (exchange === null || RETRY.has(exchange.status))) await send(key, phase, 1);
}

/** Runs the workers for `PHASE_MS` while `fault` runs alongside. */
async function loadWith(phase: string, fault: () => Promise<void>): Promise<void> {
  const until = Date.now() + PHASE_MS;
  let n = 0;
  const worker = async (w: number) => {
    while (Date.now() < until) await send(`${phase}-${w}-${n++}`, phase, 0);
  };
  await Promise.all([...Array.from({ length: WORKERS }, (_, w) => worker(w)), fault()]);
}

async function expectInvariants(): Promise<void> {
  const exchanges = sent.flatMap((s) => (s.exchange ? [s.exchange] : []));
  expect(exchanges.filter((e) => e.status >= 500 && e.body.code === 'internal')).toEqual([]);
  expect(exchanges.filter((e) => e.status === 500)).toEqual([]);
  expectEveryChargeTraceable(sim, exchanges);
  for (const count of sim.chargesByTrackId.values()) expect(count).toBe(1);

  // One charge per Idempotency-Key at most.
  const trackIdsByKey = new Map<string, Set<string>>();
  for (const { key, exchange } of sent) {
    const trackId = exchange?.headers.get('x-track-id');
    if (!trackId) continue;
    trackIdsByKey.set(key, (trackIdsByKey.get(key) ?? new Set()).add(trackId));
  }
  for (const [key, trackIds] of trackIdsByKey) {
    const charged = [...trackIds].filter((t) => sim.chargeCount(t) > 0);
    if (charged.length > 1) throw new Error(`key ${key} charged under ${charged.length} trackIds`);
  }

  // Every trackId handed out has a record, unless its answer refused the request.
  const reader = alive[0];
  await untilStoreReady(reader, 15_000);
  const handedOut = new Set<string>();
  for (const { exchange } of sent) {
    const trackId = exchange?.headers.get('x-track-id');
    if (trackId && !(exchange!.status === 503 && exchange!.body.code === 'store_unavailable')) handedOut.add(trackId);
  }
  const missing: string[] = [];
  for (const trackId of handedOut) {
    const res = await callGateway(reader.url, 'GET', `/v1/inquiries/${trackId}`, { apiKey: TEST_CLIENTS.full.key });
    if (res.status !== 200) missing.push(`${trackId}: ${res.status}`);
  }
  expect(missing).toEqual([]);
}

it('keeps its invariants through upstream, token, Redis and replica faults', async () => {
  await loadWith('baseline', () => Promise.resolve());
  await expectInvariants();

  await loadWith('upstream', () => {
    sim.injectFault({ path: CHECK_SHAHKAR_PATH, kind: 'http500', times: 5 });
    sim.injectFault({ path: CHECK_SHAHKAR_PATH, kind: 'drop', times: 5 });
    sim.injectFault({ path: CHECK_SHAHKAR_PATH, kind: 'hang', times: 2 });
    return Promise.resolve();
  });
  await expectInvariants();

  await loadWith('token', async () => {
    await new Promise((resolve) => setTimeout(resolve, PHASE_MS / 3));
    sim.revokeAllRefreshTokens();
    sim.expireAllAccessTokens();
  });
  await expectInvariants();

  await loadWith('redis', async () => {
    await new Promise((resolve) => setTimeout(resolve, PHASE_MS / 3));
    await redis.kill();
    await new Promise((resolve) => setTimeout(resolve, 500));
    await redis.restart();
  });
  await Promise.all(alive.map((g) => untilStoreReady(g, 15_000)));
  await expectInvariants();

  await loadWith('replica', async () => {
    await new Promise((resolve) => setTimeout(resolve, PHASE_MS / 3));
    const leaving = alive[1];
    alive = [alive[0]];
    await leaving.close();
  });
  await expectInvariants();
  expect(sent.length).toBeGreaterThan(50);
}, 120_000);
