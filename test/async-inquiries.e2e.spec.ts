/**
 * Asynchronous answers (docs/api.md §2, "Asynchronous answers"), black box: two gateway
 * replicas in processes of their own (so one can be SIGKILLed mid-chain), one real Redis, and
 * the upstream simulator walking a slow `advanced` supplier chain (the first supplier fails,
 * each attempt takes `supplierLatencyMs`).
 *
 * Proven here: a 202 within the wait, with Location, X-Track-Id, Preference-Applied and
 * Retry-After; the result read by a long-poll on the other replica, woken by the settlement
 * (not by the end of its wait); a keyed retry during the chain answered 202 with the same
 * trackId, and after it the replay; an inquiry that settles within the wait answered exactly
 * as a synchronous one; a replica killed mid-call leaving its record `unknown` once the deadline
 * has passed, never `pending`, and a keyed retry then concluding it; a SIGTERM drained only
 * once its accepted inquiry has settled; and no trackId charged twice.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { callGateway, nextSimEvent, TEST_CLIENTS, type Exchange } from './support/gateway.js';
import { GatewayProcesses, type GatewayProcess } from './support/gateway-process.js';
import { RedisServer } from './support/redis-server.js';
import { SHAHKAR, UUID_V4 } from './support/fixtures.js';
import { CHECK_SHAHKAR_PATH, UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const ADVANCED = { ...SHAHKAR, requestHandlingType: 'advanced' };
/** Each supplier attempt: the advanced chain below (a failure, then a success) takes twice this. */
const SUPPLIER_MS = 400;
/** Short deadlines, so that a dead replica's record turns `unknown` within seconds. */
const TIMEOUTS = { UPSTREAM_TIMEOUT_MS: '500', UPSTREAM_ADVANCED_TIMEOUT_MS: '1500' };

let redis: RedisServer;
let sim: UpstreamSimulator;
let a: GatewayProcess;
let b: GatewayProcess;
const processes = new GatewayProcesses();

const replica = () => processes.start({ REDIS_URL: redis.url, UPSTREAM_BASE_URL: sim.baseUrl, ...TIMEOUTS });

function inquire(url: string, headers: Record<string, string>, json: unknown = ADVANCED): Promise<Exchange> {
  return callGateway(url, 'POST', '/v1/kyc/shahkar', { apiKey: TEST_CLIENTS.full.key, json, headers });
}

function read(url: string, trackId: string, headers: Record<string, string> = {}): Promise<Exchange> {
  return callGateway(url, 'GET', `/v1/inquiries/${trackId}`, { apiKey: TEST_CLIENTS.full.key, headers });
}

async function metric(url: string, series: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  if (!line) throw new Error(`no series ${series}`);
  return Number(line.slice(series.length + 1));
}

function expectAccepted(res: Exchange): string {
  expect(res.status).toBe(202);
  const trackId = res.body.trackId as string;
  expect(trackId).toMatch(UUID_V4);
  expect(res.body).toEqual({ trackId, status: 'pending' });
  expect(res.headers.get('x-track-id')).toBe(trackId);
  expect(res.headers.get('location')).toBe(`/v1/inquiries/${trackId}`);
  expect(res.headers.get('preference-applied')).toBe('respond-async');
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  return trackId;
}

beforeAll(async () => {
  redis = await RedisServer.start();
  sim = new UpstreamSimulator();
  await sim.start();
  [a, b] = await Promise.all([replica(), replica()]);
}, 120_000);

afterAll(async () => {
  await processes.killAll();
  await sim?.stop();
  await redis?.stop();
});

describe('asynchronous inquiries across two replicas', () => {
  it('answers 202 at once, repeats it for a keyed retry mid-chain, and a long-poll on the other replica is woken by the settlement', async () => {
    sim.setSupplierFailure('primary', 'error');
    sim.setSupplierLatency(SUPPLIER_MS);
    try {
      const key = randomUUID();
      const first = await inquire(a.url, { prefer: 'respond-async', 'idempotency-key': key });
      const trackId = expectAccepted(first);

      // The same key on the other replica while the chain runs: the same 202, not 409.
      const retry = await inquire(b.url, { prefer: 'respond-async', 'idempotency-key': key });
      expect(expectAccepted(retry)).toBe(trackId);
      // Without `respond-async` the contract's 409 still holds.
      expect((await inquire(b.url, { 'idempotency-key': key })).status).toBe(409);

      // The pending record, read at once without waiting.
      const pending = await read(b.url, trackId);
      expect(pending.body).toMatchObject({ trackId, status: 'pending', requestHandlingType: 'advanced' });
      expect(pending.headers.get('preference-applied')).toBeNull();

      // Held on B until A's settlement wakes it: it ends long before its 30 s wait.
      const wokenBefore = await metric(b.url, 'vgw_inquiry_waits_total{outcome="woken"}');
      const settled = nextSimEvent(sim, 'inquiry', (e) => e.trackId === trackId);
      const held = await read(b.url, trackId, { prefer: 'wait=30' });
      expect((await settled).status).toBe(200);
      expect(held.status).toBe(200);
      expect(held.body).toMatchObject({ trackId, status: 'succeeded', data: { isMatch: true } });
      expect(held.headers.get('preference-applied')).toBe('wait=30');
      expect(await metric(b.url, 'vgw_inquiry_waits_total{outcome="woken"}')).toBe(wokenBefore + 1);
      expect(await metric(a.url, 'vgw_inquiries_accepted_total{operation="shahkar"}')).toBeGreaterThanOrEqual(1);

      // Once settled, the key replays the result, async preference or not.
      const replay = await inquire(b.url, { prefer: 'respond-async', 'idempotency-key': key });
      expect(replay.status).toBe(200);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.body).toMatchObject({ trackId, status: 'succeeded' });
      expect(sim.chargesByTrackId.get(trackId)).toBe(1);
    } finally {
      sim.setSupplierFailure('primary', null);
      sim.setSupplierLatency(0);
    }
  }, 30_000);

  it('gives an advanced chain its own deadline: longer than a standard call may take, within the advanced one', async () => {
    // Three supplier attempts of 300 ms: 900 ms, past UPSTREAM_TIMEOUT_MS (500) and within
    // UPSTREAM_ADVANCED_TIMEOUT_MS (1500).
    sim.setSupplierFailure('primary', 'error');
    sim.setSupplierFailure('secondary', 'error');
    sim.setSupplierLatency(300);
    try {
      const advanced = await inquire(a.url, {});
      expect(advanced.status).toBe(200);
      expect(sim.attemptLog.filter((x) => x.trackId === advanced.body.trackId)).toHaveLength(3);
      // The same 900 ms on the standard path (one supplier attempt) is past its deadline.
      sim.setSupplierFailure('primary', null);
      sim.setSupplierLatency(900);
      const standard = await inquire(a.url, {}, SHAHKAR);
      expect(standard.status).toBe(504);
      expect(standard.body).toMatchObject({ code: 'upstream_timeout' });
    } finally {
      sim.setSupplierFailure('primary', null);
      sim.setSupplierFailure('secondary', null);
      sim.setSupplierLatency(0);
    }
  });

  it('answers exactly as synchronously when the inquiry settles within the wait', async () => {
    const res = await inquire(a.url, { prefer: 'respond-async, wait=10' }, SHAHKAR);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'succeeded', data: { isMatch: true } });
    expect(res.headers.get('preference-applied')).toBeNull();
    expect(res.headers.get('location')).toBeNull();
  });

  it('a replica SIGKILLed mid-call leaves a record that reads unknown after its deadline (never pending), concluded for a keyed retry, charged once', async () => {
    const doomed = await replica();
    const key = randomUUID();
    // The upstream processes (and charges) the inquiry, then holds the answer: the call is in
    // flight on `doomed` when it is killed.
    sim.injectFault({ path: CHECK_SHAHKAR_PATH, kind: 'hang-after-processing' });
    const charged = nextSimEvent(sim, 'inquiry', (e) => e.fault === 'hang-after-processing');
    const trackId = expectAccepted(
      await inquire(doomed.url, { prefer: 'respond-async', 'idempotency-key': key }, SHAHKAR),
    );
    expect((await charged).trackId).toBe(trackId);
    doomed.process.kill('SIGKILL');
    await doomed.exited;

    // Still within the deadline: pending; a long-poll ends with its wait (nothing settles it,
    // and it says it waited); a keyed async retry gets the same 202.
    expect((await read(b.url, trackId)).body).toMatchObject({ status: 'pending' });
    const timedOut = await read(b.url, trackId, { prefer: 'wait=1' });
    expect(timedOut.body).toMatchObject({ trackId, status: 'pending' });
    expect(timedOut.headers.get('preference-applied')).toBe('wait=1');
    expect(expectAccepted(await inquire(b.url, { prefer: 'respond-async', 'idempotency-key': key }, SHAHKAR))).toBe(
      trackId,
    );

    // A long-poll is held until the record is overdue, and then reads unknown.
    const held = await read(b.url, trackId, { prefer: 'wait=60' });
    expect(held.status).toBe(200);
    expect(held.body).toMatchObject({ trackId, status: 'unknown' });
    expect((await read(a.url, trackId)).body).toMatchObject({ status: 'unknown' });

    // The keyed retry now concludes it (504, possibly charged) instead of sending it again.
    const concluded = await inquire(b.url, { prefer: 'respond-async', 'idempotency-key': key }, SHAHKAR);
    expect(concluded.status).toBe(504);
    expect(concluded.body).toMatchObject({ code: 'upstream_timeout', trackId });
    expect(sim.chargesByTrackId.get(trackId)).toBe(1);
    expect(sim.requests.filter((r) => r.trackId === trackId)).toHaveLength(1);
  }, 30_000);

  it('SIGTERM waits for an accepted inquiry to settle before the process exits', async () => {
    const stopping = await replica();
    sim.setSupplierFailure('primary', 'error');
    sim.setSupplierLatency(SUPPLIER_MS);
    try {
      const trackId = expectAccepted(await inquire(stopping.url, { prefer: 'respond-async' }));
      stopping.process.kill('SIGTERM');
      expect(await stopping.exited).toBe(0);
      expect(stopping.output()).toContain('inquiry(ies) running; waiting for them');
      expect((await read(b.url, trackId)).body).toMatchObject({ trackId, status: 'succeeded' });
      // The access line is written at the 202; the outcome, learnt later, on a line of its own
      // with the same request id.
      const lines = stopping
        .output()
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      const access = lines.find((l) => l.trackId === trackId && l.status === 202);
      expect(access).toMatchObject({ route: '/v1/kyc/shahkar', method: 'POST', clientId: 'app-full' });
      expect(access).not.toHaveProperty('outcome');
      expect(lines.find((l) => l.msg === 'inquiry' && l.trackId === trackId)).toMatchObject({
        requestId: access!.requestId,
        outcome: 'succeeded',
        requestHandlingType: 'advanced',
      });
      expect(stopping.output()).not.toContain(SHAHKAR.nationalCode);
    } finally {
      sim.setSupplierFailure('primary', null);
      sim.setSupplierLatency(0);
    }
  }, 30_000);

  it('charged no trackId twice', () => {
    for (const [trackId, charges] of sim.chargesByTrackId) expect([trackId, charges]).toEqual([trackId, 1]);
    expect(sim.chargesByTrackId.size).toBeGreaterThan(0);
  });
});
