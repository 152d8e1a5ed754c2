/**
 * End to end, over real HTTP against the upstream simulator and a real Redis: what the
 * gateway answers when the upstream fails, rejects, times out or refuses its credentials,
 * and when Redis is down (docs/api.md §3), with the inquiry record each case leaves,
 * the retry after a 401, and the rule that no trackId is ever charged twice.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  callGateway,
  nextSimEvent,
  startGateway,
  TEST_CLIENTS,
  untilStoreReady,
  type CallOptions,
  type Exchange,
  type RunningGateway,
} from './support/gateway.js';
import { expectEveryChargeTraceable, expectNoSecretInExchanges, expectProblemShape } from './support/invariants.js';
import { RedisServer } from './support/redis-server.js';
import {
  CHECK_SHAHKAR_PATH,
  IBAN_INQUIRY_PATH,
  UpstreamSimulator,
  type InquiryEvent,
} from './upstream-simulator/upstream-simulator.js';
import { UUID_V4, ISO_8601, UPSTREAM_PASSWORD, NATIONAL_CODE, MOBILE, IBAN, SHAHKAR } from './support/fixtures.js';

const PERSONAL_VALUES = [NATIONAL_CODE, MOBILE, '9121234567', IBAN, '820540102680020817909002'];
const CREDIT = 1_000_000;

let redis: RedisServer;
let sim: UpstreamSimulator;
/** The gateway most tests use (upstream timeout 5 s). */
let gateway: RunningGateway;
/** Same Redis and upstream, upstream timeout 300 ms. */
let fast: RunningGateway;
let issuedTokens: readonly string[];
const extraGateways: RunningGateway[] = [];
const exchanges: Exchange[] = [];

async function call(baseUrl: string, method: string, path: string, options: CallOptions = {}): Promise<Exchange> {
  const exchange = await callGateway(baseUrl, method, path, options);
  exchanges.push(exchange);
  return exchange;
}

function shahkar(options: { url?: string; key?: string; json?: unknown } = {}): Promise<Exchange> {
  return call(options.url ?? gateway.url, 'POST', '/v1/kyc/shahkar', {
    apiKey: TEST_CLIENTS.full.key,
    json: options.json ?? SHAHKAR,
    headers: options.key === undefined ? {} : { 'idempotency-key': options.key },
  });
}

function record(trackId: string, url: string = gateway.url): Promise<Exchange> {
  return call(url, 'GET', `/v1/inquiries/${trackId}`, { apiKey: TEST_CLIENTS.full.key });
}

/** A problem for an inquiry that was stamped: trackId in the body and X-Track-Id equal to it. */
function expectInquiryProblem(res: Exchange, status: number, code: string): string {
  expectProblemShape(res, status, code);
  expect(res.body.trackId).toMatch(UUID_V4);
  expect(res.headers.get('x-track-id')).toBe(res.body.trackId);
  for (const value of PERSONAL_VALUES) expect(res.text).not.toContain(value);
  return res.body.trackId as string;
}

function expectSucceeded(res: Exchange): string {
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ status: 'succeeded', trackId: expect.stringMatching(UUID_V4) });
  expect(res.headers.get('x-track-id')).toBe(res.body.trackId);
  return res.body.trackId as string;
}

/** The record as GET /v1/inquiries/{trackId} shows it. */
async function expectRecord(
  trackId: string,
  expected: Record<string, unknown>,
  url?: string,
): Promise<Record<string, unknown>> {
  const res = await record(trackId, url);
  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    trackId,
    operation: 'shahkar',
    requestHandlingType: 'standard',
    createdAt: expect.stringMatching(ISO_8601),
    completedAt: expect.stringMatching(ISO_8601),
    ...expected,
  });
  return res.body;
}

/** The simulator's recorded requests since `from`. */
const requestsSince = (from: number) => sim.requests.slice(from);

beforeAll(async () => {
  redis = await RedisServer.start();
  sim = new UpstreamSimulator({ credit: CREDIT });
  await sim.start(0);
  issuedTokens = sim.issuedTokenValues;
  const env = { UPSTREAM_BASE_URL: sim.baseUrl, REDIS_URL: redis.url };
  [gateway, fast] = await Promise.all([
    startGateway({ ...env, UPSTREAM_TIMEOUT_MS: '5000' }),
    startGateway({ ...env, UPSTREAM_TIMEOUT_MS: '300' }),
  ]);
  await Promise.all([untilStoreReady(gateway), untilStoreReady(fast)]);
});

afterAll(async () => {
  await Promise.all([gateway, fast, ...extraGateways].map((g) => g?.close()));
  await sim?.stop();
  await redis?.stop();
});

describe('success and the retry after a 401', () => {
  it('sends the stamped trackId upstream and records the success', async () => {
    const from = sim.requests.length;
    const res = await shahkar();
    const trackId = expectSucceeded(res);
    expect(res.body).toEqual({ trackId, status: 'succeeded', data: { isMatch: true } });
    expect(requestsSince(from)).toEqual([
      expect.objectContaining({
        path: CHECK_SHAHKAR_PATH,
        trackId,
        body: { ...SHAHKAR, requestHandlingType: 'standard', trackId },
      }),
    ]);
    await expectRecord(trackId, {
      status: 'succeeded',
      upstream: { code: 0, message: 'Operation completed successfully' },
      data: { isMatch: true },
    });
    expect(sim.chargeCount(trackId)).toBe(1);
  });

  it('renews the token after a 401 and repeats the call with the SAME trackId, charged once', async () => {
    expectSucceeded(await shahkar()); // the gateway holds a token
    sim.expireAllAccessTokens();
    const from = sim.requests.length;
    const refreshes = sim.tokenCalls.refresh;
    const events: InquiryEvent[] = [];
    const collect = (event: InquiryEvent) => events.push(event);
    sim.on('inquiry', collect);
    try {
      const accepted = nextSimEvent(sim, 'inquiry', (e) => e.status === 200);
      const res = await shahkar();
      await accepted;
      const trackId = expectSucceeded(res);

      const seen = requestsSince(from);
      expect(seen.map((r) => r.trackId)).toEqual([trackId, trackId]);
      expect(seen[0].body).toEqual(seen[1].body);
      expect(seen[0].authorization).not.toBe(seen[1].authorization);
      expect(events).toEqual([
        { path: CHECK_SHAHKAR_PATH, trackId, status: 401, code: 6 },
        { path: CHECK_SHAHKAR_PATH, trackId, status: 200, code: 0 },
      ]);
      expect(sim.tokenCalls.refresh).toBe(refreshes + 1);
      expect(sim.chargeCount(trackId)).toBe(1);
      await expectRecord(trackId, {
        status: 'succeeded',
        upstream: { code: 0, message: 'Operation completed successfully' },
        data: { isMatch: true },
      });
    } finally {
      sim.off('inquiry', collect);
    }
  });
});

describe('502 upstream_error', () => {
  it('upstream HTTP 500: failed, nothing charged', async () => {
    sim.injectFault({ path: CHECK_SHAHKAR_PATH, kind: 'http500' });
    const res = await shahkar();
    const trackId = expectInquiryProblem(res, 502, 'upstream_error');
    expect(requestsSince(sim.requests.length - 1)[0].trackId).toBe(trackId);
    await expectRecord(trackId, { status: 'failed', upstream: { code: 1, message: 'Internal server error' } });
    expect(sim.chargeCount(trackId)).toBe(0);
  });

  it('malformed upstream answer: the outcome cannot be known', async () => {
    sim.injectFault({ path: CHECK_SHAHKAR_PATH, kind: 'malformed' });
    const trackId = expectInquiryProblem(await shahkar(), 502, 'upstream_error');
    await expectRecord(trackId, { status: 'unknown' });
  });

  it('connection dropped after sending: the outcome cannot be known', async () => {
    sim.injectFault({ path: CHECK_SHAHKAR_PATH, kind: 'drop' });
    const from = sim.inquiryCalls;
    const trackId = expectInquiryProblem(await shahkar(), 502, 'upstream_error');
    await expectRecord(trackId, { status: 'unknown' });
    // Not retried: a dropped request may have been processed.
    expect(sim.inquiryCalls).toBe(from + 1);
  });

  it.each<['error' | 'timeout', number, string]>([
    ['error', 15, 'Supplier error'],
    ['timeout', 14, 'Supplier timed out'],
  ])('supplier failure (%s): failed with the upstream code, nothing charged', async (failure, code, message) => {
    sim.setSupplierFailure('primary', failure);
    try {
      const credit = sim.credit;
      const trackId = expectInquiryProblem(await shahkar(), 502, 'upstream_error');
      await expectRecord(trackId, { status: 'failed', upstream: { code, message } });
      expect(sim.chargeCount(trackId)).toBe(0);
      expect(sim.credit).toBe(credit);
      expect(sim.attemptLog.filter((a) => a.trackId === trackId)).toEqual([
        { trackId, supplier: 'primary', outcome: failure },
      ]);
    } finally {
      sim.setSupplierFailure('primary', null);
    }
  });

  it('`advanced` walks past a failing supplier: one success, charged once', async () => {
    sim.setSupplierFailure('primary', 'error');
    try {
      const credit = sim.credit;
      const res = await call(gateway.url, 'POST', '/v1/kyc/iban', {
        apiKey: TEST_CLIENTS.full.key,
        json: { iban: IBAN, requestHandlingType: 'advanced' },
      });
      const trackId = expectSucceeded(res);
      expect(sim.attemptLog.filter((a) => a.trackId === trackId).map((a) => a.outcome)).toEqual(['error', 'success']);
      expect(sim.chargeCount(trackId)).toBe(1);
      expect(sim.credit).toBe(credit - 120);
      expect(sim.requests.filter((r) => r.trackId === trackId)).toEqual([
        expect.objectContaining({ path: IBAN_INQUIRY_PATH }),
      ]);
    } finally {
      sim.setSupplierFailure('primary', null);
    }
  });
});

describe('422 upstream_rejected', () => {
  /**
   * The gateway validates everything the simulator checks by itself, so the simulator is
   * given one value rule of its own: an upstream validation error (§7: 400, code 2,
   * BadRequest) whose messages echo the input, as a real upstream's might.
   */
  function rejectNextInquiry(): void {
    sim.setFieldValidator(() => {
      sim.setFieldValidator(() => []);
      return [
        { field: 'nationalCode', message: `nationalCode ${NATIONAL_CODE} is not registered; mobile ${MOBILE} unknown` },
      ];
    });
  }

  it('carries the upstream message in detail and its field errors, with personal data masked', async () => {
    rejectNextInquiry();
    const res = await shahkar();
    const trackId = expectInquiryProblem(res, 422, 'upstream_rejected');
    expect(res.body.detail).toBe('One or more validation errors occurred');
    expect(res.body.errors).toEqual([
      {
        field: 'nationalCode',
        message: expect.stringMatching(/^nationalCode \S+ is not registered; mobile \S+ unknown$/),
      },
    ]);
    expect(res.text).not.toContain(NATIONAL_CODE);
    expect(res.text).not.toContain(MOBILE);
    const stored = await expectRecord(trackId, {
      status: 'failed',
      upstream: { code: 2, message: 'One or more validation errors occurred' },
    });
    expect(JSON.stringify(stored)).not.toContain(MOBILE);
    expect(sim.chargeCount(trackId)).toBe(0);
  });
});

describe('504 upstream_timeout (upstream timeout 300 ms)', () => {
  beforeAll(async () => {
    // The fast gateway must hold a token the upstream accepts, so the fault hits the inquiry.
    expectSucceeded(await shahkar({ url: fast.url }));
  });

  it('records the inquiry as unknown: the upstream processed (and charged) it, the answer never came', async () => {
    sim.injectFault({ path: CHECK_SHAHKAR_PATH, kind: 'hang-after-processing' });
    const decided = nextSimEvent(sim, 'inquiry', (e) => e.fault === 'hang-after-processing');
    const started = Date.now();
    const res = await shahkar({ url: fast.url });
    const elapsed = Date.now() - started;
    const trackId = expectInquiryProblem(res, 504, 'upstream_timeout');
    expect(await decided).toEqual({
      path: CHECK_SHAHKAR_PATH,
      trackId,
      status: 200,
      code: 0,
      fault: 'hang-after-processing',
    });
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(3000);
    await expectRecord(trackId, { status: 'unknown' }, fast.url);
    // Visible from the other replica too (shared Redis).
    await expectRecord(trackId, { status: 'unknown' });
    expect(sim.chargeCount(trackId)).toBe(1);
  });

  it('a retry with the same Idempotency-Key replays the timeout: never sent (nor charged) twice', async () => {
    const key = `timeout-${randomUUID()}`;
    sim.injectFault({ path: CHECK_SHAHKAR_PATH, kind: 'hang' });
    const first = await shahkar({ url: fast.url, key });
    const trackId = expectInquiryProblem(first, 504, 'upstream_timeout');
    await expectRecord(trackId, { status: 'unknown' });
    const calls = sim.inquiryCalls;

    for (const url of [fast.url, gateway.url]) {
      const replay = await shahkar({ url, key });
      expect(replay.status).toBe(504);
      expect(replay.text).toBe(first.text);
      expect(replay.headers.get('x-track-id')).toBe(trackId);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
    }
    expect(sim.inquiryCalls).toBe(calls);
    expect(sim.requests.filter((r) => r.trackId === trackId)).toHaveLength(1);
  });
});

describe('503 upstream_unavailable', () => {
  it('insufficient credit (HTTP 402 upstream): failed, nothing charged', async () => {
    sim.setCredit(0);
    try {
      const answer = await shahkar();
      const trackId = expectInquiryProblem(answer, 503, 'upstream_unavailable');
      // What to do: wait (Retry-After), nothing was charged, a retry is safe.
      expect(answer.headers.get('retry-after')).toBe('300');
      expect(answer.body.detail).toMatch(/credit is used up.*nothing was charged, and a retry is safe/);
      await expectRecord(trackId, { status: 'failed', upstream: { code: 5, message: 'Insufficient credit' } });
      expect(sim.chargeCount(trackId)).toBe(0);
      expect(sim.credit).toBe(0);
    } finally {
      sim.setCredit(CREDIT);
    }
  });

  it('credit enough for `standard` but not for the whole `advanced` chain', async () => {
    sim.setCredit(200);
    try {
      const res = await shahkar({ json: { ...SHAHKAR, requestHandlingType: 'advanced' } });
      expectInquiryProblem(res, 503, 'upstream_unavailable');
      expectSucceeded(await shahkar());
      expect(sim.credit).toBe(100);
    } finally {
      sim.setCredit(CREDIT);
    }
  });

  it('account disabled (HTTP 403 upstream)', async () => {
    sim.disableAccount(true);
    try {
      const trackId = expectInquiryProblem(await shahkar(), 503, 'upstream_unavailable');
      await expectRecord(trackId, { status: 'failed', upstream: { code: 9, message: 'User account is disabled' } });
    } finally {
      sim.disableAccount(false);
    }
    expectSucceeded(await shahkar());
  });

  it('credentials rejected: the held token is refused and renewal fails; the Idempotency-Key is released', async () => {
    expectSucceeded(await shahkar());
    sim.setPassword('other'); // also invalidates every refresh token (upstream §4.1 rule 4)
    sim.expireAllAccessTokens();
    const key = `creds-${randomUUID()}`;
    const from = sim.requests.length;
    const tokenCalls = { ...sim.tokenCalls };
    let trackId: string;
    try {
      const res = await shahkar({ key });
      trackId = expectInquiryProblem(res, 503, 'upstream_unavailable');
      expect(res.body.detail).not.toMatch(/password|token|credential/i);
      // One inquiry request: refused with 401 before the upstream registered the trackId.
      expect(requestsSince(from).map((r) => r.trackId)).toEqual([trackId]);
      expect(sim.tokenCalls).toEqual({
        credentials: tokenCalls.credentials + 1,
        refresh: tokenCalls.refresh + 1,
        failed: tokenCalls.failed + 2,
      });
      expect(sim.chargeCount(trackId)).toBe(0);
      await expectRecord(trackId, { status: 'failed' });
    } finally {
      sim.setPassword(UPSTREAM_PASSWORD);
    }
    // The gateway retries on its own after its backoff (1 s); no request is needed.
    await nextSimEvent(sim, 'token', (e) => e.ok, 5000);

    // Nothing can have been charged, so the key was released: the same key runs afresh.
    const retry = await shahkar({ key });
    const retryId = expectSucceeded(retry);
    expect(retryId).not.toBe(trackId);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(sim.chargeCount(retryId)).toBe(1);
  });

  it('no token at all (never obtained): refused before anything is sent, and the key is released', async () => {
    sim.setPassword('other');
    let cold: RunningGateway;
    const key = `cold-${randomUUID()}`;
    const calls = sim.inquiryCalls;
    let trackId: string;
    try {
      const firstAttempt = nextSimEvent(sim, 'token', (e) => !e.ok && e.variant === 'credentials');
      // Its own key prefix: it cannot adopt the token the other instances share in Redis.
      cold = await startGateway({
        UPSTREAM_BASE_URL: sim.baseUrl,
        REDIS_URL: redis.url,
        REDIS_KEY_PREFIX: 'vgw-cold',
        UPSTREAM_TIMEOUT_MS: '5000',
      });
      extraGateways.push(cold);
      await untilStoreReady(cold);
      expect(await firstAttempt).toEqual({ variant: 'credentials', ok: false, status: 401 });

      const res = await shahkar({ url: cold.url, key });
      trackId = expectInquiryProblem(res, 503, 'upstream_unavailable');
      expect(sim.inquiryCalls).toBe(calls);
      await expectRecord(trackId, { status: 'failed' }, cold.url);
    } finally {
      sim.setPassword(UPSTREAM_PASSWORD);
    }
    await nextSimEvent(sim, 'token', (e) => e.ok, 5000);

    const retry = await shahkar({ url: cold.url, key });
    const retryId = expectSucceeded(retry);
    expect(retryId).not.toBe(trackId);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(sim.inquiryCalls).toBe(calls + 1);
    // From now on the key replays that success.
    const replay = await shahkar({ url: cold.url, key });
    expect(replay.text).toBe(retry.text);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(sim.inquiryCalls).toBe(calls + 1);
  });
});

describe('503 store_unavailable (Redis killed)', () => {
  it('refuses the inquiry before anything is sent upstream, then recovers when Redis is back', async () => {
    const done = expectSucceeded(await shahkar());
    await redis.kill();
    const calls = sim.inquiryCalls;

    const res = await shahkar();
    expectInquiryProblem(res, 503, 'store_unavailable');
    expect(res.headers.get('retry-after')).toBe('1');

    const keyed = await shahkar({ key: `down-${randomUUID()}` });
    expect({ status: keyed.status, code: keyed.body.code }).toEqual({ status: 503, code: 'store_unavailable' });
    expect(keyed.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    // The key could not even be claimed: whatever trackId is shown must match the header.
    expect(keyed.headers.get('x-track-id')).toBe(keyed.body.trackId ?? null);

    const lookup = await record(done);
    expect({ status: lookup.status, code: lookup.body.code }).toEqual({ status: 503, code: 'store_unavailable' });
    expect(lookup.headers.get('content-type')).toMatch(/^application\/problem\+json/);

    expect(sim.inquiryCalls).toBe(calls);

    await redis.restart();
    await untilStoreReady(gateway);
    expect((await call(gateway.url, 'GET', '/health/ready')).status).toBe(200);
    const after = expectSucceeded(await shahkar());
    await expectRecord(after, {
      status: 'succeeded',
      upstream: { code: 0, message: 'Operation completed successfully' },
      data: { isMatch: true },
    });
  });
});

describe('what the responses of this file never carry', () => {
  it('no upstream password, username, access or refresh token in any body or header', () => {
    expect(exchanges.length).toBeGreaterThan(40);
    expect(issuedTokens.length).toBeGreaterThanOrEqual(6);
    const secrets = [UPSTREAM_PASSWORD, 'sandbox-user', ...issuedTokens];
    expectNoSecretInExchanges(exchanges, secrets);
  });

  it('every upstream charge was handed to a caller as its trackId', () => {
    expect(sim.chargesByTrackId.size).toBeGreaterThan(10);
    expectEveryChargeTraceable(sim, exchanges);
  });
});
