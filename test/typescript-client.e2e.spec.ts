/**
 * The typed client (clients/typescript) against a running gateway and the upstream simulator:
 * the three calls an app makes, idempotent retries, and every problem shape as a typed value;
 * and its generated types are those of the committed docs/openapi.json.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UnexpectedResponseError, VerificationGatewayClient, type Result } from '../clients/typescript/src/index.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { IBAN, SHAHKAR } from './support/fixtures.js';
import { RedisServer } from './support/redis-server.js';
import { TEST_CLIENTS, startGateway, untilStoreReady, type RunningGateway, apiKeysWith } from './support/gateway.js';

const ROOT = new URL('..', import.meta.url).pathname;
const QUOTA_KEY = 'key-client-quota-0123456789';
const SPENT_KEY = 'key-client-spent-0123456789';

/** The problem's code of a failed call (and the test fails on a success). */
function problemOf<T>(result: Result<T>) {
  if (result.ok) throw new Error(`expected a problem, got ${result.status}`);
  return result;
}

/** A fixed-offset zone whose local time is now about noon (Etc/GMT-N is UTC+N). */
function zoneAtNoon(): string {
  const offset = 12 - new Date().getUTCHours(); // -11 … +12
  return offset === 0 ? 'Etc/GMT' : `Etc/GMT${offset > 0 ? '-' : '+'}${Math.abs(offset)}`;
}

/** A gateway's JSON answer, for a fake fetch. */
function jsonAnswer(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
}

/** A gateway's problem+json answer with its code (and headers such as retry-after). */
function problemAnswer(status: number, { code, ...headers }: { code: string } & Record<string, string>): Response {
  const problem = { type: `https://problems.example/${code}`, title: code, status, code };
  return new Response(JSON.stringify(problem), {
    status,
    headers: { 'content-type': 'application/problem+json', ...headers },
  });
}

describe('clients/typescript', () => {
  let sim: UpstreamSimulator;
  let redis: RedisServer;
  let gateway: RunningGateway;
  let client: VerificationGatewayClient;

  beforeAll(async () => {
    sim = new UpstreamSimulator();
    await sim.start();
    redis = await RedisServer.start();
    gateway = await startGateway({
      UPSTREAM_BASE_URL: sim.baseUrl,
      REDIS_URL: redis.url,
      UPSTREAM_TIMEOUT_MS: '1000',
      API_KEYS: apiKeysWith(
        { clientId: 'app-quota', key: QUOTA_KEY, scopes: ['kyc:shahkar'], quotaPerMinute: 1 },
        { clientId: 'app-spent', key: SPENT_KEY, scopes: ['kyc:shahkar'] },
      ),
      BUDGETS: JSON.stringify([{ clientId: 'app-spent', daily: 0 }]),
      // The spent budget's day ends ~12 h from now: near its midnight, Retry-After would fall
      // within the client's retry deadline and a retry there is right (it once ran at 23:59:50).
      BUDGET_TIMEZONE: zoneAtNoon(),
      INQUIRY_REUSE: JSON.stringify({ iban: { maxAgeSeconds: 3600, share: 'client' } }),
      REUSE_HMAC_KEY: 'typescript-client-reuse-key-0123456789',
    });
    await untilStoreReady(gateway);
    client = new VerificationGatewayClient({ baseUrl: gateway.url, apiKey: TEST_CLIENTS.full.key });
  });

  afterAll(async () => {
    await gateway.close();
    await redis.stop();
    await sim.stop();
  });

  it('has the types a fresh generation from docs/openapi.json gives (npm run client:generate)', () => {
    const check = spawnSync(
      join(ROOT, 'node_modules/.bin/openapi-typescript'),
      ['docs/openapi.json', '-o', 'clients/typescript/src/schema.ts', '--default-non-nullable', 'false', '--check'],
      { cwd: ROOT, encoding: 'utf8' },
    );
    expect({ status: check.status, output: check.stdout + check.stderr }).toEqual({
      status: 0,
      output: expect.any(String),
    });
  });

  it('makes the three calls an app makes, with trackIds and idempotent retries', async () => {
    const first = await client.shahkar(SHAHKAR, { idempotencyKey: 'client-retry-1', requestId: 'client-req-1' });
    if (!first.ok) throw new Error(first.problem.code);
    expect(first).toMatchObject({ status: 200, replayed: false, requestId: 'client-req-1' });
    expect(first.data.trackId).toBe(first.trackId);
    const retry = await client.shahkar(SHAHKAR, { idempotencyKey: 'client-retry-1' });
    expect(retry).toMatchObject({ ok: true, replayed: true, trackId: first.trackId });
    expect(sim.chargeCount(first.trackId!)).toBe(1);

    const iban = await client.iban({ iban: IBAN }, { idempotencyKey: true });
    expect(iban).toMatchObject({ ok: true, status: 200, replayed: false });

    const record = await client.inquiry(first.trackId!);
    if (!record.ok) throw new Error(record.problem.code);
    expect(record.data).toMatchObject({ trackId: first.trackId, operation: 'shahkar', status: 'succeeded' });
  });

  it('maxAgeSeconds sends Cache-Control: max-age; a reused answer says so', async () => {
    const account = { iban: 'IR062960000000100324200001' };
    const paid = await client.iban(account, { maxAgeSeconds: 600 });
    expect(paid).toMatchObject({ ok: true, cacheStatus: 'verification-gateway; fwd=miss; stored' });
    const reused = await client.iban(account, { maxAgeSeconds: 600 });
    if (!reused.ok) throw new Error(reused.problem.code);
    expect(reused).toMatchObject({ cacheStatus: 'verification-gateway; hit', ageSeconds: expect.any(Number) });
    expect(reused.data.reusedFrom).toBe(paid.trackId);
    expect(sim.chargeCount(reused.trackId!)).toBe(0);
  });

  it('gives every refusal as a typed problem: 400 with field errors, 401, 403, 404, 429 with Retry-After', async () => {
    const invalid = problemOf(await client.shahkar({ ...SHAHKAR, nationalCode: '123' }));
    expect(invalid).toMatchObject({ status: 400, problem: { code: 'validation_failed' } });
    expect(invalid.problem.errors?.map((e) => e.field)).toContain('nationalCode');

    const anonymous = new VerificationGatewayClient({ baseUrl: gateway.url });
    expect(problemOf(await anonymous.iban({ iban: IBAN })).problem.code).toBe('unauthenticated');
    const unscoped = new VerificationGatewayClient({ baseUrl: gateway.url, apiKey: TEST_CLIENTS.none.key });
    expect(problemOf(await unscoped.shahkar(SHAHKAR)).problem.code).toBe('forbidden');
    expect(problemOf(await client.inquiry(crypto.randomUUID())).problem.code).toBe('not_found');

    const quota = new VerificationGatewayClient({ baseUrl: gateway.url, apiKey: QUOTA_KEY });
    await quota.shahkar(SHAHKAR);
    const limited = problemOf(await quota.shahkar(SHAHKAR));
    expect(limited).toMatchObject({ status: 429, problem: { code: 'rate_limited' } });
    expect(limited.retryAfterSeconds).toBeGreaterThan(0);
  });

  it('gives the upstream outcomes as typed problems: 409, 422, 502, 503, 504', async () => {
    sim.setLatency(300);
    try {
      const both = await Promise.all([0, 1].map(() => client.iban({ iban: IBAN }, { idempotencyKey: 'client-busy' })));
      expect(both.map((r) => (r.ok ? 200 : r.problem.code)).sort()).toEqual([200, 'idempotency_key_in_use']);
    } finally {
      sim.setLatency(0);
    }
    sim.setFieldValidator(() => [{ field: 'iban', message: 'unknown to the provider' }]);
    try {
      expect(problemOf(await client.iban({ iban: IBAN })).problem.code).toBe('upstream_rejected');
    } finally {
      sim.setFieldValidator(() => []);
    }
    sim.injectFault({ kind: 'malformed' });
    expect(problemOf(await client.iban({ iban: IBAN })).problem.code).toBe('upstream_error');
    const credit = sim.credit;
    sim.setCredit(0);
    try {
      expect(problemOf(await client.iban({ iban: IBAN })).problem).toMatchObject({
        status: 503,
        code: 'upstream_unavailable',
      });
    } finally {
      sim.setCredit(credit);
    }
    sim.injectFault({ kind: 'hang' });
    const timedOut = problemOf(await client.iban({ iban: IBAN }));
    expect(timedOut.problem).toMatchObject({ status: 504, code: 'upstream_timeout', trackId: expect.any(String) });
  });

  it('retries, when asked, only what is safe: with the same key, never past a replayed outcome or the deadline', async () => {
    // 409 while the first is in flight: retried until the replay.
    sim.setLatency(300);
    let both: Awaited<ReturnType<typeof client.iban>>[];
    try {
      both = await Promise.all(
        [0, 1].map(() =>
          client.iban(
            { iban: IBAN },
            { idempotencyKey: 'client-retry-busy', retry: { baseDelayMs: 100, maxAttempts: 20, deadlineMs: 20_000 } },
          ),
        ),
      );
    } finally {
      sim.setLatency(0);
    }
    expect(both.map((r) => [r.ok, r.status, r.idempotencyKey]).sort()).toEqual([
      [true, 200, 'client-retry-busy'],
      [true, 200, 'client-retry-busy'],
    ]);
    expect(both.map((r) => r.replayed).sort()).toEqual([false, true]);
    expect(Math.max(...both.map((r) => r.attempts))).toBeGreaterThan(1);
    expect(sim.chargeCount(both[0].trackId!)).toBe(1);

    // 504: retried once with the same key, and its stored (replayed) outcome is final.
    sim.injectFault({ kind: 'hang' });
    const timedOut = await client.iban({ iban: IBAN }, { retry: { baseDelayMs: 10 } });
    expect(timedOut).toMatchObject({ ok: false, status: 504, replayed: true, attempts: 2 });
    expect(sim.requests.filter((r) => r.trackId === timedOut.trackId)).toHaveLength(1);

    // 400 is never retried; a 429 whose Retry-After lies past the deadline is returned at once.
    expect(await client.shahkar({ ...SHAHKAR, nationalCode: '1' }, { retry: true })).toMatchObject({
      status: 400,
      attempts: 1,
    });
    const quota = new VerificationGatewayClient({
      baseUrl: gateway.url,
      apiKey: QUOTA_KEY,
      retry: { deadlineMs: 2000 },
    });
    await quota.shahkar(SHAHKAR);
    const limited = await quota.shahkar(SHAHKAR);
    expect(limited).toMatchObject({ ok: false, status: 429, attempts: 1 });

    // A spent budget is not retried before its window resets (Retry-After: hours away).
    const spent = new VerificationGatewayClient({ baseUrl: gateway.url, apiKey: SPENT_KEY, retry: true });
    const exhausted = problemOf(await spent.shahkar(SHAHKAR));
    expect(exhausted).toMatchObject({ status: 429, attempts: 1, problem: { code: 'budget_exhausted' } });
    expect(exhausted.trackId).toBeUndefined();
    expect(exhausted.retryAfterSeconds).toBeGreaterThan(0);
    const own = await spent.budget();
    expect(own).toMatchObject({
      ok: true,
      data: { clientId: 'app-spent', budgets: [{ window: 'daily', limitUnits: 0, remainingUnits: 0 }] },
    });
  });

  it('inquire(name, fields): the built-ins by name, a name known at run time, and 404 for a name the deployment lacks', async () => {
    const byName = await client.inquire('shahkar', SHAHKAR, { idempotencyKey: 'client-inquire-1' });
    expect(byName).toMatchObject({ ok: true, status: 200, idempotencyKey: 'client-inquire-1', replayed: false });
    const replay = await client.inquire('shahkar', SHAHKAR, { idempotencyKey: 'client-inquire-1' });
    expect(replay).toMatchObject({ ok: true, replayed: true, trackId: byName.trackId });
    expect(sim.chargeCount(byName.trackId!)).toBe(1);

    // A name from the deployment's configuration, a plain string here: asked asynchronously.
    const name: string = 'iban';
    const settled = await client.inquire(name, { iban: IBAN }, { async: { pollSeconds: 5 } });
    if (!settled.ok) throw new Error(settled.problem.code);
    expect(settled.data).toMatchObject({ trackId: settled.trackId, operation: 'iban', status: 'succeeded' });

    // Not in this deployment's catalog: the gateway's 404, as a typed problem; nothing charged.
    const calls = sim.inquiryCalls;
    const missing = problemOf(await client.inquire('card-to-iban', { cardNumber: '6037991234567893' }));
    expect(missing).toMatchObject({ status: 404, problem: { code: 'not_found' } });
    // Not a name at all: refused before anything is sent (it would become a path).
    await expect(client.inquire('../admin', { x: '1' })).rejects.toThrow(TypeError);
    expect(sim.inquiryCalls).toBe(calls);
  });

  it('inquire(name, fields) for an added operation: same key on a retry, then a 202 followed to its record', async () => {
    // A gateway with `card-to-iban` in its catalog, as far as the client can tell: 503 once, then 202 and the record.
    const trackId = crypto.randomUUID();
    const seen: Array<{ method: string; path: string; key: string | null; prefer: string | null; body: string }> = [];
    const answers = [
      problemAnswer(503, { code: 'upstream_unavailable', 'retry-after': '0' }),
      jsonAnswer(202, { trackId, status: 'pending' }, { 'x-track-id': trackId, location: `/v1/inquiries/${trackId}` }),
      jsonAnswer(200, {
        trackId,
        operation: 'card-to-iban',
        status: 'succeeded',
        requestHandlingType: 'standard',
        createdAt: new Date().toISOString(),
        data: { input: { cardNumber: '6037991234567893' }, matched: true },
      }),
    ];
    const added = new VerificationGatewayClient({
      baseUrl: 'http://gateway.invalid/',
      apiKey: 'key',
      fetch: async (input) => {
        const request = input as Request;
        seen.push({
          method: request.method,
          path: new URL(request.url).pathname,
          key: request.headers.get('idempotency-key'),
          prefer: request.headers.get('prefer'),
          body: request.method === 'POST' ? await request.text() : '',
        });
        return answers.shift()!;
      },
    });
    const fields = { cardNumber: '6037 9912 3456 7893' };
    const result = await added.inquire('card-to-iban', fields, { async: true, retry: { baseDelayMs: 1 } });
    expect(result).toMatchObject({
      ok: true,
      status: 200,
      attempts: 3,
      data: { operation: 'card-to-iban', status: 'succeeded' },
    });
    const key = result.idempotencyKey;
    expect(seen).toEqual([
      {
        method: 'POST',
        path: '/v1/kyc/card-to-iban',
        key,
        prefer: 'respond-async, wait=0',
        body: JSON.stringify(fields),
      },
      {
        method: 'POST',
        path: '/v1/kyc/card-to-iban',
        key,
        prefer: 'respond-async, wait=0',
        body: JSON.stringify(fields),
      },
      { method: 'GET', path: `/v1/inquiries/${trackId}`, key: null, prefer: 'wait=30', body: '' },
    ]);
  });

  it('sends an end user token from the provider on every call, and throws on an answer that is not the gateway’s', async () => {
    const seen: Array<string | null> = [];
    const proxied = new VerificationGatewayClient({
      baseUrl: 'http://gateway.invalid',
      accessToken: () => 'user-jwt',
      fetch: (input) => {
        seen.push((input as Request).headers.get('authorization'));
        return Promise.resolve(
          new Response('<html>Bad gateway</html>', { status: 502, headers: { 'content-type': 'text/html' } }),
        );
      },
    });
    await expect(proxied.shahkar(SHAHKAR)).rejects.toBeInstanceOf(UnexpectedResponseError);
    expect(seen).toEqual(['Bearer user-jwt']);
  });
});
